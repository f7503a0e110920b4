"""Revision 0010 (PL/pgSQL text functions) on a populated database of revision 0009: up, down, up.

On PostgreSQL the two text functions behind the generated search columns change language and
nothing else: every stored row, generated values included, is the same after the upgrade, the
downgrade and the upgrade again; search finds the same hits; the models do not drift. On SQLite
the revision changes nothing.
"""

from __future__ import annotations

import uuid

from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows
from tests.db.test_upgrade_0006 import _found, _populate

PREVIOUS = "0009"


def _state(conn: Connection) -> object:
    """The rows, and on PostgreSQL the generated values and the functions' languages."""
    if conn.dialect.name != "postgresql":
        return _rows(conn)
    generated = conn.exec_driver_sql(
        "SELECT conversation_id, seq, search_text, search_thinking, search_vector::text"
        " FROM messages ORDER BY conversation_id, seq"
    ).all()
    languages = conn.exec_driver_sql(
        "SELECT p.proname, l.lanname FROM pg_proc AS p JOIN pg_language AS l"
        " ON l.oid = p.prolang WHERE p.proname LIKE 'convstore_search%' ORDER BY 1"
    ).all()
    return _rows(conn), [tuple(r) for r in generated], dict(languages)  # type: ignore[arg-type]


async def test_a_populated_0009_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up10-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
    hits = await _found(empty_url, blobs, "äpfel")
    assert [seq for seq, _ in hits] == [1, 2]
    # Revision 0011 replaces the generated columns: this revision is compared at 0010.
    await _run(empty_url, lambda conn: downgrade_connection(conn, "0010"))
    at_head = await _run(empty_url, _state)

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    below = await _run(empty_url, _state)
    if empty_url.startswith("postgresql"):
        rows, generated, languages = at_head  # type: ignore[misc]
        assert languages["convstore_search_body"] == "plpgsql"
        assert languages["convstore_search_thinking"] == "plpgsql"
        assert below == (rows, generated, {**languages, "convstore_search_body": "sql",
                                           "convstore_search_thinking": "sql"})  # fmt: skip
    else:
        assert below == at_head

    await migrate(empty_url, "0010")
    assert await _run(empty_url, _state) == at_head
    await migrate(empty_url)
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _found(empty_url, blobs, "äpfel") == hits
