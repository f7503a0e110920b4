"""The command line and ``import convstore`` load only what they use.

- ``convstore --help`` (and a usage error) imports no SQLAlchemy, pydantic, asyncio or
  provider module: only the parser (`convstore.cli.parser`) and the error classes.
- ``import convstore`` loads the error classes (and `convstore._lazy`) only; every other
  public name loads its module on first use and is the object its module defines.
- The names the parser spells out (targets, formats, the default URL) are the library's.
- Every command's handler is an async function where the command table says it is.
- ``search`` on an existing, current SQLite file with nothing pending reads it without the
  store: no SQLAlchemy, pydantic or asyncio. ``list`` opens the store and reads it without
  Alembic, SQLAlchemy's ORM or asyncio extension, the pydantic models, the renderers and
  providers, the importers or the append pipeline; ``show`` builds models but renders nothing.

Timing (the ratio against ``python -c pass``) is measured by ``bench/cli_startup.py``.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import get_args

import pytest

import convstore
from convstore.cli.parser import (
    COMMANDS,
    DEFAULT_URL,
    EXPORT_FORMATS,
    PAYLOAD_FORMATS,
    REASONING_POLICIES,
    RENDER_TARGETS,
    load_handler,
)

HEAVY = ("sqlalchemy", "pydantic", "pydantic_core", "asyncio", "alembic", "aiosqlite", "fsspec")


def _modules_after(code: str) -> list[str]:
    """The modules loaded by ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def _heavy(modules: list[str]) -> list[str]:
    return [
        m
        for m in modules
        if m.split(".")[0] in HEAVY
        or m.startswith(("convstore.providers", "convstore.store", "convstore.db"))
    ]


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["search", "--help"], ["import", "--help"], ["serve", "--port", "99999"]],
    ids=["help", "search-help", "import-help", "usage-error"],
)
def test_help_and_usage_errors_import_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import contextlib, io\n"
        "from convstore.cli import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass"
    )
    loaded = _modules_after(code)
    assert "convstore.cli.parser" in loaded
    assert _heavy(loaded) == []


def test_import_convstore_loads_the_errors_only() -> None:
    loaded = _modules_after("import convstore")
    assert [m for m in loaded if m.startswith("convstore")] == [
        "convstore",
        "convstore._lazy",
        "convstore.errors",
    ]
    assert _heavy(loaded) == []


# What a reading command must not load: Alembic (and Mako, Pygments behind it), SQLAlchemy's ORM
# and asyncio extension (PostgreSQL only), the renderers and providers, the importers and the
# append pipeline.
NOT_FOR_READING = (
    "alembic",
    "mako",
    "pygments",
    "sqlalchemy.orm",
    "sqlalchemy.ext.asyncio",
    "convstore.rendering",
    "convstore.providers",
    "convstore.transcript",
    "convstore.imports",
    "convstore.store.append.appending",
    "convstore.store.append.writes",
    "convstore.store.append._batch",
    "convstore.store.append._lean_append",
    "convstore.store.append._one_statement",
    "convstore.store.append._planning",
    "convstore.db.migrations",
    "convstore.db.postgres.backend",
)
# ...and, for search and list, no pydantic model either (pydantic_core's JSON parser is fine).
NO_MODELS = ("pydantic.main", "convstore.model.messages", "convstore.model.content")
# ...and search on a current SQLite file: not even SQLAlchemy, pydantic, asyncio or the store.
QUICK_SEARCH_NEVER = (
    "sqlalchemy",
    "pydantic",
    "pydantic_core",
    "asyncio",
    "aiosqlite",
    "convstore.store.conversation_store",
)


@pytest.fixture(scope="module")
def demo_database(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A current SQLite database holding the demo conversation, made by another process."""
    where = tmp_path_factory.mktemp("lazy-cli")
    url, blobs = f"sqlite+aiosqlite:///{where / 'demo.db'}", str(where / "blobs")
    code = f"from convstore.cli import main\nmain(['demo', '--url', {url!r}, '--blobs', {blobs!r}])"
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    return url, blobs


def _loaded_by(argv: list[str]) -> tuple[list[str], str]:
    code = (
        "import contextlib, io\n"
        "from convstore.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    assert main({argv!r}) == 0\n"
        "print(json.dumps(out.getvalue()))"
    )
    probe = f"import json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{probe}"], capture_output=True, text=True, check=True
    )
    *_, printed, modules = done.stdout.splitlines()
    return json.loads(modules), json.loads(printed)


def _matching(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["search", "weather"], "get_⟦weather⟧"),
        (["list"], "demo-trip-to-lisbon"),
        (["show", "demo-trip-to-lisbon"], "#2 user"),
    ],
    ids=["search", "list", "show"],
)
def test_reading_commands_load_only_what_they_use(
    demo_database: tuple[str, str], command: list[str], says: str
) -> None:
    url, blobs = demo_database
    modules, printed = _loaded_by([*command, "--url", url, "--blobs", blobs])
    assert says in printed  # the command did its work
    assert _matching(modules, NOT_FOR_READING) == []
    if command[0] != "show":
        assert _matching(modules, NO_MODELS) == []
    if command[0] == "search":  # read-only, through sqlite3 (tests/cli/test_cli_quick_search.py)
        assert not _matching(modules, QUICK_SEARCH_NEVER)
    else:
        assert "convstore.store.conversation_store" in modules  # through the store's public API


def test_a_public_name_loads_its_module_on_first_use() -> None:
    loaded = _modules_after("import convstore\nconvstore.TextPart")
    assert "convstore.model" in loaded
    assert "sqlalchemy" not in loaded  # the model does not need the database layer


def test_every_public_name_is_its_modules_object() -> None:
    lazy = convstore._LAZY
    from convstore import errors

    eager = {name for name in convstore.__all__ if hasattr(errors, name)}
    assert set(lazy) | eager | {"__version__"} == set(convstore.__all__)
    assert not set(lazy) & eager
    for name, module in lazy.items():
        assert getattr(convstore, name) is getattr(sys.modules[module], name), name
    assert set(dir(convstore)) >= set(convstore.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        convstore.nothing_here  # noqa: B018


def test_the_parser_names_are_the_librarys() -> None:
    from convstore.db import DEFAULT_URL as LIBRARY_DEFAULT_URL
    from convstore.imports import FORMATS
    from convstore.providers import SOURCES
    from convstore.transcript.reasoning import ReasoningPolicy

    assert DEFAULT_URL == LIBRARY_DEFAULT_URL
    assert RENDER_TARGETS == convstore.TARGETS
    assert set(PAYLOAD_FORMATS) == {*SOURCES, "mistral", "kimi"}
    assert set(EXPORT_FORMATS) == set(FORMATS)
    assert get_args(ReasoningPolicy) == REASONING_POLICIES


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_handler_is_an_async_function(command: object) -> None:
    from convstore.cli.parser import Command

    assert isinstance(command, Command)
    assert inspect.iscoroutinefunction(load_handler(command))
