"""What some scenarios need around them: a PostgreSQL cluster, convstore v1's source, no network.

Invariants: each fixture is a context manager that cleans up after itself; a fixture that
cannot be provided yields the reason instead (the caller reports it, never silently skips).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[2]

V1_COMMIT: Final = "d7b1e98"
"""convstore before the schema-v2 layout change (the ``convstore_v1`` peer)."""

OFFLINE_ENVIRONMENT: Final = {
    "OTEL_SDK_DISABLED": "true",
    "OTEL_TRACES_EXPORTER": "none",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY": "",
}
"""Set before any store is imported, in every benchmark process."""


@contextmanager
def postgres_cluster(wanted: bool = True) -> Iterator[tuple[dict[str, str], str]]:
    """A throwaway cluster like the tests' (``BENCH_POSTGRES_DSN`` for the children), or the
    reason there is none."""
    if not wanted:
        yield {}, "not selected"
        return
    from tests.support.postgres import find_bindir, running_cluster

    if find_bindir() is None:
        yield {}, "PostgreSQL binaries (initdb, pg_ctl) not found"
        return
    with running_cluster() as cluster:
        yield (
            {"BENCH_POSTGRES_DSN": f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}"},
            "",
        )


def v1_environment(v1_src: Path | None) -> dict[str, str]:
    """What puts the v1 code first on the import path of a subprocess."""
    if v1_src is None:
        return {}
    path = os.pathsep.join(p for p in (str(v1_src), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "BENCH_V1_SRC": str(v1_src)}


@contextmanager
def v1_source() -> Iterator[tuple[Path | None, str]]:
    """``git archive V1_COMMIT src migrations``, extracted: its ``src``, or why there is none."""
    with tempfile.TemporaryDirectory(prefix="bench-v1-") as tmp:
        try:
            archive = subprocess.run(
                ["git", "archive", "--format=tar", V1_COMMIT, "src", "migrations"],
                cwd=ROOT, capture_output=True, check=True, timeout=120,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            yield None, f"convstore v1 unavailable: {exc}"
            return
        target = Path(tmp) / "v1"
        target.mkdir()
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
        yield target / "src", ""
