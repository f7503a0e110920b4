"""Revision 0008 (search by time) on a populated database of revision 0007: up, down, up.

0008 adds one index and changes no row. Downgraded to 0007 the index is gone and every row
kept; after the upgrade to head it is gone again (revision 0011 drops it), with no drift,
and a search of short terms (the query it served) finds the same hits as before.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows
from tests.db.test_upgrade_0006 import _found, _populate

PREVIOUS = "0007"


def _indexes(conn: Connection) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(conn).get_indexes("messages")}


async def test_a_populated_0007_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up8-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
    rows = await _run(empty_url, _rows)
    # Revision 0011 drops the index again: SQLite's newest message is the highest rowid, and
    # PostgreSQL's search reads its own table's (tenant, created_at) index.
    at_head = False
    assert ("ix_search_messages_created" in await _run(empty_url, _indexes)) == at_head  # type: ignore[operator]
    expected = [(4, "⟦東京⟧の市場で買いました")]
    assert await _found(empty_url, blobs, "東京") == expected

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert "ix_search_messages_created" not in await _run(empty_url, _indexes)  # type: ignore[operator]
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert ("ix_search_messages_created" in await _run(empty_url, _indexes)) == at_head  # type: ignore[operator]
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _found(empty_url, blobs, "東京") == expected
