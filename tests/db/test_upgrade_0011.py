"""Revision 0011 (the deferred search index) on a populated database of 0010: up, down, up.

The database is filled by this code at head and taken down to 0010, where 0010's index (SQLite
triggers and FTS5 view, PostgreSQL generated columns) is rebuilt from the rows. The upgrade must
index every stored row in the new objects (search finds the old messages, and only those still
stored, in every tenant), and equal a rebuilt index; down again every row is kept and 0010's
objects are back; up again, the same index, no drift.
"""

from __future__ import annotations

import uuid
from typing import Any

from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, Message
from convstore.db import migrate, search_index
from convstore.db.migrations import alembic_config, downgrade_connection
from convstore.db.postgres import search_index as search_index_postgres
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows
from tests.db.test_upgrade_0006 import _found, _populate

PREVIOUS = "0010"


def _objects(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE name LIKE 'search%' OR name LIKE 'ix_search%'"
    else:
        sql = (
            "SELECT relname FROM pg_class WHERE relname LIKE 'search%' OR relname LIKE"
            " 'ix_search%' UNION ALL SELECT attname FROM pg_attribute WHERE attrelid IN"
            " ('messages'::regclass, 'conversations'::regclass) AND attname LIKE 'search%'"
            " AND NOT attisdropped UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE"
            " 'search%'"
        )
    return set(conn.exec_driver_sql(sql).scalars())


class _Fetch:
    """The `Tx` method `search_index.indexed` uses, over a connection."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def fetch(self, stmt: Any, params: Any = None) -> list[Any]:
        return [tuple(r) for r in self.conn.execute(stmt, params or {})]


def _index(conn: Connection) -> Any:
    if conn.dialect.name == "sqlite":
        # Every tenant's table (revision 0016), each document in its tenant's table.
        have = search_index.indexed(_Fetch(conn))  # type: ignore[arg-type]
        rebuilt = _Fetch(conn).fetch(search_index.SQLITE_REBUILT)
        assert sorted(have, key=repr) == sorted(rebuilt, key=repr)
        return [have]
    else:
        pairs = [
            (search_index_postgres.INDEXED, search_index_postgres.REBUILT),
            (search_index_postgres.TITLES_INDEXED, search_index_postgres.TITLES_REBUILT),
        ]
    out = []
    for indexed, rebuilt in pairs:
        have = [tuple(r) for r in conn.execute(indexed)]
        assert sorted(have, key=repr) == sorted((tuple(r) for r in conn.execute(rebuilt)), key=repr)
        out.append(have)
    return out


async def test_a_populated_0010_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up11-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
        other = await store.create_conversation(tenant="acme", title="Äpfel of acme")
        await store.append(other.id, Message.user("acme sells äpfel"), tenant="acme")
    hits = await _found(empty_url, blobs, "äpfel")
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    rows = await _run(empty_url, _rows)
    at_0010 = await _run(empty_url, _objects)

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    index = await _run(empty_url, _index)
    at_head = await _run(empty_url, _objects)
    # SQLite: a table per tenant since revision 0016 (no tenant: slot 0).
    assert "search_fts_0" in at_head or "search_docs" in at_head  # type: ignore[operator]
    assert await _found(empty_url, blobs, "äpfel") == hits
    assert len(hits) == 4  # two messages and a title in no tenant, one message of acme
    assert await _found(empty_url, blobs, "pineapple") == []  # popped, deleted
    async with ConversationStore(empty_url, blobs=blobs) as store:
        assert [h.seq for h in await store.search("äpfel", tenant="acme")] == [None, 1]
    assert await _run(empty_url, _drift) == []

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _objects) == at_0010

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _index) == index
    assert await _run(empty_url, _objects) == at_head
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _found(empty_url, blobs, "äpfel") == hits
