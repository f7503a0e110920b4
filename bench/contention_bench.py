"""Contention: listings beside the application, and gc beside 12 writers (issue 26, criteria 2-3).

Run: ``python -m bench.contention_bench [--database sqlite,postgresql] [--listing-seconds 20]
[--gc-seconds 60] [--json-out F]`` (PostgreSQL needs the cluster `bench.compare` starts, or
``BENCH_POSTGRES_DSN``).

The workloads are those of `tests.reliability.contention` (the tests run them briefly and
assert their behaviour; this prints their timings):

- four filtered listings paging in a loop beside a writer (2 kB messages to one conversation)
  and a reader (``load(last=50)`` of it), for ``--listing-seconds``, over ``--conversations``
  conversations (each filter matches 10 %): the reader's load p50/p99/max, pages listed,
  appends, and on SQLite the WAL's largest size (the store's real checkpoint bound, 32 MB);
- ``collect_garbage`` every ``--gc-interval`` seconds (grace ``--gc-grace``) beside 12 writers
  appending messages with files (a third shared between writers) and deleting half their
  conversations, for ``--gc-seconds``: appends, collections, blobs deleted, and the age of the
  oldest unreferenced blob after each collection (largest and median) against two grace
  periods; each collection must delete every blob that was garbage older than the grace period
  when it began (the run stops with an error otherwise; how many were due is printed), and
  afterwards every kept file is read back and ``fsck`` must find nothing missing.

Prints numbers only; the targets (p99 ≤ 100 ms, WAL ≤ 64 MB, garbage ≤ two graces) are judged
in the output, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.reliability.contention import (
    gc_beside_writers,
    listings_beside_io,
    populate,
    read_back_every_file,
)

from bench.databases import database_url, each_database, emit
from convstore import ConversationStore, fsck

MiB = 1024 * 1024


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def listings(url: str, conversations: int, seconds: float) -> dict[str, Any]:
    run = uuid.uuid4().hex
    async with ConversationStore(url, blobs="memory://contention", auto_migrate=True) as store:
        began = time.perf_counter()
        await populate(store, run, conversations)
        populated = time.perf_counter() - began
        prefix = "sqlite+aiosqlite:///"
        database = Path(url.removeprefix(prefix)) if url.startswith(prefix) else None
        wal = None if database is None else database.with_name(database.name + "-wal")
        seen = await listings_beside_io(store, run, seconds=seconds, wal=wal)
    p99 = _percentile(seen.loads_ms, 0.99)
    return {
        "conversations": conversations,
        "populate_s": populated,
        "seconds": seconds,
        "appends": seen.appended,
        "pages_listed": seen.pages,
        "loads": len(seen.loads_ms),
        "load_p50_ms": statistics.median(seen.loads_ms),
        "load_p99_ms": p99,
        "load_max_ms": max(seen.loads_ms),
        "load_p99_target_met": p99 <= 100,
        "wal_peak_mib": seen.wal_peak / MiB if wal is not None else None,
        "wal_target_met": seen.wal_peak <= 64 * MiB if wal is not None else None,
    }


async def gc_beside(url: str, blobs: Path, seconds: float, grace: float, interval: float) -> Any:
    async with ConversationStore(url, blobs=str(blobs), auto_migrate=True) as store:
        seen = await gc_beside_writers(
            store, writers=12, grace=timedelta(seconds=grace), interval=interval, seconds=seconds
        )
        files = await read_back_every_file(store, seen.kept)
        report = await fsck(store)
    worst = max(seen.garbage_ages_s, default=0.0)
    return {
        "seconds": seconds,
        "grace_s": grace,
        "interval_s": interval,
        "appends": seen.appended,
        "conversations_deleted": seen.deleted_conversations,
        "collections": seen.collections,
        "blobs_deleted": seen.blobs_deleted,
        "garbage_due_at_collection_start": seen.due,
        "oldest_garbage_max_s": worst,
        "oldest_garbage_median_s": statistics.median(seen.garbage_ages_s or [0.0]),
        "garbage_target_met": worst <= 2 * grace,
        "files_read_back": files,
        "missing": len(report.missing),
        "corrupted": len(report.corrupted),
    }


async def run(database: str, args: argparse.Namespace, directory: Path) -> dict[str, Any]:
    result: dict[str, Any] = {"database": database, "load_average": os.getloadavg()[0]}
    if args.listing_seconds:
        url = await database_url(database, directory / "listing")
        print(f"{database}: listings beside a writer and a reader …", file=sys.stderr, flush=True)
        result["listings"] = await listings(url, args.conversations, args.listing_seconds)
    if args.gc_seconds:
        url = await database_url(database, directory / "gc")
        print(f"{database}: gc beside 12 writers …", file=sys.stderr, flush=True)
        result["gc"] = await gc_beside(
            url, directory / "blobs", args.gc_seconds, args.gc_grace, args.gc_interval
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--listing-seconds", type=float, default=20.0)
    parser.add_argument("--gc-seconds", type=float, default=60.0)
    parser.add_argument("--gc-grace", type=float, default=5.0)
    parser.add_argument("--gc-interval", type=float, default=1.0)
    parser.add_argument("--tmpdir")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    output = each_database(
        args.database,
        lambda database, tmp: run(database, args, tmp),
        prefix="bench-contention-",
        tmpdir=args.tmpdir,
    )
    emit(output, args.json_out)


if __name__ == "__main__":
    main()
