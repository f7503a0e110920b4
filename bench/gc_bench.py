"""gc throughput: blobs deleted per second by ``collect_garbage(grace=0)`` in a local directory.

Run: ``python -m bench.gc_bench [--blobs 2000] [--reps 5] [--database sqlite,postgresql]
[--json-out F]`` (PostgreSQL needs the cluster `bench.compare` starts, or
``BENCH_POSTGRES_DSN``). `bench.listing_bench` runs `gc_rate` for its scale section.

Each repetition stores ``--blobs`` distinct small attachments through ``append`` (100 per
message), deletes their conversation so every blob is garbage, and times one collection with
``grace=0``: alone, then while an application appends one message after another beside it
(interleaved, alone first and beside first in turn). Medians are printed with the machine's
load average: on a shared machine the rate is mostly the share of disk and CPU gc gets. Then,
when valgrind is installed, one collection alone runs under callgrind (every thread counted:
the event loop, the database driver's and the blob store's worker threads) and its
instructions per deleted blob are printed: that count is what a change to gc's own work moves.

Prints numbers only; asserts nothing but that every blob was deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.databases import database_url, each_database, emit
from bench.harness.callgrind import Counter, counted_run, dry_run, unavailable
from convstore import ConversationStore, FilePart, Message, collect_garbage


async def _garbage(store: ConversationStore, count: int, label: str) -> None:
    """``count`` distinct blobs in the store's blob directory that nothing references."""
    conversation = await store.create_conversation(title="gc")
    for start in range(0, count, 100):
        files = [
            FilePart.from_bytes(f"blob {start + k} {label}".encode() * 20, media_type="text/plain")
            for k in range(min(100, count - start))
        ]
        await store.append(conversation.id, [Message.user("files", *files)])
    await store.delete_conversation(conversation.id)


async def gc_rate(url: str, blobs: str, count: int, *, beside_writer: bool) -> float:
    """Blobs/s of one ``grace=0`` collection of ``count`` unreferenced blobs at ``blobs``."""
    async with ConversationStore(url, blobs=blobs) as store:
        await _garbage(store, count, blobs)
        stop = asyncio.Event()

        async def writer() -> None:
            chat = await store.create_conversation(title="beside gc")
            turn = 0
            while not stop.is_set():
                await store.append(chat.id, [Message.user(f"turn {turn}")])
                turn += 1

        task = asyncio.create_task(writer()) if beside_writer else None
        began = time.perf_counter()
        report = await collect_garbage(store, grace=timedelta(0))
        elapsed = time.perf_counter() - began
        stop.set()
        if task is not None:
            await task
    if len(report.deleted) != count:
        raise AssertionError(f"gc deleted {len(report.deleted)} of {count} blobs")
    return count / elapsed


async def run(database: str, count: int, reps: int, directory: Path) -> dict[str, Any]:
    url = await database_url(database, directory)
    async with ConversationStore(url, blobs=str(directory / "unused"), auto_migrate=True):
        pass
    rates: dict[str, list[float]] = {"alone": [], "beside_writer": []}
    for rep in range(reps):
        order = ["alone", "beside_writer"] if rep % 2 == 0 else ["beside_writer", "alone"]
        for kind in order:
            blobs = f"file://{directory / f'blobs-{kind}-{rep}'}"
            rate = await gc_rate(url, blobs, count, beside_writer=kind == "beside_writer")
            rates[kind].append(rate)
    return {
        "database": database,
        "blobs": count,
        "gc_blobs_s": statistics.median(rates["alone"]),
        "gc_blobs_s_beside_writer": statistics.median(rates["beside_writer"]),
        "runs_blobs_s": rates,
        "load_average": os.getloadavg()[0],
    }


# -- one collection under callgrind ----------------------------------------------------------


async def _counted(directory: Path, count: int, counter: Counter) -> None:
    url = f"sqlite+aiosqlite:///{directory / 'gc.db'}"
    async with ConversationStore(url, blobs=str(directory / "blobs"), auto_migrate=True) as store:
        await _garbage(store, count, "counted")
        with counter.section("gc"):
            report = await collect_garbage(store, grace=timedelta(0))
    if len(report.deleted) != count:
        raise AssertionError(f"gc deleted {len(report.deleted)} of {count} blobs")


def callgrind(count: int, timeout: float) -> dict[str, Any]:
    """Instructions per deleted blob of one SQLite collection, or why there are none."""
    reason = unavailable()
    if reason is not None:
        return {"gc_callgrind": f"skipped: {reason}"}
    with tempfile.TemporaryDirectory(prefix="bench-gc-cg-") as work:
        arguments = ["--inside", work, "--blobs", str(count)]
        totals, failure = counted_run("bench.gc_bench", arguments, timeout)
    if failure is not None or "gc" not in totals:
        return {"gc_callgrind": f"failed: {failure or 'nothing counted'}"}
    if dry_run():
        return {"gc_callgrind": "dry run: nothing counted"}
    return {"gc_callgrind": "ok", "gc_instructions_per_blob": totals["gc"] / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--callgrind-blobs", type=int, default=1000, help="0: no callgrind")
    parser.add_argument("--tmpdir")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside is not None:
        asyncio.run(_counted(args.inside, args.blobs, Counter(args.library)))
        return
    output = each_database(
        args.database,
        lambda database, tmp: run(database, args.blobs, args.reps, tmp),
        prefix="bench-gc-",
        tmpdir=args.tmpdir,
    )
    if args.callgrind_blobs:
        output.update(callgrind(args.callgrind_blobs, timeout=1800))
    emit(output, args.json_out)


if __name__ == "__main__":
    main()
