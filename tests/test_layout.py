"""The package's shape, judged by responsibility: no cycles, privacy kept, SQL in one place.

- Imports are read from the source (``ast``), every one of them: at module level, inside
  functions (a lazy import is still a dependency) and under ``TYPE_CHECKING``. An edge goes to
  the module named, or to the submodule a ``from package import name`` names. Importing a
  submodule also runs its package's ``__init__``; that implicit edge is not counted, so a
  package may re-export its modules.
- No import cycles between modules.
- No private cross-imports: a private name (``_x``) or a private module (``pkg._x``) is
  imported only from inside its package.
- Privacy is one convention, the underscore: ``pkg/_x.py`` or ``_name`` is private to ``pkg``.
  In ``store``, ``db`` and ``integrations`` the converse holds too: a module no other package
  imports is private (``_x``), so a plain name there promises a user outside its package.
- Every package's ``__init__`` docstring names each of its modules and subpackages (the map a
  newcomer reads), so no module is left unexplained, and its list names no module that is gone.
- ``docs/architecture.md``'s layout tree names every package, and every module of ``store``,
  ``db`` and ``integrations``, that exists, and nothing that does not.
- A framework is imported only inside its integration's package (``integrations/<name>/``),
  lazily or not; the integrations' shared core (``integrations/_core``) and every other package
  import none.
- No SQL outside ``convstore.db``: no SQL statement text and no SQLAlchemy statement
  construct (``select``, ``insert``, ``update``, ``delete``, ``text``, ...) in any other
  package; every statement lives in ``convstore.db.statements`` (by table) or the database
  modules beside it.
- Length is not judged: a statement table or a facade may be long when it is one thing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "convstore"


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


# ---------------------------------------------------------------------------------------------
# privacy


def _targets(name: str, path: Path, tree: ast.Module, modules: dict[str, Path]):  # type: ignore[no-untyped-def]
    """(imported module, imported name or None) of every import in ``tree``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    yield submodule, None
                else:
                    yield target, alias.name


def _inside(name: str, module: str, modules: dict[str, Path]) -> bool:
    """Whether ``name`` is in the package ``module`` belongs to (package-private names)."""
    is_package = modules.get(module, Path()).name == "__init__.py"
    home = module if is_package else module.rpartition(".")[0]
    return name == home or name.startswith(home + ".")


