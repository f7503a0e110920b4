"""Revision 0013 (a tenant's titles by a tenant-leading index, PostgreSQL) on a populated 0012.

0013 adds ``ix_search_titles_tenant_created`` on PostgreSQL and changes no row; on SQLite it
changes nothing. The database is filled at head (several tenants' titled conversations and the
migration tests' branchy ones) and taken down to 0012; up, every row is kept and every
tenant's search finds what it found at 0012; down, the index is gone and the rows kept; up
again, the index is back, the models do not drift and the searches agree.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, Message
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _populate, _rows

PREVIOUS = "0012"
INDEX = "ix_search_titles_tenant_created"
TENANTS = (None, "acme", "globex")


def _indexes(conn: Connection) -> set[str]:
    if conn.dialect.name == "sqlite":
        return set()
    return {str(i["name"]) for i in sa.inspect(conn).get_indexes("search_titles")} & {INDEX}


async def _populate_tenants(store: ConversationStore) -> None:
    for tenant in TENANTS[1:]:
        for n in range(6):
            conv = await store.create_conversation(tenant=tenant, title=f"{tenant} walrus {n}")
            await store.append(
                conv.id, Message.user(f"{tenant} asks about walrus {n}"), tenant=tenant
            )


async def _searches(url: str, blobs: str) -> dict[Any, list[tuple[str, int | None, str]]]:
    async with ConversationStore(url, blobs=blobs) as store:
        return {
            tenant: [
                (h.conversation_id, h.seq, h.snippet)
                for h in await store.search("walrus", tenant=tenant, limit=50)
            ]
            for tenant in TENANTS
        }


async def test_a_populated_0012_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up13-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        await _populate(store)
        await _populate_tenants(store)
    searches = await _searches(empty_url, blobs)
    assert [len(searches[t]) for t in TENANTS] == [24, 12, 12]  # titles and messages
    expected = {INDEX} if empty_url.startswith("postgresql") else set()
    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _indexes) == set()
    rows = await _run(empty_url, _rows)

    await migrate(empty_url)
    assert await _run(empty_url, _indexes) == expected
    assert await _run(empty_url, _rows) == rows
    assert await _searches(empty_url, blobs) == searches

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _indexes) == set()
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert await _run(empty_url, _indexes) == expected
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _searches(empty_url, blobs) == searches
