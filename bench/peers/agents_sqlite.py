"""openai-agents ``SQLiteSession`` (``agents.memory``): one JSON row per Responses item.

A turn is one ``add_items`` call with the six items of `bench.peers.shapes.responses_items`;
full load is ``get_items()``, last-50 ``get_items(limit=50)``. One session object per
conversation, all on the same file, as an application with several conversations would have
them. The session runs its sqlite3 calls in worker threads (``asyncio.to_thread``), one
thread-local connection per worker, serialised by a per-file lock in the process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.peers.shapes import agents_request, responses_items

PEER = Peer(
    name="agents_sqlite",
    label="openai-agents SQLiteSession",
    packages=("openai-agents", "openai"),
    unit="items",
    records_per_turn=6,
    append_api="1 x add_items (6 items)",
    load_api="get_items()",
    last_api="get_items(limit=50)",
    shape="Responses-API input items, one JSON text row each",
    durability="sets journal_mode=WAL; synchronous not set (SQLite default)",
    requests="get_items(limit=N) + ItemHelpers.input_to_new_input_list + json.dumps",
)


class _Store:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._sessions: list[Any] = []

    def payload(self, turn: int) -> Any:
        return responses_items(turn)

    async def new_conversation(self, key: str) -> Any:
        from agents.memory import SQLiteSession

        session = SQLiteSession(key, self._path)
        self._sessions.append(session)
        return session

    async def append_turn(self, conversation: Any, payload: Any) -> None:
        await conversation.add_items(payload)

    async def load_all(self, conversation: Any) -> int:
        return len(await conversation.get_items())

    async def load_last(self, conversation: Any, n: int) -> int:
        return len(await conversation.get_items(limit=n))

    async def pop_last(self, conversation: Any) -> int:
        return 0 if await conversation.pop_item() is None else 1

    async def request(self, conversation: Any, last: int | None) -> int:
        return agents_request(await conversation.get_items(limit=last))

    def close(self) -> None:
        for session in self._sessions:
            session.close()


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """Sessions on ``path``, closed on exit."""
    from agents.memory import SQLiteSession  # noqa: F401  (fail early when the API is missing)

    store = _Store(path)
    try:
        yield store
    finally:
        store.close()


if __name__ == "__main__":
    main(PEER, open_store)
