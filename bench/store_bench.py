"""Append and load throughput of ConversationStore on an SQLite file.

Run: ``.venv/bin/python -m bench.store_bench [--turns 500] [--repeat 5]``. Prints medians of
append items/s (one append per turn), full-load ms and last-50 ms (back to back, and each
after a pause) over fresh databases.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path

from bench.workload import ITEMS_PER_TURN, turn_messages
from convstore import Conversation, ConversationStore


async def _timed(load: Awaitable[Conversation], messages: int) -> float:
    """Seconds one load takes. The previous result is freed, and garbage collected, before the
    clock starts (so neither is billed to this call); GC stays enabled during the call."""
    gc.collect()
    start = time.perf_counter()
    conversation = await load
    elapsed = time.perf_counter() - start
    assert len(conversation.messages) == messages
    return elapsed


async def _back_to_back(load: Awaitable[Conversation], messages: int) -> float:
    """Seconds one load takes right after the previous one (as `bench.compare` measures)."""
    start = time.perf_counter()
    conversation = await load
    elapsed = time.perf_counter() - start
    assert len(conversation.messages) == messages
    return elapsed


async def _run_once(
    directory: Path, turns: int, synchronous: str
) -> tuple[float, float, float, float]:
    batches = [turn_messages(n) for n in range(turns)]
    url = f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    async with ConversationStore(url, sqlite_synchronous=synchronous) as store:  # type: ignore[arg-type]
        conv = await store.create_conversation(title="bench")
        start = time.perf_counter()
        for batch in batches:
            await store.append(conv.id, batch)
        append_s = time.perf_counter() - start
        loads = [await _timed(store.load(conv.id), turns * 5) for _ in range(10)]
        warm = [await _back_to_back(store.load(conv.id, last=50), 50) for _ in range(50)]
        cold = [await _timed(store.load(conv.id, last=50), 50) for _ in range(50)]
    return (
        turns * ITEMS_PER_TURN / append_s,
        min(loads) * 1e3,
        statistics.median(warm) * 1e3,
        statistics.median(cold) * 1e3,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--synchronous", choices=["full", "normal"], default="full")
    args = parser.parse_args()
    results = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(asyncio.run(_run_once(Path(tmp), args.turns, args.synchronous)))
    items = statistics.median(r[0] for r in results)
    full = statistics.median(r[1] for r in results)
    warm = statistics.median(r[2] for r in results)
    cold = statistics.median(r[3] for r in results)
    print(f"workload: {args.turns} turns x {ITEMS_PER_TURN} items, synchronous={args.synchronous}")
    print(f"append:    {items:>9,.0f} items/s   (median of {args.repeat} runs)")
    print(f"full load: {full:>9.2f} ms        ({args.turns * 5} messages)")
    print(f"last-50:   {warm:>9.3f} ms        (back to back, as bench.compare measures it)")
    # On a shared VM an idle pause leaves the CPU cold: the same CPU work then takes about
    # twice as long, with or without threads (docs/performance.md).
    print(f"last-50:   {cold:>9.3f} ms        (each after a gc.collect(): a cold call)")


if __name__ == "__main__":
    main()
