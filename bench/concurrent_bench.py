"""Concurrent append throughput: 20 conversations x 50 turns, one writer task per conversation.

Run: ``.venv/bin/python -m bench.concurrent_bench [--repeat 5] [--turns 50] [--no-postgres]``.

The workload is `bench.workload.turn_messages` (six items per turn, one append per turn); the
20 writers run concurrently, each on a conversation of its own. Variants:

- ``sqlite``: one store, tasks sharing it, on a fresh SQLite file (``synchronous`` as given,
  ``full`` by default, the store's default);
- ``sqlite x4 processes``: four spawned processes with a store each on the same fresh file, the
  conversations split between them (they contend for SQLite's single write lock);
- ``postgresql``: one store on a fresh database of a throwaway cluster
  (``BENCH_POSTGRES_DSN``, or a throwaway cluster like the tests': durability off there);
- ``postgresql x4 processes``: as for SQLite.

Each variant is repeated; medians are printed: items/s (wall time from the first append to
the last), append latency p50/p95, and errors (appends that raised; the benchmark counts them
and asserts nothing). Process start-up is not timed: workers open their store and wait at a
barrier first.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.fixtures import postgres_cluster
from bench.peers.runner import fresh_postgres_database
from bench.workload import ITEMS_PER_TURN, turn_messages
from convstore import ConversationStore, ConvstoreError

CONVERSATIONS = 20
PROCESSES = 4


@dataclass(frozen=True)
class Run:
    """One repetition of one variant."""

    items_per_s: float
    errors: int
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class _Timings:
    started: float
    finished: float
    latencies: list[float]
    errors: int


async def _write(store: ConversationStore, conversations: Sequence[str], turns: int) -> _Timings:
    """One writer task per conversation, all at once; the timings of every append."""
    batches = [turn_messages(n) for n in range(turns)]
    latencies: list[float] = []
    errors = 0

    async def writer(cid: str) -> None:
        nonlocal errors
        for batch in batches:
            start = time.monotonic()
            try:
                await store.append(cid, batch)
            except ConvstoreError:
                errors += 1
                continue
            latencies.append(time.monotonic() - start)

    started = time.monotonic()
    await asyncio.gather(*(writer(cid) for cid in conversations))
    return _Timings(started, time.monotonic(), latencies, errors)


def _summarise(timings: Sequence[_Timings], appends: int) -> Run:
    latencies = sorted(x for t in timings for x in t.latencies)
    wall = max(t.finished for t in timings) - min(t.started for t in timings)
    errors = sum(t.errors for t in timings)
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    return Run(
        items_per_s=(appends - errors) * ITEMS_PER_TURN / wall,
        errors=errors,
        p50_ms=(statistics.median(latencies) if latencies else float("nan")) * 1e3,
        p95_ms=p95 * 1e3,
    )


async def _create(url: str, count: int, *, auto_migrate: bool) -> list[str]:
    async with ConversationStore(url, blobs="memory://bench", auto_migrate=auto_migrate) as store:
        return [(await store.create_conversation(title=f"bench {i}")).id for i in range(count)]


async def _in_process(url: str, turns: int, synchronous: str) -> Run:
    conversations = await _create(url, CONVERSATIONS, auto_migrate=True)
    async with ConversationStore(
        url,
        blobs="memory://bench",
        sqlite_synchronous=synchronous,  # type: ignore[arg-type]
    ) as store:
        timings = await _write(store, conversations, turns)
    return _summarise([timings], CONVERSATIONS * turns)


def _worker(
    url: str, conversations: list[str], turns: int, synchronous: str, barrier: Any, results: Any
) -> None:
    async def main() -> _Timings:
        async with ConversationStore(
            url,
            blobs="memory://bench",
            sqlite_synchronous=synchronous,  # type: ignore[arg-type]
        ) as store:
            await asyncio.to_thread(barrier.wait, 120)
            return await _write(store, conversations, turns)

    try:
        results.put(asyncio.run(main()))
    except BaseException as exc:  # the parent reports it instead of waiting for a result
        barrier.abort()
        results.put(f"worker failed: {exc!r}")


def _processes(url: str, turns: int, synchronous: str, processes: int = PROCESSES) -> Run:
    conversations = asyncio.run(_create(url, CONVERSATIONS, auto_migrate=True))
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    shares = [conversations[i::processes] for i in range(processes)]
    workers = [
        context.Process(target=_worker, args=(url, share, turns, synchronous, barrier, results))
        for share in shares
    ]
    for worker in workers:
        worker.start()
    timings = [results.get(timeout=600) for _ in workers]
    failed = [t for t in timings if isinstance(t, str)]
    if failed:
        raise RuntimeError("; ".join(failed))
    for worker in workers:
        worker.join(60)
    results.close()
    results.join_thread()
    return _summarise(timings, CONVERSATIONS * turns)


def _median(runs: Sequence[Run]) -> Run:
    return Run(
        items_per_s=statistics.median(r.items_per_s for r in runs),
        errors=sum(r.errors for r in runs),
        p50_ms=statistics.median(r.p50_ms for r in runs),
        p95_ms=statistics.median(r.p95_ms for r in runs),
    )


def _report(name: str, runs: Sequence[Run]) -> None:
    median = _median(runs)
    print(
        f"{name:<26} {median.items_per_s:>9,.0f} items/s   p50 {median.p50_ms:>6.1f} ms   "
        f"p95 {median.p95_ms:>6.1f} ms   errors {median.errors}   "
        f"(runs: {', '.join(f'{r.items_per_s:,.0f}' for r in runs)})",
        flush=True,
    )


def _repeat(repeat: int, once: Callable[[], Run]) -> list[Run]:
    return [once() for _ in range(repeat)]


def _sqlite_url(directory: str) -> str:
    return f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"


def _sqlite_once(turns: int, synchronous: str, *, processes: int) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        url = _sqlite_url(tmp)
        if processes:
            return _processes(url, turns, synchronous, processes)
        return asyncio.run(_in_process(url, turns, synchronous))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--synchronous", choices=["full", "normal"], default="full")
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL runs")
    parser.add_argument("--processes", type=int, default=PROCESSES, help="writer processes")
    args = parser.parse_args()
    turns, sync = args.turns, args.synchronous
    appends = CONVERSATIONS * turns
    print(
        f"workload: {CONVERSATIONS} conversations x {turns} turns x {ITEMS_PER_TURN} items "
        f"({appends:,} appends, {appends * ITEMS_PER_TURN:,} items), one writer per "
        f"conversation; medians of {args.repeat} runs; SQLite synchronous={sync}"
    )
    processes = args.processes
    _report("sqlite", _repeat(args.repeat, lambda: _sqlite_once(turns, sync, processes=0)))
    _report(
        f"sqlite x{processes} processes",
        _repeat(args.repeat, lambda: _sqlite_once(turns, sync, processes=processes)),
    )
    if args.no_postgres:
        return
    with postgres_cluster(not os.environ.get("BENCH_POSTGRES_DSN")) as (env, _):
        dsn = env.get("BENCH_POSTGRES_DSN") or os.environ["BENCH_POSTGRES_DSN"]

        def fresh_database() -> str:
            name = asyncio.run(fresh_postgres_database("bench", dsn))
            url = f"{dsn.replace('postgresql://', 'postgresql+asyncpg://', 1)}/{name}"
            asyncio.run(_create(url, 0, auto_migrate=True))
            return url

        _report(
            "postgresql",
            _repeat(args.repeat, lambda: asyncio.run(_in_process(fresh_database(), turns, sync))),
        )
        _report(
            f"postgresql x{processes} processes",
            _repeat(args.repeat, lambda: _processes(fresh_database(), turns, sync, processes)),
        )


if __name__ == "__main__":
    main()
