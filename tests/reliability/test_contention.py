"""Listings, gc and the application's reads and writes running at once (issue 26).

Short runs of the workloads in `tests.reliability.contention`, ended by a count of appends
(unless a soak is asked for), never by a clock; `bench.contention_bench` runs them for 20 and
60 seconds and prints the timings (load p99, gc's lag), which no test asserts.

- Four filtered listings paging in a loop beside a writer and a reader: every page matches its
  filter, newest first; every load sees a whole window of the chat, never going back; the chat
  holds exactly what was appended; on SQLite the WAL stays within its checkpoint bound (shrunk
  here so that the run crosses it many times).
- A collector looping every second beside 12 writers whose appends share bytes with each other
  and with garbage (for 480 appends, or ``CONVSTORE_GC_SOAK_SECONDS``, e.g. 60): no append
  fails, every file of every kept conversation reads back, ``fsck`` finds nothing missing, and
  each collection deletes every blob that was garbage older than the grace period when it began
  (so none outlives it by more than an interval and a collection: with a one-second interval
  and collections shorter than the grace period, none is older than two grace periods; the
  bench prints the ages). Once the writers stop, a collection with no grace leaves no garbage.
"""

from __future__ import annotations

import os
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from convstore import ConversationStore
from convstore.db import sqlite_path
from convstore.db.sqlite import tx as sqlite_tx
from convstore.store.maintenance.garbage import fsck
from tests.reliability.contention import (
    checked_collection,
    gc_beside_writers,
    listings_beside_io,
    oldest_garbage_age,
    populate,
    read_back_every_file,
)
from tests.support.postgres import PostgresCluster


async def test_filtered_listings_beside_a_writer_and_a_reader(
    db_url: str, blobs_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bound = 256 * 1024
    monkeypatch.setattr(sqlite_tx, "WAL_CHECKPOINT_BYTES", bound)
    run = uuid.uuid4().hex  # the PostgreSQL database is shared by the session
    async with ConversationStore(db_url, blobs=blobs_url, auto_migrate=True) as store:
        # The bound below is the writer's and the readers'; the idle-time search catch-up
        # indexes the 600 conversations in one commit of its own, larger than the slack
        # (its own WAL bound: tests/db/test_sqlite_readers.py).
        store.search_index.background = False
        await populate(store, run, 600)
        database = sqlite_path(db_url)
        wal = None if database is None else database.with_name(database.name + "-wal")
        seen = await listings_beside_io(store, run, appends=150, wal=wal)
    assert seen.appended == 150
    assert seen.loads_ms and seen.pages
    if wal is not None:
        # Several times the bound was written; one commit may land on a WAL just under it.
        assert 0 < seen.wal_peak <= bound + 128 * 1024, f"the WAL reached {seen.wal_peak:,} bytes"


GC_SOAK_SECONDS = float(os.environ.get("CONVSTORE_GC_SOAK_SECONDS") or 0)
"""Run the gc test for this many seconds (issue 26 names 60) instead of 480 appends."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def own_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of this test's own: gc and fsck read every conversation's references."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"gc_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}"


async def test_gc_looping_beside_twelve_writers(own_db_url: str, tmp_path: Path) -> None:
    grace = timedelta(seconds=1)
    blobs = str(tmp_path / "blobs")
    async with ConversationStore(own_db_url, blobs=blobs, auto_migrate=True) as store:
        # Every collection checks that it deleted each blob that was garbage older than the
        # grace period when it began (`checked_collection`), so no garbage outlives the grace
        # period by more than one interval and one collection.
        seen = await gc_beside_writers(
            store,
            writers=12,
            grace=grace,
            interval=1.0,
            appends=None if GC_SOAK_SECONDS else 480,
            seconds=GC_SOAK_SECONDS or None,
            measure_garbage=False,
        )
        assert seen.collections >= 1 and seen.deleted_conversations >= 1
        assert await read_back_every_file(store, seen.kept) == 2 * 3 * len(seen.kept)
        report = await fsck(store)
        assert report.missing == [] and report.corrupted == []
        # The writers have stopped: one more conversation's files become garbage, and a
        # collection with no grace period takes every unreferenced blob, and nothing else.
        await store.delete_conversation(seen.kept.pop())
        _, due = await checked_collection(store, timedelta(0))
        assert due >= 1
        assert await oldest_garbage_age(store) == 0
        assert await read_back_every_file(store, seen.kept) == 2 * 3 * len(seen.kept)
