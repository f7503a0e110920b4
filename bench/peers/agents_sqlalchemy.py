"""openai-agents ``SQLAlchemySession`` on ``sqlite+aiosqlite``: one JSON row per Responses item.

A turn is one ``add_items`` call with the six items of `bench.peers.shapes.responses_items`;
full load is ``get_items()``, last-50 ``get_items(limit=50)``. All sessions share one
``AsyncEngine`` (the constructor the SDK documents for an application that manages its engine;
``from_url`` would create an engine, and a connection pool, per conversation), created with
``create_tables=True``. Table creation happens when a conversation is created, before timing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.peers.shapes import agents_request, responses_items

PEER = Peer(
    name="agents_sqlalchemy",
    label="openai-agents SQLAlchemySession",
    packages=("openai-agents", "openai", "sqlalchemy", "aiosqlite"),
    unit="items",
    records_per_turn=6,
    append_api="1 x add_items (6 items)",
    load_api="get_items()",
    last_api="get_items(limit=50)",
    shape="Responses-API input items, one JSON text row each",
    durability="sets journal_mode=WAL, busy_timeout 5 s; synchronous not set (SQLite default)",
    requests="get_items(limit=N) + ItemHelpers.input_to_new_input_list + json.dumps",
)


class Store:
    """The sessions behind the runner's `Store` protocol (shared with the PostgreSQL peer)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def payload(self, turn: int) -> Any:
        return responses_items(turn)

    async def new_conversation(self, key: str) -> Any:
        from agents.extensions.memory import SQLAlchemySession

        session = SQLAlchemySession(key, engine=self._engine, create_tables=True)
        await session.get_items(limit=1)  # creates the tables now rather than in a timed call
        return session

    async def append_turn(self, conversation: Any, payload: Any) -> None:
        await conversation.add_items(payload)

    async def load_all(self, conversation: Any) -> int:
        return len(await conversation.get_items())

    async def load_last(self, conversation: Any, n: int) -> int:
        return len(await conversation.get_items(limit=n))

    async def request(self, conversation: Any, last: int | None) -> int:
        return agents_request(await conversation.get_items(limit=last))


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """One shared async engine on ``path``, disposed on exit."""
    from agents.extensions.memory import SQLAlchemySession  # noqa: F401  (fail early)
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        yield Store(engine)
    finally:
        await engine.dispose()


if __name__ == "__main__":
    main(PEER, open_store)
