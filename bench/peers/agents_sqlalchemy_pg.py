"""openai-agents ``SQLAlchemySession`` on PostgreSQL (``postgresql+asyncpg``).

As `bench.peers.agents_sqlalchemy` (one JSON row per Responses item, one ``add_items`` per
turn, all sessions on one shared ``AsyncEngine``, tables created before timing), on a fresh
database of the cluster `bench.compare` starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.peers.agents_sqlalchemy import Store
from bench.peers.runner import Peer, fresh_postgres_database, main, postgres_dsn

PEER = Peer(
    name="agents_sqlalchemy_pg",
    label="openai-agents SQLAlchemySession (PostgreSQL)",
    packages=("openai-agents", "openai", "sqlalchemy", "asyncpg"),
    unit="items",
    records_per_turn=6,
    append_api="1 x add_items (6 items)",
    load_api="get_items()",
    last_api="get_items(limit=50)",
    shape="Responses-API input items, one JSON text row each",
    durability="the cluster's (fsync off, as the test suite runs it)",
    database="postgresql",
)


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """One shared async engine on a fresh database, disposed on exit."""
    from agents.extensions.memory import SQLAlchemySession  # noqa: F401  (fail early)
    from sqlalchemy.ext.asyncio import create_async_engine

    name = await fresh_postgres_database("agents")
    url = postgres_dsn().replace("postgresql://", "postgresql+asyncpg://", 1) + f"/{name}"
    engine = create_async_engine(url)
    try:
        yield Store(engine)
    finally:
        await engine.dispose()


if __name__ == "__main__":
    main(PEER, open_store)
