"""The package's shape: no import cycles between modules, and small modules.

- Imports are read from the source (``ast``), every one of them: at module level, inside
  functions (a lazy import is still a dependency) and under ``TYPE_CHECKING``. An edge goes to
  the module named, or to the submodule a ``from package import name`` names. Importing a
  submodule also runs its package's ``__init__``; that implicit edge is not counted, so a
  package may re-export its modules.
- No module is longer than `MAX_LINES`, except those in `LONGER`, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "convstore"
MAX_LINES = 500

# Modules allowed past MAX_LINES, and why. Remove an entry once its module is split (the test
# fails on an entry that is no longer needed).
LONGER: dict[str, str] = {
    # Data: one Core statement per operation the store runs, built from the schema per dialect.
    "convstore/db/statements.py": "data table",
    # Data: the command table, every command's options in argparse alone (so --help stays cheap).
    "convstore/cli/parser.py": "data table",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {module for module in found if module in modules and module != name}


def _tangles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module: each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Cycles tolerated for now, each with its reason (none: store/ has none left). The test fails
# on an entry that no longer matches.
KNOWN_TANGLES: set[frozenset[str]] = set()


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["convstore.store.conversation_store"], "the walk found no imports at all"
    tangles = set(_tangles(graph))
    assert tangles - KNOWN_TANGLES == set(), "modules importing each other"
    assert KNOWN_TANGLES - tangles == set(), "cycles gone: remove them from KNOWN_TANGLES"


def test_the_cycle_finder_finds_them() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": set()}
    assert sorted(map(sorted, _tangles(graph))) == [["a", "b", "c"], ["d", "e"]]
    assert _tangles({"a": {"b"}, "b": set()}) == []


def test_modules_stay_small() -> None:
    lengths = {
        path.relative_to(SRC).as_posix(): len(path.read_text().splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES and name not in LONGER}
    assert not too_long, f"split by responsibility (or list with a reason): {too_long}"
    stale = {name for name in LONGER if lengths.get(name, 0) <= MAX_LINES}
    assert not stale, f"no longer past {MAX_LINES} lines: remove from LONGER: {sorted(stale)}"
