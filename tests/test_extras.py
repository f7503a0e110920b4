"""Each framework extra installs what its documentation page imports.

``docs/integrations/<page>.md``'s Python blocks import the framework's modules; the extra the
page names must bring the distributions those modules come from (``pip install
"convstore[langgraph]"`` then runs the page's graph, which imports ``langgraph.graph``).
The framework environments (``make test-langgraph`` and the others) run each page's blocks, and
``make docs-extras`` runs them again in environments built from each extra alone
(``tests/docs_in_extra.py``), where a missing distribution is a ``ModuleNotFoundError``.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# page -> (extra, {top-level module the page imports: distribution that provides it})
PAGES = {
    "langgraph.md": ("langgraph", {"langgraph": "langgraph", "langchain_core": "langchain-core"}),
    "langchain.md": ("langchain", {"langchain_core": "langchain-core"}),
    "openai-agents.md": ("openai-agents", {"agents": "openai-agents"}),
    "pydantic-ai.md": ("pydantic-ai", {"pydantic_ai": "pydantic-ai-slim"}),
    "google-adk.md": ("google-adk", {"google": "google-adk"}),
}
OURS = {"convstore"}


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_extra_installs_what_the_page_imports(page: str) -> None:
    extra, providers = PAGES[page]
    text = (ROOT / "docs" / "integrations" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    imported = {
        m.group(1).split(".")[0]
        for block in blocks
        for m in re.finditer(r"^\s*(?:from|import) ([a-zA-Z_][\w.]*)", block, re.MULTILINE)
    }
    extras = _extras()
    assert extra in extras, f"{page} names the extra {extra!r}, which pyproject lacks"
    assert f"convstore[{extra}]" in text, f"{page} does not say which extra to install"
    needed = imported - OURS - set(sys.stdlib_module_names)
    assert needed <= set(providers), f"{page} imports {sorted(needed - set(providers))}"
    missing = {providers[m] for m in needed} - _names(extras[extra])
    assert not missing, f"convstore[{extra}] does not install {sorted(missing)} ({page})"


def test_make_runs_every_page_in_an_environment_of_its_extra_alone() -> None:
    from tests.docs_in_extra import DOCS, PAGES

    makefile = (ROOT / "Makefile").read_text()
    listed = re.search(r"^DOCS_EXTRAS := (.+)$", makefile, re.MULTILINE)
    assert listed is not None
    assert sorted(listed.group(1).split()) == sorted(PAGES)
    assert sorted(PAGES.values()) == sorted(p.name for p in DOCS.glob("*.md"))
    extras = _extras()
    for extra in PAGES:
        assert extra == "base" or extra in extras, extra
        pins = re.search(rf"^EXTRA_PINS_{re.escape(extra)} := (\S+)$", makefile, re.MULTILINE)
        assert pins is not None, extra
        assert pins.group(1).startswith("$(") or (ROOT / pins.group(1)).is_file(), extra
    # The recipe installs the extra and nothing else: no development extra, no test runner.
    recipe = makefile[makefile.index(".venv-extra-%/.installed:") :].split("\n\n", 1)[0]
    assert '-e "$(if $(filter base,$*),.,.[$*])"' in recipe
    assert "dev" not in recipe and "pytest" not in recipe
