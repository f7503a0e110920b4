"""The async floor: `bench.peers.raw_sqlite3`'s statements, each call through `asyncio.to_thread`.

What any asyncio store built on the standard library's sqlite3 pays at least: the same table,
rows, transactions and settings as the synchronous floor, but every call hops to a worker
thread and back, as an application must to keep its event loop free. One hop per append, per
load.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.peers import raw_sqlite3
from bench.peers.runner import main

PEER = replace(
    raw_sqlite3.PEER,
    name="raw_sqlite3_thread",
    label="raw sqlite3 via asyncio.to_thread (async floor)",
    append_api="1 x executemany (6 rows), 1 transaction, 1 thread hop",
)


class _Store(raw_sqlite3.Store):
    async def append_turn(self, conversation: str, payload: list[dict[str, Any]]) -> None:  # type: ignore[override]
        await asyncio.to_thread(super().append_turn, conversation, payload)

    async def load_all(self, conversation: str) -> int:  # type: ignore[override]
        return await asyncio.to_thread(super().load_all, conversation)

    async def load_last(self, conversation: str, n: int) -> int:  # type: ignore[override]
        return await asyncio.to_thread(super().load_last, conversation, n)


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """The floor's table on ``path``; every connection closed on exit."""
    store = _Store(path)
    try:
        yield store
    finally:
        store.close()


if __name__ == "__main__":
    main(PEER, open_store)
