"""convstore BEFORE the schema-v2 layout change: the code of commit d7b1e98 (one row per part).

`bench.compare` extracts ``git archive d7b1e98 src migrations`` to a temporary directory and
runs this module with ``PYTHONPATH`` pointing at its ``src``, so ``import convstore`` finds the
v1 package; the adapter is `bench.peers.convstore_store`'s, unchanged (v1 has the same
``create_conversation`` / ``append`` / ``load(last=)`` API). Run without that path it would
measure the current code, so it refuses.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bench.harness.fixtures import V1_COMMIT
from bench.peers.convstore_store import Store
from bench.peers.runner import Peer, main

PEER = Peer(
    name="convstore_v1",
    label=f"convstore v1 ({V1_COMMIT}, before the layout change)",
    packages=("convstore", "sqlalchemy", "aiosqlite", "pydantic"),
    unit="messages",
    records_per_turn=5,
    append_api="1 x append (5 messages)",
    load_api="load(id)",
    last_api="load(id, last=50)",
    shape="canonical Message models: relational rows (messages, parts, tool calls)",
    durability="WAL + synchronous=FULL (its defaults), busy_timeout 5 s",
)


class _V1Store(Store):
    # v1 has no `pop`: the pop phase is left out for it (the runner skips a None `pop_last`).
    pop_last = None  # type: ignore[assignment]


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """A default v1 `ConversationStore` on ``path``."""
    import convstore

    source = os.environ.get("BENCH_V1_SRC", "")
    if not source or not Path(convstore.__file__).is_relative_to(source):
        raise ImportError(f"convstore v1 is not on PYTHONPATH (BENCH_V1_SRC={source!r})")
    async with convstore.ConversationStore(f"sqlite+aiosqlite:///{path}") as store:
        yield _V1Store(store)


if __name__ == "__main__":
    main(PEER, open_store)
