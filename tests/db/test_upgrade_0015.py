"""Revision 0015 (the newest-first search indexes partial, PostgreSQL) on a populated 0014.

0015 makes ``ix_search_docs_created`` and ``ix_search_titles_created`` partial on PostgreSQL
(a condition only a search of every tenant states) and changes no row; on SQLite it changes
nothing. The database is filled at head (several tenants' titled conversations and the
migration tests' branchy ones) and taken down to 0014; up, every row is kept, the indexes are
partial and every tenant's search, and the search of every tenant, finds what it found before;
down, the indexes are whole again and the rows kept; up again, partial, the models do not drift
and the searches agree.
"""

from __future__ import annotations

import uuid

from alembic import command
from sqlalchemy import Connection, text

from convstore import ConversationStore, Message
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _populate, _rows

PREVIOUS = "0014"
INDEXES = ("ix_search_docs_created", "ix_search_titles_created")
TENANTS = ("acme", "globex")


def _partial(conn: Connection) -> dict[str, bool]:
    """Whether each index is partial (PostgreSQL; empty on SQLite, which has neither)."""
    if conn.dialect.name == "sqlite":
        return {}
    found = conn.execute(
        text("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(:names)"),
        {"names": list(INDEXES)},
    )
    return {str(name): " WHERE " in str(definition) for name, definition in found}


async def _populate_tenants(store: ConversationStore) -> None:
    for tenant in TENANTS:
        for n in range(6):
            conv = await store.create_conversation(tenant=tenant, title=f"{tenant} walrus {n}")
            await store.append(
                conv.id, [Message.user(f"{tenant} asks about walrus {n}"), Message.user("ok")],
                tenant=tenant,
            )  # fmt: skip


async def _searches(url: str, blobs: str) -> dict[str, list[tuple[str, int | None, str]]]:
    """Each tenant's hits and every tenant's (``"*"``), for a long and a short term."""
    async with ConversationStore(url, blobs=blobs) as store:
        found: dict[str, list[tuple[str, int | None, str]]] = {}
        for key, tenant in (("acme", "acme"), ("globex", "globex"), ("*", None)):
            for query in ("walrus", "ok"):
                hits = await store.search(query, tenant=tenant, limit=50)
                found.setdefault(key, []).extend(
                    (h.conversation_id, h.seq, h.snippet) for h in hits
                )
        return found


async def test_a_populated_0014_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up15-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
        await _populate_tenants(store)
    searches = await _searches(empty_url, blobs)
    assert [len(searches[t]) for t in ("acme", "globex")] == [18, 18]  # titles, both messages
    assert len(searches["*"]) > 36
    postgres = empty_url.startswith("postgresql")
    whole = dict.fromkeys(INDEXES, False) if postgres else {}
    partial = dict.fromkeys(INDEXES, True) if postgres else {}
    assert await _run(empty_url, _partial) == partial
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _partial) == whole
    rows = await _run(empty_url, _rows)

    await migrate(empty_url)
    assert await _run(empty_url, _partial) == partial
    assert await _run(empty_url, _rows) == rows
    assert await _searches(empty_url, blobs) == searches

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _partial) == whole
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert await _run(empty_url, _partial) == partial
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _searches(empty_url, blobs) == searches
