"""convstore's `ConversationStore` on PostgreSQL (asyncpg): the reference of the PostgreSQL table.

The same adapter as `bench.peers.convstore_store` (a turn is five canonical messages in one
``append``), on a fresh database of the cluster `bench.compare` starts, migrated before timing.
Attachments (none in this workload) would go to a blob directory beside the SQLite file the
runner makes (unused here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.peers.convstore_store import Store
from bench.peers.runner import Peer, fresh_postgres_database, main, postgres_dsn

PEER = Peer(
    name="convstore_pg",
    label="convstore ConversationStore (PostgreSQL)",
    packages=("convstore", "sqlalchemy", "asyncpg", "pydantic"),
    unit="messages",
    records_per_turn=5,
    append_api="1 x append (5 messages)",
    load_api="load(id)",
    last_api="load(id, last=50)",
    shape="canonical Message models: messages (parts as one JSON column), tool calls",
    durability="the cluster's (fsync off, as the test suite runs it)",
    database="postgresql",
)


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """A `ConversationStore` on a fresh, migrated database."""
    from convstore import ConversationStore

    name = await fresh_postgres_database("convstore")
    url = postgres_dsn().replace("postgresql://", "postgresql+asyncpg://", 1) + f"/{name}"
    blobs = str(path.parent / "blobs")
    async with ConversationStore(url, blobs=blobs, auto_migrate=True) as store:
        yield Store(store)


if __name__ == "__main__":
    main(PEER, open_store)
