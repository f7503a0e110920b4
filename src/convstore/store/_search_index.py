"""Keeping the deferred search index caught up: at search time, and when the writer is idle.

`convstore.db.search_index` describes the index and its catch-up statement set. This module
decides when they run:

- **At search time** (`SearchIndex.search`): the query runs on a reader in one hop, after a
  cheap check, in the same snapshot, that nothing is pending. When something is, the catch-up
  runs (in short write transactions of bounded size, up to the newest row it found at its
  start) and the query runs again in a new snapshot: everything committed before the search
  started is then indexed, and a row deleted or changed since it was indexed is excluded by
  the log the query reads.
- **In the background**: every write to the store tells `SearchIndex` (a backend write
  listener: a clock reading, nothing else); once no write is in flight and none has ended for
  `IDLE_SECONDS` (or `MAX_DELAY_SECONDS` have passed with writes never pausing), the catch-up
  runs and then a few bounded steps of FTS5 segment merging, each its own transaction on one
  tenant's table (the lowest written since merging last left it whole), while the writer
  stays idle. So a search rarely finds more than the last turn pending, and
  merging never runs inside an append or a search. Last, the WAL is checkpointed there once it
  passes a megabyte (`convstore.db.sqlite.tx.checkpoint_when_idle`), so appends do not pay for
  it. A search that has to catch up meanwhile waits for one background step at most: the
  background gives way to it between steps (but runs one merge step a round regardless, so
  searches that never pause cannot starve merging).
- **After an erase** (`SearchIndex.purge`): catch up, drop the tenant's own table (no other
  table ever held its documents; ``secure_delete`` overwrites the freed pages) and checkpoint
  the WAL, so the erased text is nowhere in the database files.

On an SQLite file the catch-up runs on a connection of its own with ``synchronous=NORMAL``:
the index, map, log and mark commit or roll back together, so a commit lost to a power cut
only means the next catch-up redoes it, and no fsync is spent on derived data. That connection
takes SQLite's write lock like any writer (``BEGIN IMMEDIATE``, ``busy_timeout``); lock
contention is retried. An in-memory database catches up through the backend's own writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

import aiosqlite

from convstore._compat.sqlite_driver import finish_queued, run_in_connection_thread
from convstore.db import search_index
from convstore.db.backend import Backend
from convstore.db.errors import is_transient, translate
from convstore.db.sqlite.connections import close_quietly, configure, daemon_connection
from convstore.db.sqlite.tx import (
    StatementCache,
    bound_wal,
    checkpoint_when_idle,
    in_transaction,
    wal_file,
)
from convstore.db.statements import Statements
from convstore.db.tx import Tx

__all__ = ["IDLE_SECONDS", "MAX_DELAY_SECONDS", "SearchIndex"]

T = TypeVar("T")

IDLE_SECONDS: Final = 0.02
"""The writer idle this long: the background catch-up runs."""
MAX_DELAY_SECONDS: Final = 0.5
"""Writes that never pause this long do not hold the background catch-up off longer."""
MERGE_PAGES: Final = 64
"""Pages of FTS5 merging per background step (one short transaction each)."""
MERGE_STEPS: Final = 16
"""Background merge steps at most per idle period."""
_ATTEMPTS: Final = 8
_BUSY_MS: Final = 5000

_log = logging.getLogger(__name__)


def _in_write(
    raw: sqlite3.Connection,
    fn: Callable[[Tx], T],
    statements: Statements,
    cache: StatementCache,
    wal: Path,
) -> T:
    """``fn`` in one write transaction, then the WAL bound every writer keeps (`bound_wal`)."""
    result = in_transaction(raw, "BEGIN IMMEDIATE", fn, statements, cache)
    bound_wal(raw, wal)  # a bounded catch-up still writes up to ~0.5 MB of index
    return result


def _merge_step(
    raw: sqlite3.Connection, statements: Statements, cache: StatementCache, wal: Path
) -> bool:
    """One bounded merge step on one tenant's table; whether any table needed one."""
    step = functools.partial(search_index.merge_step, pages=MERGE_PAGES)
    return _in_write(raw, step, statements, cache, wal)


def _bounded_catch_up(tx: Tx, *, until: int | None) -> search_index.CaughtUp:
    return search_index.catch_up(tx, budget=search_index.CATCH_UP_BUDGET, until=until)


def _checkpoint(raw: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):  # busy: the next checkpoint copies it
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


