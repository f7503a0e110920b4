"""Runs the example of an integration's doc page and returns what it printed."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs" / "integrations"


def example(page: str) -> tuple[str, str]:
    """The runnable example of ``docs/integrations/<page>`` and the output the page promises."""
    text = (DOCS / page).read_text(encoding="utf-8")
    block = r"```python\n(.*?)```(?:\n\nIt prints:\n\n```\n(.*?)```)?"
    found = [m.groups() for m in re.finditer(block, text, re.DOTALL) if m.group(2) is not None]
    assert len(found) == 1, f"{page}: one example that says what it prints expected"
    code, promised = found[0]
    return code, promised


def run_example(page: str, workdir: Path) -> tuple[str, str]:
    """(what the example printed, what the page says it prints), run inside ``workdir``."""
    code, promised = example(page)
    out = io.StringIO()
    before = Path.cwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOCS / page), "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(before)
    return out.getvalue(), promised