def _private_reaches(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """What ``name`` imports that is private to another module or package."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for module, imported in _targets(name, path, tree, modules):
        if not module.startswith("convstore"):
            continue
        parts = module.split(".")
        for depth, part in enumerate(parts):
            if part.startswith("_") and part != "__main__":
                home = ".".join(parts[:depth])  # the package that owns the private module
                if name != home and not name.startswith(home + "."):
                    found.add(module)
                break
        private_name = imported is not None and imported.startswith("_")
        if private_name and not imported.startswith("__") and not _inside(name, module, modules):
            found.add(f"{module}.{imported}")
    return found


# Private modules reached from outside their package, each with its reason: what is left of the
# underscore convention to settle (each wants a public home in its package, or a move beside its
# one user). The test fails on an entry that no longer matches.
KNOWN_PRIVATE_REACHES: dict[str, set[str]] = {
    # The one wording of a pydantic validation error, shared by every checker of input.
    "convstore.cli.commands": {"convstore.model._base"},
    "convstore.cli.transfer": {"convstore.model._base"},
    "convstore.store.transfer._archive_checks": {"convstore.model._base"},
    "convstore.store._arguments": {"convstore.model._base"},
    # Trusted construction (no validation) of rows the store wrote itself.
    "convstore.db.mapping": {"convstore.model._base"},
    "convstore.store.append.writes": {"convstore.model._base"},
    # ``search``'s read-only path (no store) reads the recorded blob location as the store
    # resolves it, for ``--blobs``' notice.
    "convstore.cli.search": {"convstore.store._settings"},
    # The commands that start the servers reach their private runners.
    "convstore.cli.mcp_command": {"convstore.mcp._http", "convstore.mcp._stdio"},
    "convstore.cli.serve": {"convstore.web._guard", "convstore.web._server"},
    # The public parsing facade over the providers' private wire readers.
    "convstore.parsing": {"convstore.providers._parsing", "convstore.providers._wire_tools"},
}


def test_no_private_cross_imports() -> None:
    modules = _modules()
    reaches = {name: _private_reaches(name, path, modules) for name, path in modules.items()}
    reaches = {name: found for name, found in reaches.items() if found}
    unexpected = {
        name: found - KNOWN_PRIVATE_REACHES.get(name, set()) for name, found in reaches.items()
    }
    assert {n: f for n, f in unexpected.items() if f} == {}, "private to another package"
    stale = {
        name: known - reaches.get(name, set())
        for name, known in KNOWN_PRIVATE_REACHES.items()
        if known - reaches.get(name, set())
    }
    assert stale == {}, "no longer reached: remove from KNOWN_PRIVATE_REACHES"


def test_the_privacy_check_finds_them(tmp_path: Path) -> None:
    fake = {"convstore.a._x": tmp_path, "convstore.a.y": tmp_path, "convstore.b": tmp_path}
    fake["convstore.a"] = tmp_path / "__init__.py"
    source = tmp_path / "b.py"
    source.write_text("from convstore.a._x import f\nfrom convstore.a.y import _g\n")
    assert _private_reaches("convstore.b", source, fake) == {"convstore.a._x", "convstore.a.y._g"}
    inside = tmp_path / "z.py"
    inside.write_text("from convstore.a._x import f\nfrom convstore.a.y import _g\n")
    assert _private_reaches("convstore.a.z", inside, fake) == set()


# ---------------------------------------------------------------------------------------------
# package maps


def _unmapped(init: Path) -> list[str]:
    """The modules and subpackages of ``init``'s package that its docstring does not name."""
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    folder = init.parent
    names = [p.stem for p in folder.glob("*.py") if p.name not in {"__init__.py", "__main__.py"}]
    names += [p.name for p in folder.iterdir() if (p / "__init__.py").is_file()]
    return sorted(n for n in names if not re.search(rf"`(?:[\w.]*\.)?{n}`", doc))


def test_every_package_names_its_modules() -> None:
    unmapped = {
        _module_name(init): missing
        for init in sorted(PACKAGE.rglob("__init__.py"))
        if (missing := _unmapped(init))
    }
    assert unmapped == {}, "name each module in its package's docstring"


# A list entry: a bullet starting with one or more ``module`` (or `convstore.pkg.module`) names.
_ENTRY = re.compile(r"^\s*- ((?:``\w+``|`[\w.]+`)(?:, (?:``\w+``|`[\w.]+`))*):", re.MULTILINE)


def _listed_but_missing(init: Path) -> list[str]:
    """The modules ``init``'s docstring lists (bullets naming them) that its package lacks."""
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    folder = init.parent
    missing = []
    for entry in _ENTRY.finditer(doc):
        for name in re.findall(r"`+([\w.]+)`+", entry.group(1)):
            leaf = name.rpartition(".")[2]
            if not ((folder / f"{leaf}.py").is_file() or (folder / leaf / "__init__.py").is_file()):
                missing.append(name)
    return missing


def test_no_package_lists_a_module_it_lacks() -> None:
    stale = {
        _module_name(init): missing
        for init in sorted(PACKAGE.rglob("__init__.py"))
        if (missing := _listed_but_missing(init))
    }
    assert stale == {}, "remove the modules that are gone from the package's docstring"


def test_the_package_map_checks_find_them(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text('"""P.\n\n- ``kept``: here.\n- ``gone``: moved.\n"""\n')
    (tmp_path / "kept.py").write_text("")
    (tmp_path / "new.py").write_text("")
    assert _unmapped(tmp_path / "__init__.py") == ["new"]
    assert _listed_but_missing(tmp_path / "__init__.py") == ["gone"]


# ---------------------------------------------------------------------------------------------
# the converse of privacy in store, db and integrations: a module only its package imports is
# private

SCOPED = ("convstore.store.", "convstore.db.", "convstore.integrations.")

# Plain modules nobody outside their package imports, each with its reason (none left). The test
# fails on an entry that no longer matches.
KNOWN_PLAIN_INSIDERS: dict[str, str] = {}


def _outside_importers(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module of ``modules`` and who imports it: convstore's modules and the migrations."""
    importers: dict[str, set[str]] = {name: set() for name in modules}
    sources = dict(modules)
    for path in sorted((SRC.parent / "migrations").rglob("*.py")):
        sources[f"migrations.{path.stem}"] = path
    for name, path in sources.items():
        for target in _imports(name, path, modules):
            importers[target].add(name)
        # Lazy attribute maps and other module names held as strings.
        for target in re.findall(r"[\"'](convstore(?:\.\w+)+)[\"']", path.read_text()):
            if target in modules and target != name:
                importers[target].add(name)
    return importers


def _plain_insiders(modules: dict[str, Path], importers: dict[str, set[str]]) -> set[str]:
    found = set()
    for name, path in modules.items():
        package, _, leaf = name.rpartition(".")
        in_scope = name.startswith(SCOPED)
        if not in_scope or path.name == "__init__.py" or leaf.startswith("_"):
            continue
        if all(i == package or i.startswith(package + ".") for i in importers[name]):
            found.add(name)
    return found


def test_modules_only_their_package_imports_are_private() -> None:
    modules = _modules()
    insiders = _plain_insiders(modules, _outside_importers(modules))
    assert insiders - KNOWN_PLAIN_INSIDERS.keys() == set(), "only its package uses it: name it _x"
    assert KNOWN_PLAIN_INSIDERS.keys() - insiders == set(), "stale: remove from the list"


def test_the_insider_check_finds_them(tmp_path: Path) -> None:
    fake = {name: tmp_path / f"{name}.py" for name in ("convstore.store.a.x", "convstore.store.b")}
    importers = {"convstore.store.a.x": {"convstore.store.a.y"}, "convstore.store.b": set()}
    assert _plain_insiders(fake, importers) == {"convstore.store.a.x", "convstore.store.b"}
    importers["convstore.store.a.x"].add("convstore.cli.main")
    importers["convstore.store.b"].add("convstore.sync")
    assert _plain_insiders(fake, importers) == set()


# ---------------------------------------------------------------------------------------------
# docs/architecture.md's layout tree

ARCHITECTURE = SRC.parent / "docs" / "architecture.md"


def _tree_paths(markdown: str) -> set[str]:
    """The paths the layout tree (the code block that starts ``convstore/``) names."""
    block = re.search(r"^```\nconvstore/\n(.*?)^```", markdown, re.MULTILINE | re.DOTALL)
    assert block, "docs/architecture.md has no layout tree (a code block starting convstore/)"
    stack: list[tuple[int, str]] = []
    found = set()
    for line in block.group(1).splitlines():
        indent = len(line) - len(line.lstrip())
        entry = line.split()[0]
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(part for _, part in stack) + entry
        found.add(path)
        if entry.endswith("/"):
            stack.append((indent, entry))
    return found


def _actual_paths() -> set[str]:
    packages = {
        init.parent.relative_to(PACKAGE).as_posix() + "/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    }
    detailed = ("store/", "db/", "integrations/")
    modules = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and path.relative_to(PACKAGE).as_posix().startswith(detailed)
    }
    return packages | modules


def test_the_map_names_every_package_and_module() -> None:
    named, actual = _tree_paths(ARCHITECTURE.read_text()), _actual_paths()
    assert actual - named == set(), "add these to docs/architecture.md's layout tree"
    assert named - actual == set(), "gone: remove these from docs/architecture.md's layout tree"


def test_the_tree_reader_reads_nesting() -> None:
    tree = "```\nconvstore/\n  a/    x\n    b.py  y\n    c/\n      d.py\n  e.py\n```\n"
    assert _tree_paths(tree) == {"a/", "a/b.py", "a/c/", "a/c/d.py", "e.py"}


# ---------------------------------------------------------------------------------------------
# each framework inside its integration

# A framework's top-level import name -> the integration packages that may import it.
FRAMEWORKS: dict[str, set[str]] = {
    "agents": {"convstore.integrations.openai_agents"},
    "pydantic_ai": {"convstore.integrations.pydantic_ai"},
    "google": {"convstore.integrations.google_adk"},  # google.adk and google.genai
    "langgraph": {"convstore.integrations.langgraph"},
    # LangGraph's message channels hold LangChain messages.
    "langchain_core": {"convstore.integrations.langchain", "convstore.integrations.langgraph"},
    "langchain": {"convstore.integrations.langchain"},
    "langchain_community": {"convstore.integrations.langchain"},
}


def _framework_imports(name: str, path: Path) -> set[str]:
    """The frameworks ``path`` imports, anywhere in it (lazily, under ``TYPE_CHECKING``, ...)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found & FRAMEWORKS.keys()


def _misplaced_frameworks(modules: dict[str, Path]) -> dict[str, set[str]]:
    misplaced: dict[str, set[str]] = {}
    for name, path in modules.items():
        for framework in _framework_imports(name, path):
            homes = FRAMEWORKS[framework]
            if not any(name == home or name.startswith(home + ".") for home in homes):
                misplaced.setdefault(name, set()).add(framework)
    return misplaced


def test_each_framework_is_imported_only_by_its_integration() -> None:
    modules = _modules()
    users = {name for name, path in modules.items() if _framework_imports(name, path)}
    assert "convstore.integrations.langgraph" in users, "the walk found no framework import"
    assert _misplaced_frameworks(modules) == {}, "a framework imported outside its integration"


def test_the_framework_check_finds_them(tmp_path: Path) -> None:
    core = tmp_path / "core.py"
    core.write_text("def f():\n    import agents\n")
    adk = tmp_path / "adk.py"
    adk.write_text("from google.genai import types\nfrom langchain_core.messages import M\n")
    graph = tmp_path / "graph.py"
    graph.write_text("from langchain_core.messages import M\nfrom . import _x\n")
    fake = {
        "convstore.integrations._core.native_blobs": core,
        "convstore.integrations.google_adk._parts": adk,
        "convstore.integrations.langgraph._thread": graph,
    }
    assert _misplaced_frameworks(fake) == {
        "convstore.integrations._core.native_blobs": {"agents"},
        "convstore.integrations.google_adk._parts": {"langchain_core"},
    }


# ---------------------------------------------------------------------------------------------
# SQL lives in convstore.db

_SQL_TEXT = re.compile(
    r"^\s*(SELECT\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|"
    r"WITH\s+(RECURSIVE\s+)?\w+\s*(\([^)]*\)\s*)?AS\s*\()"
)
_CONSTRUCTS = frozenset({
    "select", "insert", "update", "delete", "text", "union", "union_all", "exists", "bindparam",
    "literal_column", "table", "column", "values", "lateral", "and_", "or_", "func", "case",
    "tuple_",
})  # fmt: skip


def _sql_outside_db(path: Path) -> list[str]:
    """SQL statement text and SQLAlchemy statement constructs in ``path``, by line."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    sqlalchemy_aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "sqlalchemy":
                    sqlalchemy_aliases.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
            found += [
                f"{node.lineno}: imports {a.name}" for a in node.names if a.name in _CONSTRUCTS
            ]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _SQL_TEXT.match(node.value)
        ):
            found.append(f"{node.lineno}: SQL text {node.value.strip()[:40]!r}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in sqlalchemy_aliases
            and node.attr in _CONSTRUCTS
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_sql_outside_db() -> None:
    outside = {
        path.relative_to(SRC).as_posix(): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith("db/")
        and (found := _sql_outside_db(path))
    }
    assert outside == {}, "SQL belongs in convstore.db.statements"


@pytest.mark.parametrize(
    "source",
    [
        'q = "SELECT id FROM conversations"',
        'q = """\n  WITH RECURSIVE walk(seq) AS (SELECT 1)"""',
        "from sqlalchemy import select",
        "import sqlalchemy as sa\nq = sa.update(t)",
        'tx.execute("DELETE FROM messages WHERE 1")',
        "q = 'INSERT INTO t VALUES (1)'",
    ],
)
def test_the_sql_check_finds_it(tmp_path: Path, source: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source + "\n")
    assert _sql_outside_db(path)


@pytest.mark.parametrize(
    "source",
    [
        'message = "Select a conversation to continue"',
        "from sqlalchemy import Select, Insert",
        'note = "update the title"',
        "from sqlalchemy.engine import make_url",
    ],
)
def test_the_sql_check_leaves_prose_alone(tmp_path: Path, source: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source + "\n")
    assert _sql_outside_db(path) == []
