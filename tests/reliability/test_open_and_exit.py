"""Opening fails with typed errors, and processes end.

- A new database whose write lock another connection holds past the busy timeout, and a disk
  that fills during the first open's migration, raise `DatabaseError` (they escaped as
  SQLAlchemy's ``OperationalError``, and ``convstore list`` printed a traceback); the failed
  migration leaves nothing half-created.
- A database migrated by a newer convstore says to upgrade convstore.
- A PostgreSQL read cancelled mid-query finishes in the background instead of dropping its
  connection, so nothing logs "Future exception was never retrieved" (cancelled writes still
  roll back by dropping theirs, and still log it: not fixed).
- A script that keeps a store open (forgot ``close``, or a reference outlived the exception
  unwinding ``async with``) still exits: aiosqlite's worker threads no longer keep it alive.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, Message
from convstore.cli.main import main as cli
from convstore.db.sqlite import backend as sqlite_backend
from convstore.errors import DatabaseError, SchemaError

REPO = Path(__file__).resolve().parents[2]


def _url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores opened in this test wait 0.2 s for a lock instead of 5 s."""
    original: Callable[..., None] = sqlite_backend.SqliteBackend.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **{**kwargs, "busy_timeout": 0.2})

    monkeypatch.setattr(sqlite_backend.SqliteBackend, "__init__", init)


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA journal_mode = WAL")
    other.execute("BEGIN IMMEDIATE")
    return other


@pytest.mark.usefixtures("short_busy_timeout")
async def test_first_open_while_another_connection_holds_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    other = _hold_write_lock(path)
    try:
        with pytest.raises(DatabaseError, match="database is locked"):
            await ConversationStore(_url(path), blobs="memory://locked").open()
    finally:
        other.rollback()
        other.close()
    async with ConversationStore(_url(path), blobs="memory://locked") as store:
        assert await store.list_conversations() == []


@pytest.mark.usefixtures("short_busy_timeout")
def test_cli_list_prints_one_line_when_the_database_is_locked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "locked.db"
    other = _hold_write_lock(path)
    try:
        assert cli(["list", "--url", _url(path)]) == 1
    finally:
        other.close()
    err = capsys.readouterr().err
    assert err.startswith("convstore: DatabaseError: ")
    assert "database is locked" in err
    assert "Traceback" not in err
    assert err.count("\n") == 1


async def test_a_full_disk_during_the_first_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure = sqlite_backend.configure

    def tiny(raw: sqlite3.Connection, pragmas: Sequence[str], trace: Any) -> None:
        # SQLite's own "database or disk is full" (SQLITE_FULL), deterministically.
        configure(raw, [*pragmas, "PRAGMA max_page_count = 3"], trace)

    path = tmp_path / "full.db"
    monkeypatch.setattr(sqlite_backend, "configure", tiny)
    with pytest.raises(DatabaseError, match="database or disk is full"):
        await ConversationStore(_url(path), blobs="memory://full").open()
    monkeypatch.setattr(sqlite_backend, "configure", configure)
    # The migration was one transaction: nothing half-created, the next open creates it all.
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == []
    async with ConversationStore(_url(path), blobs="memory://full") as store:
        assert await store.list_conversations() == []


async def test_a_database_from_a_newer_convstore_says_to_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "newer.db"
    async with ConversationStore(_url(path), blobs="memory://newer"):
        pass
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    with pytest.raises(SchemaError, match="migrated by a newer convstore; upgrade convstore"):
        await ConversationStore(_url(path), blobs="memory://newer").open()


def test_a_database_that_is_not_convstores_says_so(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE mine (x)")
    assert cli(["list", "--url", _url(path)]) == 1


SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from convstore import ConversationStore, Message

    URL = "sqlite+aiosqlite:///" + sys.argv[1]
    KEPT = []

    async def main(mode):
        store = ConversationStore(URL, blobs="memory://exit")
        KEPT.append(store)  # a reference that outlives the coroutine
        if mode == "forget":
            await store.open()
            conv = await store.create_conversation()
            await store.append(conv.id, Message.user("x"))
            await store.load(conv.id)
            return
        async with store:
            conv = await store.create_conversation()
            await store.load(conv.id)
            inner = ConversationStore(URL, blobs="memory://exit")
            KEPT.append(inner)
            await inner.open()  # never closed
            raise RuntimeError("boom")

    asyncio.run(main(sys.argv[2]))
    """
)


@pytest.mark.parametrize("mode", ["forget", "raise"])
def test_scripts_that_leave_a_store_open_still_exit(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "exit.db"), mode],
        env={"PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=60,  # it hung forever before: the timeout is the failure
        check=False,
    )
    assert done.returncode == (1 if mode == "raise" else 0), done.stderr
    if mode == "raise":
        assert "RuntimeError: boom" in done.stderr


@pytest.mark.postgres
async def test_cancelled_postgres_reads_leave_no_unretrieved_futures(
    pg_store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: each read cancelled mid-query made SQLAlchemy drop its connection and asyncpg log
    # "Future exception was never retrieved" (80 lines for 120 cancelled loads).
    caplog.set_level(logging.ERROR, logger="asyncio")
    async with ConversationStore(pg_store_url, blobs="memory://cancel") as store:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("x" * 100))
        for delay in (0.0, 0.005, 0.01):
            loads = [asyncio.create_task(store.load(conv.id)) for _ in range(40)]
            await asyncio.sleep(delay)
            for task in loads:
                task.cancel()
            await asyncio.gather(*loads, return_exceptions=True)
        assert len((await store.load(conv.id)).messages) == 1
    gc.collect()  # an unretrieved future logs when it is collected
    assert [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()] == []


async def test_cancelled_postgres_writes_roll_back_and_leave_no_unretrieved_futures(
    pg_store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: each append cancelled mid-query made SQLAlchemy drop its connection and asyncpg
    # log "Future exception was never retrieved" (80 lines for 200 cancelled appends). Now the
    # write finishes in the background and rolls back, since nobody waits for it any more.
    caplog.set_level(logging.ERROR, logger="asyncio")
    async with ConversationStore(pg_store_url, blobs="memory://cancel-writes") as store:
        conv = await store.create_conversation()
        acknowledged = 0
        for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
            appends = [
                asyncio.create_task(store.append(conv.id, Message.user(f"{delay} {n}")))
                for n in range(40)
            ]
            await asyncio.sleep(delay)
            for task in appends:
                task.cancel()
            outcomes = await asyncio.gather(*appends, return_exceptions=True)
            acknowledged += sum(isinstance(o, list) for o in outcomes)
    async with ConversationStore(pg_store_url, blobs="memory://cancel-writes") as store:
        # Every acknowledged append is stored; a cancelled one is stored only if its COMMIT was
        # already on its way (as on SQLite), whole either way.
        stored = (await store.load(conv.id)).messages
        assert len(stored) >= acknowledged
        assert all(len(m.parts) == 1 for m in stored)
    gc.collect()  # an unretrieved future logs when it is collected
    assert [r.getMessage() for r in caplog.records if "never retrieved" in r.getMessage()] == []
