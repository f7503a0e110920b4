"""Every Python block of docs/integrations/*.md runs as written, twice, in a fresh directory.

A block is a whole script: it imports and defines what it uses and works in the directory it
is run in (its SQLite file and blobs land there). It runs a second time in the same directory,
as an application runs again on its database, and must succeed again; where the page says what
a block prints, both runs print exactly that.

A block needing a framework runs in that framework's environment (the Makefile's
``test-pydantic-ai``, ``test-google-adk``, ``test-langgraph`` and ``pytest-agents`` select their
pages with ``-k``); elsewhere it is skipped, and where the Makefile requires the framework
(``CONVSTORE_REQUIRE_FRAMEWORKS=1``) a missing one fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations"
FRAMEWORK = {  # page → the module its blocks import (None: convstore alone)
    "ai-sdk.md": None,
    "google-adk.md": "google.adk",
    "langchain.md": "langchain_core",
    "langgraph.md": "langgraph",
    "openai-agents.md": "agents",
    "pydantic-ai.md": "pydantic_ai",
}
_BLOCK = re.compile(r"```python\n(.*?)```(?:\n\nIt prints:\n\n```\n(.*?)```)?", re.DOTALL)


def _blocks() -> list[tuple[str, int, str, str | None]]:
    found = []
    for page in sorted(FRAMEWORK):
        text = (DOCS / page).read_text(encoding="utf-8")
        for index, match in enumerate(_BLOCK.finditer(text)):
            found.append((page, index, match.group(1), match.group(2)))
    return found


BLOCKS = _blocks()


def test_every_page_is_covered() -> None:
    assert sorted(p.name for p in DOCS.glob("*.md")) == sorted(FRAMEWORK)
    assert {page for page, *_ in BLOCKS} == set(FRAMEWORK)


@pytest.mark.parametrize(
    ("page", "index", "code", "promised"),
    BLOCKS,
    ids=[f"{page[:-3].replace('-', '_')}-{index}" for page, index, *_ in BLOCKS],
)
def test_a_docs_block_runs_as_written_twice(
    page: str, index: int, code: str, promised: str | None, tmp_path: Path
) -> None:
    module = FRAMEWORK[page]
    if module is not None and os.environ.get("CONVSTORE_REQUIRE_FRAMEWORKS") != "1":
        pytest.importorskip(module, reason=f"{page} runs in its framework's environment")
    for run in ("first", "second"):
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"{page} block {index}, {run} run:\n{result.stderr}"
        if promised is not None:
            assert result.stdout == promised, f"{page} block {index}, {run} run"
