"""convstore's `ConversationStore` with its message cache off (``message_cache=0``).

Everything else is `bench.peers.convstore_store`: the same messages, calls and turn loop. Every
load decodes every message it returns, as a store without a cache (or a new process) does.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from bench.peers import convstore_store
from bench.peers.runner import main

PEER = replace(
    convstore_store.PEER,
    name="convstore_nocache",
    label="convstore ConversationStore, message cache off",
)


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[convstore_store.Store]:
    """A `ConversationStore` on ``path`` that keeps no decoded messages."""
    from convstore import ConversationStore

    if "message_cache" not in inspect.signature(ConversationStore).parameters:
        raise ImportError("this convstore has no message cache (message_cache=)")
    async with convstore_store.open_store(path, message_cache=0) as store:
        yield store


if __name__ == "__main__":
    main(PEER, open_store)
