"""Run an integration page's Python blocks in an environment built from its extra alone.

``make docs-extras`` builds one virtual environment per extra (``pip install -e ".[EXTRA]"``
with the pinned constraints, nothing else: no development extra, no pytest) and runs, inside
it, ``python -m tests.docs_in_extra EXTRA``. Each block of the extra's page
(``docs/integrations/<page>.md``) runs as a script in a fresh directory, as a user who
installed ``convstore[EXTRA]`` would paste it; where the page says what a block prints, it
must print exactly that. A block that imports something the extra does not install fails
with Python's own ``ModuleNotFoundError``.

Standard library only (this environment has no pytest). ``tests/integrations/test_docs_blocks.py``
runs the same blocks twice, under pytest, in the framework environments.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations"
PAGES = {  # extra (``base``: the package alone) -> its page
    "base": "ai-sdk.md",
    "google-adk": "google-adk.md",
    "langchain": "langchain.md",
    "langgraph": "langgraph.md",
    "openai-agents": "openai-agents.md",
    "pydantic-ai": "pydantic-ai.md",
}
_BLOCK = re.compile(r"```python\n(.*?)```(?:\n\nIt prints:\n\n```\n(.*?)```)?", re.DOTALL)


def blocks(page: str) -> list[tuple[str, str | None]]:
    """The page's Python blocks, each with the output the page promises (or ``None``)."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def run(extra: str) -> list[str]:
    """Run every block of ``extra``'s page; the failures, described (empty: all ran)."""
    page = PAGES[extra]
    failures = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONVSTORE_", "OPENAI_"))}
    for index, (code, promised) in enumerate(blocks(page)):
        with tempfile.TemporaryDirectory(prefix=f"docs-{extra}-") as workdir:
            done = subprocess.run(
                [sys.executable, "-c", code],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
        where = f"{page} block {index}"
        if done.returncode != 0:
            failures.append(f"{where} failed:\n{done.stderr.strip()}")
        elif promised is not None and done.stdout != promised:
            failures.append(f"{where} printed:\n{done.stdout}\nthe page promises:\n{promised}")
    return failures


def main(argv: list[str]) -> int:
    """``python -m tests.docs_in_extra EXTRA...``: exit 1 if any block failed."""
    unknown = [extra for extra in argv if extra not in PAGES]
    if not argv or unknown:
        print(f"usage: python -m tests.docs_in_extra {{{','.join(PAGES)}}}...", file=sys.stderr)
        return 2
    failed = False
    for extra in argv:
        failures = run(extra)
        count = len(blocks(PAGES[extra]))
        print(
            f"convstore[{extra}]: {count - len(failures)} of {count} blocks of {PAGES[extra]} ran"
        )
        for failure in failures:
            print(failure, file=sys.stderr)
        failed = failed or bool(failures)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
