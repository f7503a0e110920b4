"""convstore's `ConversationStore` with default settings: the reference of every ratio.

A turn is the workload's five canonical messages (`bench.workload.turn_messages`) in one
``append`` call; the store is opened with its defaults on the given SQLite file (WAL,
``synchronous=FULL``, attachments in a blob directory beside the file).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.workload import turn_messages

PEER = Peer(
    name="convstore_store",
    label="convstore ConversationStore",
    packages=("convstore", "sqlalchemy", "aiosqlite", "pydantic"),
    unit="messages",
    records_per_turn=5,
    append_api="1 x append (5 messages)",
    load_api="load(id)",
    last_api="load(id, last=50)",
    shape="canonical Message models: messages (parts as one JSON column), tool calls",
    durability="WAL + synchronous=FULL (its defaults), busy_timeout 5 s",
    requests="load(id, last=N) + render(..., 'openai-responses') + json.dumps",
)

TARGET, MODEL = "openai-responses", "gpt-5"
"""The request the turn loop builds: the shape the openai-agents peers store their items in."""


class Store:
    """convstore behind the runner's `Store` protocol (shared with `bench.peers.convstore_pg`)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def payload(self, turn: int) -> Any:
        return turn_messages(turn)

    async def new_conversation(self, key: str) -> str:
        conversation = await self._store.create_conversation(title=key)
        return str(conversation.id)

    async def append_turn(self, conversation: str, payload: Any) -> None:
        await self._store.append(conversation, payload)

    async def load_all(self, conversation: str) -> int:
        return len((await self._store.load(conversation)).messages)

    async def load_last(self, conversation: str, n: int) -> int:
        return len((await self._store.load(conversation, last=n)).messages)

    async def pop_last(self, conversation: str) -> int:
        await self._store.pop(conversation)
        return 1

    async def settle(self) -> None:
        """Index what is pending, now, and no more in the background (`bench.callgrind_bench`
        counts this catch-up on its own: left to the idle timer, it would land in whichever
        section runs when the timer fires)."""
        index = self._store.search_index
        index.background = False
        await index.catch_up()

    async def request(self, conversation: str, last: int | None) -> int:
        from convstore import render

        # The history a chat app sends: the path, or its newest messages (a store window,
        # widened to whole turns), rendered as they are.
        body = render(await self._store.load(conversation, last=last), TARGET, model=MODEL).payload
        json.dumps({"model": MODEL, **body})
        return len(body["input"])


@asynccontextmanager
async def open_store(path: Path, **options: Any) -> AsyncIterator[Store]:
    """A default `ConversationStore` on ``path`` (``options``: constructor keywords)."""
    from convstore import ConversationStore

    async with ConversationStore(f"sqlite+aiosqlite:///{path}", **options) as store:
        yield Store(store)


if __name__ == "__main__":
    main(PEER, open_store)
