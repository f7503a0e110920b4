"""The Alembic migrations own the schema: one head, upgrade from empty, no drift, a clean
round trip, the CLI at the repository root, and a wheel that carries them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect
from sqlalchemy.ext.asyncio import create_async_engine

import convstore.db._revisions as revisions_module
import convstore.db.migrations as migrate_module
from convstore import ConversationStore, Message, SchemaError, SchemaOutOfDateError
from convstore.db import search_ddl
from convstore.db.migrations import (
    alembic_config,
    downgrade_connection,
    head_revision,
    migrations_directory,
    upgrade_connection,
)
from convstore.db.schema import exists_on, metadata

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"conversations", "messages", "blob_refs", "tool_calls", "attachments", "compactions"}


async def _run(url: str, fn: object) -> object:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(fn)  # type: ignore[arg-type]
    finally:
        await engine.dispose()


def _tables(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names())


def _drift(conn: Connection) -> list[object]:
    def include_object(obj: Any, _name: Any, _type: str, reflected: bool, _other: Any) -> bool:
        return reflected or exists_on(obj, conn.dialect.name)

    opts = {"include_name": search_ddl.include_name, "include_object": include_object}
    context = MigrationContext.configure(conn, opts=opts)
    return list(compare_metadata(context, metadata))


def test_single_head() -> None:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert heads == [head_revision()]
    assert migrations_directory() == ROOT / "migrations"


def test_the_quick_head_is_alembics_and_gives_up_on_what_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a current database compares its revision with this, without importing Alembic.
    assert revisions_module.quick_head() == head_revision()
    versions = tmp_path / "versions"
    versions.mkdir()
    (tmp_path / "env.py").write_text("")
    monkeypatch.setattr(revisions_module, "migrations_directory", lambda: tmp_path)
    linear = {"a.py": ('"1"', "None"), "b.py": ('"2"', '"1"'), "c.py": ("'3'", '"2"')}
    for name, (revision, down) in linear.items():
        (versions / name).write_text(
            f"revision: str = {revision}\ndown_revision: str | None = {down}\n"
        )
    revisions_module.quick_head.cache_clear()
    assert revisions_module.quick_head() == "3"
    # Two heads, a merge (a tuple of parents): Alembic decides.
    (versions / "d.py").write_text('revision = "4"\ndown_revision = "2"\n')
    revisions_module.quick_head.cache_clear()
    assert revisions_module.quick_head() is None
    (versions / "d.py").write_text('revision = "4"\ndown_revision = ("3", "2")\n')
    revisions_module.quick_head.cache_clear()
    assert revisions_module.quick_head() is None
    revisions_module.quick_head.cache_clear()


async def test_upgrade_from_empty_matches_the_models(empty_url: str) -> None:
    assert await _run(empty_url, _tables) == set()
    await _run(empty_url, upgrade_connection)
    assert await _run(empty_url, _tables) >= TABLES  # type: ignore[operator]
    assert await _run(empty_url, _drift) == []

    def check(conn: Connection) -> None:
        command.check(alembic_config(conn))  # raises when models and migrations differ

    await _run(empty_url, check)


async def test_upgrade_downgrade_upgrade(empty_url: str) -> None:
    await _run(empty_url, upgrade_connection)
    await _run(empty_url, lambda conn: downgrade_connection(conn, "base"))
    assert not TABLES & await _run(empty_url, _tables)  # type: ignore[operator]
    await _run(empty_url, upgrade_connection)
    assert await _run(empty_url, _drift) == []
    async with ConversationStore(empty_url, blobs=f"memory://{uuid.uuid4().hex}") as store:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("works after the round trip"))


async def test_new_sqlite_database_is_migrated_on_first_open(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    async with ConversationStore(url) as store:
        assert store.blobs_url == str(tmp_path / "convstore-blobs")
        await store.create_conversation()
    assert await _run(url, _tables) >= TABLES  # type: ignore[operator]


async def test_server_database_is_not_migrated_implicitly(empty_url: str) -> None:
    if empty_url.startswith("sqlite"):
        store = ConversationStore(empty_url, auto_migrate=False, blobs="memory://x")
    else:
        store = ConversationStore(empty_url, blobs="memory://x")
    with pytest.raises(SchemaOutOfDateError, match="convstore migrate"):
        await store.open()


async def test_database_behind_head_names_the_command(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _run(empty_url, upgrade_connection)
    # Pretend this convstore is one migration ahead of the database.
    newer = "9999_future"
    monkeypatch.setattr(migrate_module, "head_revision", lambda: newer)
    monkeypatch.setattr(revisions_module, "quick_head", lambda: newer)
    store = ConversationStore(empty_url, blobs="memory://x", auto_migrate=True)
    with pytest.raises(SchemaOutOfDateError, match="convstore migrate") as behind:
        await store.open()
    assert behind.value.current == head_revision()
    assert behind.value.head == newer


async def test_foreign_database_is_refused(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'foreign.db'}"

    def foreign(conn: Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE unrelated (x INTEGER)")

    await _run(url, foreign)
    with pytest.raises(SchemaError, match="not a convstore database"):
        await ConversationStore(url, blobs="memory://x").open()


def _alembic(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVSTORE_URL": url}
    alembic = Path(sys.executable).parent / "alembic"
    return subprocess.run(
        [str(alembic), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_alembic_cli_at_the_repository_root(empty_url: str) -> None:
    for args in (["upgrade", "head"], ["check"], ["downgrade", "base"], ["upgrade", "head"]):
        result = _alembic(*args, url=empty_url)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    assert "No new upgrade operations detected" in _alembic("check", url=empty_url).stdout


@pytest.fixture
def wheel(built_dist: tuple[Path, Path]) -> Path:
    """The project's wheel (its contents are checked in tests/test_packaging.py)."""
    return built_dist[1]


@pytest.mark.slow
def test_installed_wheel_migrates_a_new_database(wheel: Path, tmp_path: Path) -> None:
    """A non-editable install in a fresh venv, then ``convstore migrate`` on a new database."""
    venv = tmp_path / "venv"
    # No pip inside (ensurepip is ~4 s of CPU): this environment's pip installs into it.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    # Dependencies come from this environment's site-packages (offline), the package itself
    # only from the wheel: a plain path in a .pth file adds the directory without running its
    # own .pth files, so this checkout's editable install stays out of sight.
    site = next((venv / "lib").glob("python*/site-packages"))
    deps = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    (site / "zz_dependencies.pth").write_text(deps + "\n")
    database = tmp_path / "installed.db"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CONVSTORE_URL")}
    result = subprocess.run(
        [str(venv / "bin" / "convstore"), "migrate", "--url", f"sqlite+aiosqlite:///{database}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    located = subprocess.run(
        [str(python), "-c", "import convstore.db.migrations as m; print(m.migrations_directory())"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert located.startswith(str(site)), located
    import sqlite3

    with sqlite3.connect(database) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        revision = conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    assert tables >= TABLES
    assert revision == head_revision()
