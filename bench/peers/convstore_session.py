"""convstore's openai-agents integration, ``ConvstoreSession``, on the openai-agents workload.

The same items and calls as ``agents_sqlite``: a turn is one ``add_items`` call with the six
items of `bench.peers.shapes.responses_items`; full load is ``get_items()``, last-50
``get_items(limit=50)``. One session object per conversation, all sharing one open
`ConversationStore` on the file (the way an application serving many sessions would use it);
every item becomes a canonical message plus its native record, with tool-call lifecycles.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.peers.shapes import agents_request, responses_items

PEER = Peer(
    name="convstore_session",
    label="convstore ConvstoreSession (openai-agents)",
    packages=("convstore", "openai-agents", "sqlalchemy", "aiosqlite", "pydantic"),
    unit="items",
    records_per_turn=6,
    append_api="1 x add_items (6 items)",
    load_api="get_items()",
    last_api="get_items(limit=50)",
    shape="items as canonical messages + native records (relational rows, tool calls)",
    durability="WAL + synchronous=FULL (convstore's defaults), busy_timeout 5 s",
    requests="get_items(limit=N) + ItemHelpers.input_to_new_input_list + json.dumps",
)


class Store:
    """Sessions on one shared store (also the base of `bench.peers.convstore_session_url`)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def payload(self, turn: int) -> Any:
        return responses_items(turn)

    async def new_conversation(self, key: str) -> Any:
        from convstore.integrations.openai_agents import ConvstoreSession

        return ConvstoreSession(key, store=self._store)

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

    async def settle(self) -> None:
        """As `bench.peers.convstore_store.Store.settle`: the search catch-up, now, counted on
        its own by `bench.callgrind_bench`."""
        index = self._store.search_index
        index.background = False
        await index.catch_up()


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """Sessions sharing one default `ConversationStore` on ``path``."""
    from convstore import ConversationStore
    from convstore.integrations.openai_agents import ConvstoreSession  # noqa: F401 (fail early)

    async with ConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        yield Store(store)


if __name__ == "__main__":
    main(PEER, open_store)