class SearchIndex:
    """One store's deferred index: catch-ups at search time and in the background."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._sqlite = backend.dialect_name == "sqlite"
        self._path = backend.database_path
        self._wal = None if self._path is None else wal_file(self._path)
        self._conn: aiosqlite.Connection | None = None
        self._cache = StatementCache()
        self._lock = asyncio.Lock()
        self._last_write = 0.0
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.background = True
        """Whether idle-time catch-ups run (tests switch them off to see pending work)."""
        self._own: set[asyncio.Task[object] | None] = set()
        """Tasks running a catch-up through the backend's writer: not writes to follow."""
        self._searches_waiting = 0
        """Searches waiting for `_lock`: the background work stops at its next step for them."""
        backend.write_listeners.append(self._wrote)

    def start(self) -> None:
        """The store opened (again): background catch-ups may run."""
        self._closed = False

    # -- search time ------------------------------------------------------------------------

    async def catch_up(self) -> int:
        """Index everything committed so far; the number of new rows indexed.

        A search waiting here makes the background work give way at its next step (it checks
        `_searches_waiting`): the search pays for its own catch-up, never for merging.
        """
        self._searches_waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self._searches_waiting -= 1
        try:
            return await self._catch_up()
        finally:
            self._lock.release()

    async def rebuild(self) -> int:
        """Index every row from scratch (after anything that renumbers rowids)."""
        if not self._sqlite:
            return 0
        async with self._lock:
            caught_up = await self._write(lambda tx: search_index.catch_up(tx, rebuild=True))
            return caught_up.indexed

    async def purge(self, tenant: str) -> None:
        """After erasing ``tenant``: the index keeps nothing of it.

        Catch up, drop the tenant's table (no other table ever held its documents) and forget
        its slot, and empty the WAL.
        """
        if not self._sqlite:
            return  # PostgreSQL: the documents went with the rows (a foreign-key cascade)
        async with self._lock:
            await self._catch_up()
            await self._write(lambda tx: search_index.forget_tenant(tx, tenant))
            if self._wal is not None:
                await self._raw(_checkpoint)

    # -- the catch-up connection ------------------------------------------------------------

    async def _connection(self) -> aiosqlite.Connection:
        if self._conn is None:
            assert self._path is not None
            conn = await daemon_connection(str(self._path))
            pragmas = [
                f"PRAGMA busy_timeout = {_BUSY_MS}",
                "PRAGMA synchronous = NORMAL",
                "PRAGMA secure_delete = ON",
            ]
            try:
                await run_in_connection_thread(conn, configure, pragmas, None)
            except BaseException:
                await close_quietly(conn)
                raise
            self._conn = conn
        return self._conn

    async def _raw(self, fn: Callable[..., T], *args: object) -> T:
        conn = await self._connection()
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                result: T = await run_in_connection_thread(conn, fn, *args)
            except asyncio.CancelledError:
                # The background task is cancelled by `close`, or by a loop shutting down
                # with the store still open: the step goes on in the thread; wait for it, so
                # that it never hands its result to a closed loop.
                await finish_queued(conn)
                raise
            except sqlite3.Error as exc:
                if attempt < _ATTEMPTS and is_transient(exc):
                    await asyncio.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311
                    continue
                raise translate(exc) from exc
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _catch_up(self, *, yielding: bool = False) -> int:
        """Index what was committed before this call, in transactions of bounded size.

        Each transaction indexes about `search_index.CATCH_UP_BUDGET` characters at most, then
        lets the writer and the WAL bound in: a backlog of a thousand turns is not one
        transaction holding the write lock for a second and writing megabytes of WAL at once.
        ``yielding`` (the background's): stop after a step when a search waits; the search's
        own catch-up goes on from the mark this one left.
        """
        if not self._sqlite:
            return await self._write(search_index.pg_catch_up)
        indexed, until = 0, None
        while True:
            step = await self._write(functools.partial(_bounded_catch_up, until=until))
            indexed += step.indexed
            if step.done or (yielding and self._searches_waiting):
                return indexed
            until = step.until

    async def _write(self, fn: Callable[[Tx], T]) -> T:
        if self._wal is None:  # in memory, or PostgreSQL: the backend's own writes
            task = asyncio.current_task()
            self._own.add(task)
            try:
                return await self._backend.write(fn)
            finally:
                self._own.discard(task)
        return await self._raw(_in_write, fn, self._backend.statements, self._cache, self._wal)

    # -- background -------------------------------------------------------------------------

    def _wrote(self) -> None:
        """A write listener: remember when, and make sure the idle watcher runs."""
        if asyncio.current_task() in self._own:
            return
        loop = asyncio.get_running_loop()
        self._last_write = loop.time()
        if self.background and not self._closed and (self._task is None or self._task.done()):
            self._task = loop.create_task(self._when_idle())

    async def _when_idle(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            first = loop.time()
            while (idle := loop.time() - self._last_write) < IDLE_SECONDS or self._backend.writing:
                if loop.time() - first >= MAX_DELAY_SECONDS:
                    break
                await asyncio.sleep(max(IDLE_SECONDS - idle, IDLE_SECONDS / 4))
            if not self.background or self._closed:
                return  # switched off after this watcher started (tests), or closing
            seen = self._last_write
            try:
                async with self._lock:
                    await self._catch_up(yielding=True)
                    if self._wal is not None:
                        for step in range(MERGE_STEPS):
                            # One step even with a search waiting: searches that never pause
                            # must not leave the segments growing without bound.
                            waiting = step > 0 and self._searches_waiting > 0
                            if (
                                self._last_write != seen
                                or waiting
                                or not await self._raw(
                                    _merge_step, self._backend.statements, self._cache, self._wal
                                )
                            ):
                                break
                        if not self._searches_waiting:
                            await self._raw(checkpoint_when_idle, self._wal)
            except Exception:  # a search catches up itself and reports what fails
                _log.debug("background search catch-up failed", exc_info=True)
                return
            if not self._interrupted(seen):
                return

    def _interrupted(self, seen: float) -> bool:
        """Whether background work should stop: a write since ``seen``, or a search waiting."""
        return self._last_write != seen or self._searches_waiting > 0

    async def close(self) -> None:
        """Stop the background work (letting a catch-up in progress finish) and disconnect."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await close_quietly(conn)
