"""Revision 0017 (the writes queue what they insert, PostgreSQL) on a populated 0016.

The database is filled at head (the migration tests' branchy conversations and a tenant's
titled ones) and searched; then turns are appended with the background catch-up off and no
search, so they wait in the queue as head writes queue them: one range a write. Down to 0016,
the insert trigger is back and every queued range is one key a row (as its trigger queued
them); up, the trigger goes and the queued keys stay queued; every search then finds what it
found before plus the waiting turns, every row is kept, and the models do not drift. Down and up
again, the same. SQLite has no queue: 0017 changes nothing there, which the same test checks.
"""

from __future__ import annotations

import uuid

from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, Message
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _populate, _rows

PREVIOUS = "0016"
TENANT = "acme"


def _queue(conn: Connection) -> tuple[list[tuple[object, ...]], list[str]]:
    """PostgreSQL: the queue's rows (every column, sorted) and the insert triggers on messages."""
    if conn.dialect.name == "sqlite":
        return [], []
    rows = conn.exec_driver_sql("SELECT * FROM search_queue ORDER BY 1, 2").fetchall()
    triggers = conn.exec_driver_sql(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 'messages'::regclass"
        " AND NOT tgisinternal ORDER BY 1"
    ).fetchall()
    return [tuple(r) for r in rows], [str(name) for (name,) in triggers]


async def _searches(url: str, blobs: str) -> dict[str, list[tuple[str, int | None, str]]]:
    async with ConversationStore(url, blobs=blobs) as store:
        store.search_index.background = False
        found: dict[str, list[tuple[str, int | None, str]]] = {}
        for query in ("walrus", "narwhal", "beluga"):
            hits = await store.search(query, tenant=TENANT, limit=50)
            found[query] = [(h.conversation_id, h.seq, h.snippet) for h in hits]
        return found


async def test_a_populated_0016_database_with_queued_turns_upgrades_and_downgrades(
    empty_url: str,
) -> None:
    blobs = f"memory://up16-{uuid.uuid4().hex}"
    postgres = empty_url.startswith("postgresql")
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        store.search_index.background = False
        await _populate(store)
        conv = await store.create_conversation(tenant=TENANT, title="walrus notes")
        await store.append(
            conv.id, [Message.user("a walrus"), Message.assistant("ok")], tenant=TENANT
        )
        before = await _searches(empty_url, blobs)
        # Waiting in the queue: a three-message append and a one-message append.
        await store.append(
            conv.id,
            [Message.user("narwhal one"), Message.assistant("narwhal two"), Message.user("three")],
            tenant=TENANT,
        )
        await store.append(conv.id, Message.assistant("a beluga"), tenant=TENANT)
    assert before["narwhal"] == before["beluga"] == []
    queued, triggers = await _run(empty_url, _queue)
    if postgres:
        assert queued == [(conv.id, 3, 5), (conv.id, 6, 6)]
        assert triggers == ["search_messages_requeue"]

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    keys = [(conv.id, seq) for seq in range(3, 7)]
    queued_0016, triggers_0016 = await _run(empty_url, _queue)
    if postgres:
        assert queued_0016 == keys  # one key a row, as 0016's trigger queued them
        assert triggers_0016 == ["search_messages_queue", "search_messages_requeue"]
    rows = await _run(empty_url, _rows)

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    if postgres:
        assert await _run(empty_url, _queue) == ([(c, s, None) for c, s in keys], triggers)
    after = await _searches(empty_url, blobs)
    assert after["walrus"] == before["walrus"]
    assert sorted(seq or 0 for _, seq, _ in after["narwhal"]) == [3, 4]
    assert [seq for _, seq, _ in after["beluga"]] == [6]

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _queue) == ([], triggers_0016)

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _queue) == ([], triggers)
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _searches(empty_url, blobs) == after
