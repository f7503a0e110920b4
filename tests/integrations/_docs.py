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
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    (code,) = [b for b in blocks if "asyncio.run(main())" in b or "__main__" in b]
    promised = re.search(r"It prints:\n\n```\n(.*?)```", text, re.DOTALL)
    assert promised is not None, f"{page} does not say what its example prints"
    return code, promised.group(1)


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
