"""Helpers for the pydantic-ai and google-adk integration tests.

Each framework is an optional extra, installed in its own virtual environment by the Makefile
(``.venv-pydantic-ai``, ``.venv-adk``), which sets ``CONVSTORE_REQUIRE_FRAMEWORKS=1`` there.
Elsewhere (the shared dev environment, which cannot hold the frameworks' pins) a test module
whose framework is missing is skipped; where the Makefile runs it, a missing framework fails.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


@pytest.fixture
def blobs_url() -> str:  # imported by the test modules: overrides the suite's fixture there
    """One in-memory blob location for every integration test of the session.

    The PostgreSQL database is shared by the session's tests, and the store trusts the
    database's record of which blobs it holds; the same image appended by two tests must find
    its bytes where the first one put them.
    """
    return "memory://convstore-integrations"


def require(module: str) -> ModuleType:
    """Import ``module``; skip the calling test module when it is absent, unless required."""
    if os.environ.get("CONVSTORE_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def sqlite_file_bytes(db_url: str) -> bytes:
    """Everything SQLite holds on disk for ``db_url``: the database file and its WAL."""
    from pathlib import Path

    path = Path(db_url.split("///", 1)[1])
    files = [path, path.with_name(path.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def doc_example(name: str) -> dict[str, object]:
    """Run the ``python`` block of ``docs/integrations/<name>.md`` whose ``main`` takes a directory.

    Returns the module namespace the block ran in, so a test can call its ``main``.
    """
    import re
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "integrations" / f"{name}.md").read_text()
    blocks = [
        b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "def main(directory" in b
    ]
    assert len(blocks) == 1, f"one runnable example expected in {name}.md"
    namespace: dict[str, object] = {"__name__": f"docs_{name.replace('-', '_')}"}
    exec(compile(blocks[0], f"docs/integrations/{name}.md", "exec"), namespace)
    return namespace


def run_writer(script: str, *args: str) -> int:
    """Run a writer script in a process of its own; its exit code (0, or -SIGKILL: it killed
    itself where its test asked). Any other ending fails with the writer's stderr."""
    import signal
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    if result.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(result.stderr)
    return result.returncode
