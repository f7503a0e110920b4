"""The SQLite backend: raw driver statements, one thread hop per operation.

Measured on the target machine (docs/performance.md): aiosqlite hands each statement to its
thread and back, so the cost of an append is the number of hops, not SQLite. Here a whole
operation (``fn(tx)``, every statement of it) runs as one function in the connection's own
thread, on statements compiled once from the shared Core definitions.

This module owns the backend itself: its connections' lifecycle, the group-commit writer, the
reader pool and statement tracing. What runs inside a driver thread lives beside it: the
transactions and the WAL bound in `convstore.db.sqlite.tx`, schema checks and migrations in
`convstore.db.sqlite._schema`, opening and configuring connections in
`convstore.db.sqlite.connections`.

Invariants:

- One long-lived writer connection per store: writes from this process queue on its thread
  instead of fighting for SQLite's lock. Writes start with ``BEGIN IMMEDIATE`` so a
  transaction never has to upgrade a read lock (the classic SQLite deadlock); busy/locked
  errors from other processes are waited out by ``busy_timeout`` and then retried as a whole
  transaction, a bounded number of times.
- Group commit: a write that finds the writer idle runs at once, from its caller's task;
  writes that arrive while the writer is busy run together, next, in one transaction, each
  inside its own savepoint, and share its one ``COMMIT`` (one fsync). Each write is still
  all or nothing: one that fails is rolled back to its savepoint and fails alone; none is
  reported done before the ``COMMIT`` that makes it durable. A write alone in its group runs
  exactly as it would without grouping.
- Reads run in a read transaction (a consistent WAL snapshot across their statements) on a
  small pool of ``query_only`` reader connections, so a load never waits for a writer's fsync.
- WAL journal; ``synchronous=FULL`` by default (durable across power loss, as the peer stores
  compared in the benchmarks are), ``NORMAL`` on request; foreign keys enforced.
- An in-memory database (``sqlite+aiosqlite://``) has a single connection for everything.
- Migrations run on the writer connection in its thread, inside one transaction.
- One hop per call: every statement of a read or write (and the WAL bound after a write) runs
  in one hand-off to the connection's thread. `hops` counts hand-offs (a test holds each store
  operation to one; a context switch and a wait that no instruction count shows).
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import aiosqlite
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

from convstore._compat.sqlite_driver import adapt_none_quickly, run_in_connection_thread
from convstore.db.errors import is_transient, translate
from convstore.db.sqlite._schema import migrate_schema, prepare_schema
from convstore.db.sqlite.connections import (
    backoff,
    close_quietly,
    configure,
    daemon_connection,
    install_trace,
    translated,
)
from convstore.db.sqlite.tx import (
    WAL_AUTOCHECKPOINT_PAGES,
    Outcome,
    StatementCache,
    in_group_bounded,
    in_transaction,
    wal_file,
)
from convstore.db.statements import Statements
from convstore.db.tx import Tx
from convstore.errors import ClosedError

__all__ = ["SqliteBackend"]

T = TypeVar("T")

_MAX_ATTEMPTS: Final = 8


@dataclass(slots=True)
class _Write:
    fn: Callable[[Tx], Any]
    future: asyncio.Future[Any]


class SqliteBackend:
    """Runs store operations on an SQLite file (or in memory) through aiosqlite."""

    dialect_name: Final = "sqlite"

    def __init__(
        self,
        url: URL,
        *,
        synchronous: Literal["full", "normal"] = "full",
        busy_timeout: float = 5.0,
        max_readers: int = 4,
        auto_migrate: bool = True,
    ) -> None:
        database = url.database
        self._memory = database in (None, "", ":memory:")
        self._path = None if self._memory else Path(str(database))
        self._wal = None if self._path is None else wal_file(self._path)
        self._synchronous = synchronous.upper()
        self._busy_ms = int(busy_timeout * 1000)
        self._max_readers = 1 if self._memory else max(1, max_readers)
        self._auto_migrate = auto_migrate
        self.statements: Final = Statements.for_dialect("sqlite")
        self._cache = StatementCache()
        self._writer: aiosqlite.Connection | None = None
        self._readers: list[aiosqlite.Connection] = []
        self._opening = 0
        """Reader connections being opened (they count against ``max_readers``)."""
        self._idle: list[aiosqlite.Connection] = []
        self._waiting: collections.deque[asyncio.Future[aiosqlite.Connection]] = collections.deque()
        """Readers waiting for a connection, in arrival order (see `_checkout_reader`)."""
        self._listeners: list[Callable[[str], None]] = []
        self._queued: list[_Write] = []
        self._flusher: asyncio.Task[None] | None = None
        """The task running queued writes; held so that it is not garbage-collected mid-run."""
        self._writes_done = asyncio.Event()
        """Clear while a write runs (from its caller's task or the flusher): new ones queue."""
        self._writes_done.set()
        self.write_listeners: list[Callable[[], None]] = []
        """Called (on the event loop) after each write commits: derived data that follows
        writes (the deferred search index) learns of them without a statement."""
        self.hops = 0
        """Hand-offs of work to a connection's thread so far (opening connections included)."""

    @property
    def writing(self) -> bool:
        """Whether a write of this backend is running or queued."""
        return not self._writes_done.is_set()

    @property
    def database_path(self) -> Path | None:
        """The database file, or ``None`` in memory."""
        return self._path

    @property
    def one_statement(self) -> None:
        """None: every SQLite operation is one hop to a connection's thread already."""
        return None

    async def connect(self) -> None:
        """Connect the writer, without looking at the schema (for migrations)."""
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._writer is None:
            self._writer = await self._connect(reader=False)

    async def open(self) -> None:
        """Connect and check (or, for a new database, create) the schema."""
        await self.connect()
        try:
            await self._check_schema()
        except BaseException:
            await self.close()
            raise

    async def _check_schema(self) -> None:
        # Stores racing to create one new file all find it empty; the loser's migration meets
        # the winner's committed schema (a stale snapshot or a lock past the busy timeout).
        # Checking again finds the schema current, so lock errors retry the whole check.
        writer = self._require_writer()
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                await self._hop(writer, prepare_schema, self._auto_migrate)
            except (sqlite3.Error, sa_exc.SQLAlchemyError) as exc:
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await backoff(attempt)
                    continue
                raise translate(exc) from exc
            return

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision`` on the writer connection."""
        await self._call(self._require_writer(), migrate_schema, revision)

    async def _connect(self, *, reader: bool) -> aiosqlite.Connection:
        """A configured connection; lock contention while configuring it is retried."""
        adapt_none_quickly()
        target = ":memory:" if self._path is None else str(self._path)
        pragmas = [f"PRAGMA busy_timeout = {self._busy_ms}", "PRAGMA foreign_keys = ON"]
        if reader:
            pragmas.append("PRAGMA query_only = ON")
        else:
            if self._path is not None:
                pragmas.append("PRAGMA journal_mode = WAL")
            pragmas.append(f"PRAGMA synchronous = {self._synchronous}")
            pragmas.append(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            # Deleted rows are overwritten, whatever the build's default (issue 32: an erased
            # tenant's text must not stay in free pages).
            pragmas.append("PRAGMA secure_delete = ON")
        trace = self._trace if self._listeners else None
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                self.hops += 1  # aiosqlite opens the connection in its thread
                conn = await daemon_connection(target)
            except sqlite3.Error as exc:
                raise translate(exc) from exc
            try:
                await self._hop(conn, configure, pragmas, trace)
            except BaseException as exc:
                await close_quietly(conn)
                if not isinstance(exc, sqlite3.Error):
                    raise
                # Stores racing to create one new file: switching it to WAL needs a lock
                # that SQLite refuses at once (busy handler or not) while another holds it.
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await backoff(attempt)
                    continue
                raise translate(exc) from exc
            return conn
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _require_writer(self) -> aiosqlite.Connection:
        if self._writer is None:
            raise ClosedError("the store is not open: use `async with ConversationStore(...)`")
        return self._writer

    def _hop(self, conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> Awaitable[T]:
        """``fn(raw, *args)`` in ``conn``'s thread: one hand-off, counted."""
        self.hops += 1
        awaitable: Awaitable[T] = run_in_connection_thread(conn, fn, *args)
        return awaitable

    async def _call(self, conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
        try:
            result: T = await self._hop(conn, fn, *args)
        except (sqlite3.Error, sa_exc.SQLAlchemyError) as exc:
            # SQLAlchemy errors come from schema checks and migrations (Alembic runs on a
            # SQLAlchemy connection over this driver connection): a lock held past the busy
            # timeout, a full disk while creating the schema.
            raise translate(exc) from exc
        return result

    async def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in a write transaction (see group commit in the module docstring).

        Lock contention from other processes retries the whole transaction, a bounded number
        of times. If the caller is cancelled before its write has started, it never starts;
        once started, it runs to its end (and may commit).
        """
        self._require_writer()
        write = _Write(fn, asyncio.get_running_loop().create_future())
        if not self._writes_done.is_set():
            self._queued.append(write)
        else:
            # An idle writer: run it from this task, with no hand-off to the flusher.
            self._writes_done.clear()
            try:
                await self._run_group([write])
            finally:
                self._hand_over()
        result: T = await write.future
        for listener in self.write_listeners:
            listener()
        return result

    def _hand_over(self) -> None:
        """The writer is done with a write: the flusher takes what queued meanwhile."""
        if self._queued:
            self._flusher = asyncio.get_running_loop().create_task(self._flush())
        else:
            self._writes_done.set()

    async def _flush(self) -> None:
        """Run the queued writes, a group at a time, until none is left."""
        group: list[_Write] = []
        try:
            while self._queued:
                group = [w for w in self._queued if not w.future.done()]
                self._queued = []
                if group:
                    await self._run_group(group)
                # The writers just answered run first: their next writes join the next group
                # instead of each finding the writer idle and committing alone.
                await asyncio.sleep(0)
        except BaseException as exc:
            # Only this task's own failure (the store closed under it, or the task cancelled
            # with its loop) gets here; a write already in the driver thread may still commit.
            for write in [*group, *self._queued]:
                if write.future.done():
                    continue
                if isinstance(exc, Exception):
                    write.future.set_exception(exc)
                else:
                    write.future.cancel()
            self._queued = []
            if not isinstance(exc, Exception):
                raise
        finally:
            self._flusher = None
            self._writes_done.set()

    async def _run_group(self, group: list[_Write]) -> None:
        writer = self._require_writer()
        fns = [w.fn for w in group]
        outcomes: list[Outcome] | None = None
        failure: Exception | None = None
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                outcomes = await self._hop(
                    writer, in_group_bounded, fns, self.statements, self._cache, self._wal
                )
            except sqlite3.Error as exc:
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await backoff(attempt)
                    continue
                failure = translated(exc)
            except Exception as exc:  # handed to every write of the group
                failure = exc
            break
        for index, write in enumerate(group):
            if write.future.done():  # its caller was cancelled meanwhile
                continue
            if outcomes is None:
                assert failure is not None
                write.future.set_exception(failure)
            elif outcomes[index][0]:
                write.future.set_result(outcomes[index][1])
            else:
                error = outcomes[index][1]
                write.future.set_exception(
                    translated(error) if isinstance(error, sqlite3.Error) else error
                )

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot)."""
        writer = self._require_writer()
        if self._memory:
            return await self._call(
                writer, in_transaction, "BEGIN", fn, self.statements, self._cache
            )
        conn = await self._checkout_reader()
        try:
            return await self._call(conn, in_transaction, "BEGIN", fn, self.statements, self._cache)
        finally:
            self._checkin_reader(conn)

    async def _checkout_reader(self) -> aiosqlite.Connection:
        """A reader connection, first come first served.

        A returned connection goes straight to the longest-waiting reader, never back into a
        pool that the returning task could take it from again at once: with a plain queue, a
        loop of short reads kept overtaking a `load` that had been waiting for seconds.
        """
        if self._idle and not self._waiting:
            return self._idle.pop()
        if not self._waiting and len(self._readers) + self._opening < self._max_readers:
            self._opening += 1
            try:
                conn = await self._connect(reader=True)
            finally:
                self._opening -= 1
            self._readers.append(conn)
            return conn
        turn: asyncio.Future[aiosqlite.Connection] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            return await turn
        except BaseException:
            if turn.done() and not turn.cancelled():
                self._checkin_reader(turn.result())  # handed over as the waiter was cancelled
            else:
                self._waiting.remove(turn)
            raise

    def _checkin_reader(self, conn: aiosqlite.Connection) -> None:
        if conn not in self._readers:
            return  # the store closed (and closed it) meanwhile
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(conn)
                return
        self._idle.append(conn)

    async def compact(self) -> None:
        """Rewrite the file without its free pages (``VACUUM``) and empty the WAL.

        Deleted rows' bytes can linger in free pages and in the WAL (``secure_delete`` zeroes
        pages as they are freed, where the build or the store turns it on); this leaves the
        live rows only. Writes wait meanwhile; it takes about as long as copying the file.
        """
        writer = self._require_writer()
        while not self._writes_done.is_set():
            await self._writes_done.wait()
        self._writes_done.clear()
        try:
            await self._call(writer, _vacuum)
        finally:
            self._hand_over()

    async def close(self) -> None:
        """Close every connection (idempotent), once the writes already queued are done."""
        await self._writes_done.wait()
        connections = [*self._readers, *([self._writer] if self._writer else [])]
        self._writer = None
        self._readers = []
        self._idle = []
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_exception(ClosedError("the store was closed while a read waited"))
        for conn in connections:
            await close_quietly(conn)

    # Observability, for tests and debugging: every SQL statement any connection runs.

    def add_statement_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(sql)`` for each statement; returns a function that removes it.

        Only connections opened after the first listener is added report statements, so add
        listeners before opening, or use `trace_all` on an open backend.
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def trace_all(self) -> None:
        """Start reporting statements on the connections already open."""
        for conn in [*self._readers, *([self._writer] if self._writer else [])]:
            await self._hop(conn, install_trace, self._trace)

    def _trace(self, sql: str) -> None:
        for listener in list(self._listeners):
            listener(sql)


def _vacuum(raw: sqlite3.Connection) -> None:
    raw.execute("VACUUM")
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
