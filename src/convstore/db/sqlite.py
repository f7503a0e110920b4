"""The SQLite backend: raw driver statements, one thread hop per operation.

Measured on the target machine (docs/performance.md): aiosqlite hands each statement to its
thread and back, so the cost of an append is the number of hops, not SQLite. Here a whole
operation (``fn(tx)``, every statement of it) runs as one function in the connection's own
thread, on statements compiled once from the shared Core definitions.

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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import aiosqlite
from sqlalchemy import Connection, Insert, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL
from sqlalchemy.pool import StaticPool

from convstore._compat.sqlite_driver import adapt_none_quickly, run_in_connection_thread
from convstore.db.errors import is_transient, translate
from convstore.db.migrations import (
    SchemaState,
    head_revision,
    schema_state,
    unknown_schema_error,
    upgrade_connection,
)
from convstore.db.statements import Statements
from convstore.db.tx import Codec, Row, SqliteCodec, Statement, Tx
from convstore.errors import ClosedError, SchemaOutOfDateError

__all__ = ["SqliteBackend"]

T = TypeVar("T")

_DIALECT: Final = sqlite_dialect.dialect(paramstyle="qmark")
_MAX_ATTEMPTS: Final = 8


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    literals: Mapping[str, Any]

    def bind(self, params: Mapping[str, Any] | None) -> tuple[Any, ...]:
        if params is None:
            return tuple(self.literals[n] for n in self.names)
        return tuple(params[n] if n in params else self.literals[n] for n in self.names)


class _StatementCache:
    """Core statement -> driver SQL, compiled once per statement object."""

    def __init__(self) -> None:
        self._compiled: dict[int, tuple[Statement, _Compiled]] = {}

    def get(self, stmt: Statement) -> _Compiled:
        hit = self._compiled.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        compiled = stmt.compile(dialect=_DIALECT)
        entry = _Compiled(
            sql=compiled.string,
            names=tuple(compiled.positiontup or ()),
            literals=dict(compiled.params),
        )
        self._compiled[id(stmt)] = (stmt, entry)
        return entry


class SqliteTx:
    """A `Tx` over a raw sqlite3 connection, used only inside its driver thread."""

    def __init__(
        self, raw: sqlite3.Connection, statements: Statements, cache: _StatementCache
    ) -> None:
        self.statements = statements
        self.codec: Codec = SqliteCodec()
        self._raw = raw
        self._cache = cache

    def fetch(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> list[Row]:
        compiled = self._cache.get(stmt)
        return self._raw.execute(compiled.sql, compiled.bind(params)).fetchall()

    def stream(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> Iterable[Row]:
        compiled = self._cache.get(stmt)
        cursor: Iterable[Row] = self._raw.execute(compiled.sql, compiled.bind(params))
        return cursor

    def execute(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> int:
        compiled = self._cache.get(stmt)
        return self._raw.execute(compiled.sql, compiled.bind(params)).rowcount

    def execute_many(self, stmt: Statement, params: Sequence[Mapping[str, Any]]) -> None:
        compiled = self._cache.get(stmt)
        self._raw.executemany(compiled.sql, [compiled.bind(p) for p in params])

    def insert_rows(self, stmt: Insert, rows: Sequence[Row]) -> None:
        if rows:
            self._raw.executemany(self._cache.get(stmt).sql, rows)


class _Borrowed:
    """Lends the writer's sqlite3 connection to a SQLAlchemy engine without letting it close it."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self._raw = raw

    def close(self) -> None:
        """The backend owns the connection; SQLAlchemy's pool must not close it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def _sqlalchemy_connection_on(raw: sqlite3.Connection) -> Connection:
    engine = create_engine("sqlite://", creator=lambda: _Borrowed(raw), poolclass=StaticPool)

    # The raw connection is in autocommit mode; give SQLAlchemy (and Alembic) real transactions.
    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine.connect()


def _prepare_schema(raw: sqlite3.Connection, auto_migrate: bool) -> None:
    # Table rebuilds in batch migrations must not trigger ON DELETE CASCADE.
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        with _sqlalchemy_connection_on(raw) as conn:
            state, revision = schema_state(conn)
            conn.rollback()
            match state:
                case SchemaState.CURRENT:
                    pass
                case SchemaState.EMPTY if auto_migrate:
                    with conn.begin():
                        upgrade_connection(conn)
                case SchemaState.EMPTY | SchemaState.BEHIND:
                    raise SchemaOutOfDateError(revision, head_revision())
                case SchemaState.UNKNOWN:
                    raise unknown_schema_error(revision)
    finally:
        raw.execute("PRAGMA foreign_keys = ON")


def _migrate(raw: sqlite3.Connection, revision: str) -> None:
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        with _sqlalchemy_connection_on(raw) as conn, conn.begin():
            upgrade_connection(conn, revision)
    finally:
        raw.execute("PRAGMA foreign_keys = ON")


def _in_transaction(
    raw: sqlite3.Connection,
    begin: str,
    fn: Callable[[Tx], T],
    statements: Statements,
    cache: _StatementCache,
) -> T:
    raw.execute(begin)
    try:
        result = fn(SqliteTx(raw, statements, cache))
        raw.execute("COMMIT")
    except BaseException:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
    return result


_Outcome = tuple[bool, Any]
"""``(True, result)`` or ``(False, exception)`` of one write of a group."""


def _in_group(
    raw: sqlite3.Connection,
    fns: Sequence[Callable[[Tx], Any]],
    statements: Statements,
    cache: _StatementCache,
) -> list[_Outcome]:
    """Run ``fns`` in one write transaction, each in a savepoint; their outcomes, in order.

    Raises (rolling everything back) what the group as a whole cannot survive: an error that
    ended the transaction, a transient lock error (the caller retries the group), or a
    ``BaseException`` that is not an ``Exception``.
    """
    if len(fns) == 1:
        try:
            return [(True, _in_transaction(raw, "BEGIN IMMEDIATE", fns[0], statements, cache))]
        except sqlite3.Error as exc:
            if is_transient(exc):
                raise
            return [(False, exc)]
        except Exception as exc:  # handed to the caller that submitted fn
            return [(False, exc)]
    outcomes: list[_Outcome] = []
    raw.execute("BEGIN IMMEDIATE")
    try:
        for fn in fns:
            raw.execute("SAVEPOINT write")
            try:
                result = fn(SqliteTx(raw, statements, cache))
            except Exception as exc:
                if not raw.in_transaction or (isinstance(exc, sqlite3.Error) and is_transient(exc)):
                    raise
                raw.execute("ROLLBACK TO write")
                raw.execute("RELEASE write")
                outcomes.append((False, exc))
            else:
                raw.execute("RELEASE write")
                outcomes.append((True, result))
        raw.execute("COMMIT")
    except BaseException:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
    return outcomes


WAL_CHECKPOINT_BYTES: Final = 32 * 1024 * 1024
"""A WAL larger than this after a commit is checkpointed and truncated (see `_bound_wal`)."""

_CHECKPOINT_WAIT_MS: Final = 250
"""How long a bounding checkpoint waits for older readers before it gives up until next time."""


def _in_group_bounded(
    raw: sqlite3.Connection,
    fns: Sequence[Callable[[Tx], Any]],
    statements: Statements,
    cache: _StatementCache,
    wal: Path | None,
) -> list[_Outcome]:
    """`_in_group`, then `_bound_wal` in the same thread hop (no extra hop per write)."""
    outcomes = _in_group(raw, fns, statements, cache)
    if wal is not None:
        _bound_wal(raw, wal)
    return outcomes


def _bound_wal(raw: sqlite3.Connection, wal: Path) -> None:
    """Checkpoint and truncate the WAL once it passes `WAL_CHECKPOINT_BYTES`.

    SQLite's own checkpoints are passive: while readers keep starting one after another, each
    pins a recent snapshot, the log is never fully checkpointed and never restarts, and it
    grows without bound. ``TRUNCATE`` waits for the readers on older snapshots (short reads
    end quickly; new readers are not blocked), copies everything back and empties the log.
    Writers of this store queue meanwhile. A reader that outlasts the short wait leaves the
    checkpoint for the next commit.
    """
    try:
        size = wal.stat().st_size
    except OSError:
        return
    if size <= WAL_CHECKPOINT_BYTES:
        return
    (busy_ms,) = raw.execute("PRAGMA busy_timeout").fetchone()
    raw.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_WAIT_MS}")
    try:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error:
        pass  # busy or locked: the next commit tries again
    finally:
        raw.execute(f"PRAGMA busy_timeout = {busy_ms}")


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
        self._wal = None if self._path is None else self._path.with_name(self._path.name + "-wal")
        self._synchronous = synchronous.upper()
        self._busy_ms = int(busy_timeout * 1000)
        self._max_readers = 1 if self._memory else max(1, max_readers)
        self._auto_migrate = auto_migrate
        self.statements: Final = Statements.for_dialect("sqlite")
        self._cache = _StatementCache()
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

    @property
    def database_path(self) -> Path | None:
        """The database file, or ``None`` in memory."""
        return self._path

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
                await run_in_connection_thread(writer, _prepare_schema, self._auto_migrate)
            except (sqlite3.Error, sa_exc.SQLAlchemyError) as exc:
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await _backoff(attempt)
                    continue
                raise translate(exc) from exc
            return

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision`` on the writer connection."""
        await self._call(self._require_writer(), _migrate, revision)

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
        trace = self._trace if self._listeners else None
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                conn = await _daemon_connection(target)
            except sqlite3.Error as exc:
                raise translate(exc) from exc
            try:
                await run_in_connection_thread(conn, _configure, pragmas, trace)
            except BaseException as exc:
                await _close_quietly(conn)
                if not isinstance(exc, sqlite3.Error):
                    raise
                # Stores racing to create one new file: switching it to WAL needs a lock
                # that SQLite refuses at once (busy handler or not) while another holds it.
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await _backoff(attempt)
                    continue
                raise translate(exc) from exc
            return conn
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _require_writer(self) -> aiosqlite.Connection:
        if self._writer is None:
            raise ClosedError("the store is not open: use `async with ConversationStore(...)`")
        return self._writer

    async def _call(self, conn: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
        try:
            result: T = await run_in_connection_thread(conn, fn, *args)
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
        outcomes: list[_Outcome] | None = None
        failure: Exception | None = None
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                outcomes = await run_in_connection_thread(
                    writer, _in_group_bounded, fns, self.statements, self._cache, self._wal
                )
            except sqlite3.Error as exc:
                if attempt < _MAX_ATTEMPTS and is_transient(exc):
                    await _backoff(attempt)
                    continue
                failure = _translated(exc)
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
                    _translated(error) if isinstance(error, sqlite3.Error) else error
                )

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot)."""
        writer = self._require_writer()
        if self._memory:
            return await self._call(
                writer, _in_transaction, "BEGIN", fn, self.statements, self._cache
            )
        conn = await self._checkout_reader()
        try:
            return await self._call(
                conn, _in_transaction, "BEGIN", fn, self.statements, self._cache
            )
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
            await _close_quietly(conn)

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
            await run_in_connection_thread(conn, _install_trace, self._trace)

    def _trace(self, sql: str) -> None:
        for listener in list(self._listeners):
            listener(sql)


def _translated(exc: sqlite3.Error) -> Exception:
    """``translate(exc)``, chained to ``exc`` as ``raise ... from exc`` would."""
    error = translate(exc)
    error.__cause__ = exc
    return error


async def _backoff(attempt: int) -> None:
    """Jittered exponential wait before retrying after lock contention."""
    await asyncio.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311


async def _daemon_connection(target: str) -> aiosqlite.Connection:
    """An aiosqlite connection whose worker thread does not keep the process alive.

    aiosqlite's worker is an ordinary thread that runs until its connection is closed, and the
    interpreter waits for ordinary threads before it exits: a script that forgot to close its
    store (or kept it referenced while an exception unwound) never ended. As a daemon the
    thread ends with the process; nothing is lost, since a write is acknowledged only after its
    ``COMMIT`` (WAL), and an unfinished transaction is rolled back when the file is next opened.
    """
    pending = aiosqlite.connect(target, isolation_level=None)
    thread = getattr(pending, "_thread", None)  # started when awaited (aiosqlite >= 0.20)
    if thread is not None:
        thread.daemon = True
    return await pending


async def _close_quietly(conn: aiosqlite.Connection) -> None:
    with contextlib.suppress(sqlite3.Error, ValueError):  # closed or broken: nothing to release
        await conn.close()


def _configure(
    raw: sqlite3.Connection, pragmas: Sequence[str], trace: Callable[[str], None] | None
) -> None:
    for pragma in pragmas:
        raw.execute(pragma)
    if trace is not None:
        raw.set_trace_callback(trace)


def _install_trace(raw: sqlite3.Connection, callback: Callable[[str], None]) -> None:
    raw.set_trace_callback(callback)
