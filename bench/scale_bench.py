"""``load(last=50)`` and ``append`` on a 1,000-message and a 100,000-message conversation.

Run: ``python -m bench.scale_bench [--messages 100000] [--branches 100] --json-out F``. Run by
`bench.compare` for the current code and, with ``PYTHONPATH`` on the v1 source of d7b1e98, for
the code before the layout change (v1 has no branches: its large conversation is one chain of
the same length, and the report says so).

Both conversations live in one fresh SQLite file (the store's defaults). The large one
starts with its 100 branches: ten messages on the head, then a two-message branch from five
below it (edit and regenerate), whose tip the path continues from, a hundred times; the rest
is written in appends of 500 messages (`bench.workload.turn_messages`).
So the active path runs through 100 forks, then on to the 100,000th message.
Timed: ``load(id, last=50)``, back to back (``--lasts`` loads, median) and each after a
``gc.collect()``, on each conversation; then ``append`` of one more turn (five messages),
``--lasts`` times to each conversation in turn (median). Then `bench.moves_bench`: ``pop``,
``truncate``, ``switch_branch`` and a new branch at the end of each conversation and of a
100,000-message chain forked from the large one (wall medians, and callgrind instructions when
valgrind is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import moves_bench
from bench.workload import turn_messages


async def _fill(store: Any, cid: str, messages: int, branches: int, can_branch: bool) -> int:
    """Append ``messages`` messages, with ``branches`` branches first if the store has them."""
    turn = 0
    written = 0
    made = 0
    while can_branch and made < branches:
        stored = await store.append(cid, turn_messages(turn) + turn_messages(turn + 1))
        turn += 2
        head = stored[-1].seq
        await store.append(cid, turn_messages(10**7 + made)[:2], parent_seq=head - 5)
        made += 1
        written += len(stored) + 2
    batch: list[Any] = []
    while written < messages:
        while len(batch) < 500:
            batch.extend(turn_messages(turn))
            turn += 1
        stored = await store.append(cid, batch[: min(500, messages - written)])
        written += len(stored)
        batch = batch[len(stored) :]
    return made


async def _median_ms(store: Any, cid: str, times: int, collect: bool) -> float:
    samples = []
    for _ in range(times):
        if collect:
            gc.collect()
        start = time.perf_counter()
        loaded = await store.load(cid, last=50)
        samples.append(time.perf_counter() - start)
        assert len(loaded.messages) == 50
    return statistics.median(samples) * 1e3


async def run(messages: int, branches: int, lasts: int, moves_reps: int) -> dict[str, Any]:
    import convstore

    can_branch = "parent_seq" in inspect.signature(convstore.ConversationStore.append).parameters
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'scale.db'}"
        async with convstore.ConversationStore(url) as store:
            small = (await store.create_conversation(title="1k")).id
            await _fill(store, small, 1000, 0, can_branch)
            large = (await store.create_conversation(title="large")).id
            started = time.perf_counter()
            made = await _fill(store, large, messages, branches, can_branch)
            fill_s = time.perf_counter() - started
            result: dict[str, Any] = {
                "version": getattr(convstore, "__version__", "?"),
                "source": str(Path(convstore.__file__).parent),
                "messages": messages,
                "branches": made,
                "fill_s": fill_s,
            }
            for name, cid in (("small", small), ("large", large)):
                await _median_ms(store, cid, 5, collect=False)  # warm the statements
                result[f"{name}_last_ms"] = await _median_ms(store, cid, lasts, collect=False)
                result[f"{name}_last_cold_ms"] = await _median_ms(store, cid, lasts, collect=True)
            result.update(await _append_ms(store, {"small": small, "large": large}, lasts))
            moving = {"small": small, "large": large}
            if can_branch and moves_reps:
                moving["large_chain"] = await moves_bench.chain_of(store, large)
                result.update(await moves_bench.measure(store, moving, moves_reps))
        if can_branch and moves_reps:
            counted = moves_bench.callgrind(Path(tmp) / "scale.db", moving, reps=2, timeout=3600)
            result.update(counted)
    return result


async def _append_ms(store: Any, conversations: dict[str, str], times: int) -> dict[str, float]:
    """Median time of appending one turn (five messages) to each conversation, alternately."""
    samples: dict[str, list[float]] = {name: [] for name in conversations}
    for n in range(times + 5):  # the first five warm the statements
        for name, cid in conversations.items():
            payload = turn_messages(10**8 + n)  # call ids no earlier turn used
            start = time.perf_counter()
            await store.append(cid, payload)
            if n >= 5:
                samples[name].append(time.perf_counter() - start)
    return {f"{name}_append_ms": statistics.median(s) * 1e3 for name, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--branches", type=int, default=100)
    parser.add_argument("--lasts", type=int, default=50)
    parser.add_argument("--moves-reps", type=int, default=5, help="0: no moves (bench.moves_bench)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args.messages, args.branches, args.lasts, args.moves_reps))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
