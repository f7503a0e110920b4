"""openai-agents' own session suites, from the sdist of the installed release, on convstore.

Runs in the ``.venv-agents`` environment (``make test`` builds it): the test files
``tests/memory/test_session.py``, ``tests/memory/test_session_limit.py`` and
``tests/test_hitl_session_scenario.py`` of the ``openai-agents`` sdist, downloaded with pip and
run unmodified in a subprocess with the ``convstore_swap`` plugin, which swaps the SDK's session
classes for ConvstoreSession and deselects the tests of SQLiteSession internals (listed in
``openai_agents_contract/convstore_swap.py`` with their reasons).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="openai-agents runs in .venv-agents (make test)")

HERE = Path(__file__).parent
SRC = HERE.parents[1] / "src"
SUITES = [
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/test_hitl_session_scenario.py",
]


def sdist_tree(version: str) -> Path:
    """The unpacked sdist of openai-agents ``version`` (downloaded once per machine)."""
    cache = Path(os.environ.get("CONVSTORE_SDIST_CACHE", tempfile.gettempdir()))
    root = cache / f"convstore-openai-agents-{version}"
    tree = root / f"openai_agents-{version}"
    if (tree / "tests" / "memory" / "test_session.py").is_file():
        return tree
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--no-binary", ":all:", f"openai-agents=={version}", "--dest", str(root)],
        check=True,
        timeout=300,
    )  # fmt: skip
    (archive,) = root.glob("openai_agents-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return tree


@pytest.mark.slow
# The SDK's suites run in a subprocess bounded at 900 s; the suite-wide 300 s must not cut it
# first when the main suite shares the cores (`make test` runs both at once).
@pytest.mark.timeout(960)
def test_openai_agents_session_suites_pass_against_convstore() -> None:
    tree = sdist_tree(importlib.metadata.version("openai-agents"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "openai_agents_contract"), str(SRC), "."]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "convstore_swap",
         "-o", "addopts=", *SUITES],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    summary = re.search(r"(\d+) passed", output)
    assert summary is not None and int(summary.group(1)) >= 50, output[-3000:]
    assert " failed" not in output
    built = dict(re.findall(r"^(\w+OnConvstore): (\d+)$", output, re.MULTILINE))
    assert int(built.get("SQLiteSessionOnConvstore", 0)) >= 30, output[-3000:]
    assert int(built.get("ListSessionOnConvstore", 0)) >= 2, output[-3000:]
    print(output[-2500:])
