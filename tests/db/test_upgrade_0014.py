"""Revision 0014 (the search delete trigger, SQLite) on a populated 0013 database it repairs.

0013's delete trigger could leave the deferred index's mark above the newest message, and the
next message, given a freed rowid, was never indexed. The database here is filled at head;
with 0013's trigger put back, that damage is done through the store (at the head: its index
tables are revision 0016's): a conversation whose newest turns were not indexed yet is
deleted, and the next message is not found; the database is then taken down to 0013, its
index moved back as it is. Up, every row is
kept, the lost message is found and the index equals a rebuilt one; down, 0013's trigger is
back and the rows kept; up again, the models do not drift. PostgreSQL has no mark: 0014 changes
nothing there, which the same test checks.
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

PREVIOUS = "0013"


def _trigger(conn: Connection) -> str | None:
    if conn.dialect.name != "sqlite":
        return None
    sql = "SELECT sql FROM sqlite_master WHERE name = 'search_messages_delete'"
    return str(conn.exec_driver_sql(sql).scalar_one())


_UNDO_REPAIR = "DELETE FROM search_log"
"""What `upgrade_delete_trigger`'s repair logged (the log is empty after the catch-ups that
the damage ran): the lost row is left unlogged, as 0013 left it."""


async def _found(url: str, blobs: str, word: str) -> list[tuple[str, int | None]]:
    async with ConversationStore(url, blobs=blobs) as store:
        store.search_index.background = False
        return [(h.conversation_id, h.seq) for h in await store.search(word, limit=50)]


async def _lose_a_message(url: str, blobs: str) -> str:
    """What 0013's trigger did: the next message after such a delete is never indexed."""
    async with ConversationStore(url, blobs=blobs) as store:
        store.search_index.background = False
        kept = await store.create_conversation()
        await store.append(kept.id, Message.user("walrus on the ice"))
        gone = await store.create_conversation()
        await store.append(gone.id, [Message.user("indexed"), Message.assistant("indexed")])
        await store.search_index.catch_up()
        await store.append(gone.id, [Message.user("pending"), Message.assistant("pending")])
        await store.delete_conversation(gone.id)
        await store.search_index.catch_up()
        await store.append(kept.id, Message.user("a beluga surfaces"))
        return kept.id


async def _differences(url: str, blobs: str) -> list[Any]:
    async with ConversationStore(url, blobs=blobs) as store:
        store.search_index.background = False
        await store.search_index.catch_up()
        if store.backend.dialect_name != "sqlite":
            return []

        def read(tx: Any) -> list[Any]:
            return [search_index.indexed(tx), tx.fetch(search_index.SQLITE_REBUILT)]

        indexed, rebuilt = await store.backend.read(read)
        return sorted(set(indexed) ^ set(rebuilt), key=repr)


async def test_a_damaged_0013_database_is_repaired_downgraded_and_upgraded_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up14-{uuid.uuid4().hex}"
    sqlite = empty_url.startswith("sqlite")
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
    fixed = await _run(empty_url, _trigger)
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    old = await _run(empty_url, _trigger)
    assert (old != fixed) is sqlite

    # A 0013 deployment at work, with 0013's trigger: the store of today's code works only at
    # the head (its index tables are revision 0016's), so the trigger is put back there, the
    # damage done, and the database taken down to 0013 again (0016 moves the index, mark and
    # map as they are).
    await migrate(empty_url)
    if sqlite:
        await _run(empty_url, search_index.downgrade_delete_trigger)
    kept = await _lose_a_message(empty_url, blobs)
    lost = await _found(empty_url, blobs, "beluga")
    assert lost == ([] if sqlite else [(kept, 2)])
    if sqlite:
        await _run(empty_url, search_index.upgrade_delete_trigger)  # 0014's, for its downgrade
        await _run(empty_url, lambda conn: conn.exec_driver_sql(_UNDO_REPAIR))
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _trigger) == old
    rows = await _run(empty_url, _rows)

    await migrate(empty_url)
    assert await _run(empty_url, _trigger) == fixed
    assert await _run(empty_url, _rows) == rows
    assert await _found(empty_url, blobs, "beluga") == [(kept, 2)]
    assert await _differences(empty_url, blobs) == []

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _trigger) == old
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert await _run(empty_url, _trigger) == fixed
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _differences(empty_url, blobs) == []
