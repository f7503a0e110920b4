"""Revision 0006 (search) on a populated database of revision 0005: up, search, down, up.

0006 changes no row, so rows written by this code and downgraded to 0005 are what 0005's code
would have written (and hold no index): messages in several languages, tool calls and
results, titles, a popped message and a deleted conversation. The upgrade must index them all
(search finds the old messages and only those still stored), the downgrade must remove every
search object and keep every row, and the upgrade after it must index them again, with no
drift from the models.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, Message, ToolCallPart
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows

PREVIOUS = "0005"


async def _populate(store: ConversationStore) -> dict[str, str]:
    kept = await store.create_conversation(title="Einkaufsliste")
    await store.append(
        kept.id,
        [
            Message.user("Äpfel und Birnen kaufen"),
            Message.assistant(ToolCallPart(id="c1", name="lookup_price", arguments={"q": "Äpfel"})),
            Message.tool_result("c1", {"price": "2 EUR"}),
            Message.assistant("東京の市場で買いました"),
            Message.user("forgotten pineapple"),
        ],
    )
    await store.pop(kept.id)
    gone = await store.create_conversation(title="pineapple party")
    await store.append(gone.id, Message.user("pineapple pizza"))
    await store.delete_conversation(gone.id)
    return {"kept": kept.id}


def _search_objects(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        rows = conn.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE name LIKE 'search%'"
        ).scalars()
        return set(rows)
    columns = {
        f"{c['name']}"
        for table in ("messages", "conversations")
        for c in sa.inspect(conn).get_columns(table)
        if c["name"].startswith("search_")
    }
    functions = set(
        conn.exec_driver_sql(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'convstore_search%'"
        ).scalars()
    )
    return columns | functions


async def _found(url: str, blobs: str, query: str) -> list[tuple[int | None, str]]:
    async with ConversationStore(url, blobs=blobs) as store:
        return [(h.seq, h.snippet) for h in await store.search(query)]


async def test_a_populated_0005_database_is_indexed_on_upgrade(empty_url: str) -> None:
    blobs = f"memory://up6-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
    rows: Any = await _run(empty_url, _rows)
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _search_objects) == set()

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _found(empty_url, blobs, "äpfel") == [
        (1, "⟦Äpfel⟧ und Birnen kaufen"),
        (2, 'lookup_price {"q":"⟦Äpfel⟧"}'),
    ]
    assert await _found(empty_url, blobs, "einkauf") == [(None, "⟦Einkauf⟧sliste")]
    assert await _found(empty_url, blobs, "東京") == [(4, "⟦東京⟧の市場で買いました")]
    assert await _found(empty_url, blobs, "pineapple") == []  # popped, deleted

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _search_objects) == set()
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert [seq for seq, _ in await _found(empty_url, blobs, "EUR")] == [3]
