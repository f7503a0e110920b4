"""Revision 0016 (a search table per tenant, SQLite) on a populated 0015 database.

0016 moves SQLite's shared ``search_fts`` into one FTS5 table per tenant slot and changes
nothing on PostgreSQL. The database is filled at head (two tenants' titled conversations, the
migration tests' branchy ones without a tenant, one message and title left pending: written
after the last catch-up) and taken down to 0015, where the shared table holds the message
documents the tenant tables held (the mark, map and log as they were, so the pending message
is still pending) and every title, as 0015's triggers keep them. Up, every row is kept, each
tenant's documents are in its own table, moved as they were, and every search finds what it
found before, the pending message too, with an index equal to a rebuilt one; down, the
shared table is back and no tenant table is left; up again, the models do not drift (the
tenant tables are the database's own, left out of the comparison by their ``search_`` name).
"""

from __future__ import annotations

import uuid
from typing import Any

from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, Message
from convstore.db import migrate, search_index
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _populate, _rows
from tests.db.test_upgrade_0015 import _populate_tenants, _searches

PREVIOUS = "0015"


class _Fetch:
    """The `Tx` method `search_index.indexed` uses, over a connection."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def fetch(self, stmt: Any, params: Any = None) -> list[Any]:
        return [tuple(r) for r in self.conn.execute(stmt, params or {})]


def _layout(conn: Connection) -> dict[str, Any]:
    """SQLite: the index's tables, where its documents are and its state (PostgreSQL: none)."""
    if conn.dialect.name != "sqlite":
        return {}
    run = conn.exec_driver_sql
    virtual = "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY 1"
    tables = [str(name) for (name,) in run(virtual)]
    state = run("SELECT mark, msg_rowid, conv_rowid FROM search_state").one()
    if "search_fts" in tables:  # 0015: one table for every tenant
        documents = [tuple(r) for r in run("SELECT rowid, title, body, thinking FROM search_fts")]
    else:
        documents = search_index.indexed(_Fetch(conn))  # type: ignore[arg-type]
    return {
        "tables": tables,
        "documents": sorted(documents, key=lambda r: int(r[0])),
        "state": tuple(state),
        "map": [tuple(r) for r in run("SELECT msg, doc FROM search_map ORDER BY msg")],
    }


def _pending(conn: Connection) -> bool:
    """SQLite: whether a message is above the mark (the late one), at 0015 as at 0016."""
    sql = "SELECT mark < (SELECT max(rowid) FROM messages) FROM search_state"
    return conn.dialect.name == "sqlite" and bool(conn.exec_driver_sql(sql).scalar_one())


async def test_a_populated_0015_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up16-{uuid.uuid4().hex}"
    sqlite = empty_url.startswith("sqlite")
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        # Off from the start: a background step already running when it is switched off may
        # index the late message before the store closes.
        store.search_index.background = False
        await _populate(store)
        await _populate_tenants(store)
        await store.search("walrus")
        late = await store.create_conversation(tenant="acme", title="acme late walrus")
        await store.append(late.id, Message.user("a late walrus"), tenant="acme")
    at_head = await _run(empty_url, _layout)
    assert await _run(empty_url, _pending) is sqlite
    if sqlite:
        # Each tenant's documents in its own table, and the no-tenant slot's (0).
        assert {"search_fts_0", "search_fts_1", "search_fts_2"} <= set(at_head["tables"])
        assert "search_fts" not in at_head["tables"]
    rows = await _run(empty_url, _rows)

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _rows) == rows
    at_0015 = await _run(empty_url, _layout)
    if sqlite:
        assert at_0015["tables"] == ["search_fts"]
        # The same message documents, mark and map: moved, not rebuilt (the pending message
        # is pending still); every title, as 0015's triggers keep them (the late one too).
        messages = [[d for d in at["documents"] if d[0] > 0] for at in (at_0015, at_head)]
        assert messages[0] == messages[1]
        titles = sorted(str(d[1]) for d in at_0015["documents"] if d[0] < 0)
        assert titles == sorted([*(str(d[1]) for d in at_head["documents"] if d[0] < 0),
                                 "acme late walrus"])  # fmt: skip
        assert (at_0015["state"], at_0015["map"]) == (at_head["state"], at_head["map"])
    assert await _run(empty_url, _pending) is sqlite

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    up = await _run(empty_url, _layout)
    if sqlite:  # moved back as it was, every title indexed
        assert (up["tables"], up["state"], up["map"]) == (
            at_head["tables"],
            at_head["state"],
            at_head["map"],
        )
        assert [d for d in up["documents"] if d[0] > 0] == messages[1]
        assert sorted(str(d[1]) for d in up["documents"] if d[0] < 0) == titles
    searches = await _searches(empty_url, blobs)  # catches up: the late message is found
    assert len(searches["acme"]) == 18 + 2  # the late title and message
    assert await _run(empty_url, _pending) is False
    async with ConversationStore(empty_url, blobs=blobs) as store:
        if sqlite:

            def read(tx: Any) -> list[Any]:
                return [search_index.indexed(tx), tx.fetch(search_index.SQLITE_REBUILT)]

            indexed, rebuilt = await store.backend.read(read)
            assert sorted(indexed, key=repr) == sorted(rebuilt, key=repr)

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _rows) == rows
    if sqlite:
        assert (await _run(empty_url, _layout))["tables"] == ["search_fts"]

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _searches(empty_url, blobs) == searches
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
