"""The general SQLAlchemy backend, used for PostgreSQL (asyncpg).

Operations are the same ``fn(tx)`` functions the SQLite backend runs; here they run through
``AsyncConnection.run_sync``, each statement a round trip to the server, which is inherent to a
client/server database and not worth bypassing SQLAlchemy for.

Invariants:

- Writes run in one transaction. Concurrent writers to one conversation serialise on the
  conversation row, which every write locks first (its ``last_seq`` counter ``UPDATE``), so
  sequence numbers stay unique and gap-free without table locks. Serialization failures and
  deadlocks are retried as whole transactions, a bounded number of times.
- Reads run in a ``REPEATABLE READ`` transaction: one snapshot across their statements.
- A cancelled read is answered with `CancelledError` at once and finishes in the background
  (no connection is dropped mid-query); a cancelled write rolls back.
- The schema is never created implicitly on a server database unless asked (``auto_migrate``):
  several application workers starting at once must not race to run DDL. When asked, or on
  `migrate`, the migrator holds a transaction-level advisory lock, so concurrent workers wait
  for the first one and then find the schema current; within one process, one migration runs
  at a time on an event loop (Alembic's context is global, see `convstore.db.migrations`).
"""

from __future__ import annotations

import asyncio
import random
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

from pydantic_core import from_json, to_json
from sqlalchemy import Connection, Insert, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from convstore.db._revisions import at_head
from convstore.db.errors import is_disconnect, is_transient, translate
from convstore.db.statements import Statements, column_names
from convstore.db.tx import Codec, PassthroughCodec, Row, Statement, Tx
from convstore.errors import ClosedError, SchemaOutOfDateError

__all__ = ["PostgresBackend"]

T = TypeVar("T")

_MAX_ATTEMPTS: Final = 8
_MIGRATION_LOCK_KEY: Final = 0x636F6E7673746F72  # "convstor"
_LOOP_MIGRATION_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _loop_migration_lock() -> asyncio.Lock:
    """This event loop's migration lock.

    Migrations run as greenlets on the loop's thread, where the thread lock in
    `convstore.db.migrations` would block the loop instead of waiting.
    """
    loop = asyncio.get_running_loop()
    lock = _LOOP_MIGRATION_LOCKS.get(loop)
    if lock is None:
        lock = _LOOP_MIGRATION_LOCKS[loop] = asyncio.Lock()
    return lock


def _lock_migrations(conn: Connection) -> None:
    """Wait for any other process migrating this database; released when the transaction ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK_KEY})


class _BindNames:
    """The bind parameter names of each statement, computed once per statement object."""

    def __init__(self) -> None:
        self._names: dict[int, tuple[Statement, frozenset[str]]] = {}

    def only(self, stmt: Statement, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The subset of ``params`` that ``stmt`` binds.

        SQLAlchemy treats an extra parameter named like a column of an ``UPDATE`` as one more
        column to ``SET``; store operations pass shared parameter sets, so they are trimmed.
        """
        hit = self._names.get(id(stmt))
        if hit is None or hit[0] is not stmt:
            hit = (stmt, frozenset(stmt.compile().binds))
            self._names[id(stmt)] = hit
        return {k: v for k, v in (params or {}).items() if k in hit[1]}


class GenericTx:
    """A `Tx` over a synchronous SQLAlchemy connection (inside ``run_sync``)."""

    def __init__(self, conn: Connection, statements: Statements, names: _BindNames) -> None:
        self.statements = statements
        self.codec: Codec = PassthroughCodec()
        self._conn = conn
        self._names = names
        self.answered = 0
        """Statements the server has answered: until one has, a lost connection lost nothing."""

    def fetch(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> list[Row]:
        rows = [tuple(row) for row in self._conn.execute(stmt, self._names.only(stmt, params))]
        self.answered += 1
        return rows

    def stream(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> Iterable[Row]:
        return self.fetch(stmt, params)  # the server sends every row anyway

    def execute(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> int:
        result = self._conn.execute(stmt, self._names.only(stmt, params))
        self.answered += 1
        return int(result.rowcount)

    def execute_many(self, stmt: Statement, params: Sequence[Mapping[str, Any]]) -> None:
        if params:
            self._conn.execute(stmt, [self._names.only(stmt, p) for p in params])
            self.answered += 1

    def insert_rows(self, stmt: Insert, rows: Sequence[Row]) -> None:
        if rows:
            names = column_names(stmt.table)  # type: ignore[arg-type]
            self._conn.execute(stmt, [dict(zip(names, row, strict=True)) for row in rows])
            self.answered += 1


class _Abandoned(Exception):  # noqa: N818 (control flow: the caller went away)
    """Raised inside a write whose caller was cancelled, so that it rolls back."""


def _json_dumps(value: Any) -> str:
    return to_json(value).decode()


def _refuse_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Pool checkout: a connection the server closed while pooled is replaced, not handed out.

    A local check (no round trip, unlike a pre-ping); the pool retries the checkout.
    """
    driver = getattr(dbapi_connection, "driver_connection", None)
    if driver is not None and driver.is_closed():
        raise sa_exc.DisconnectionError("the server closed this pooled connection")


class PostgresBackend:
    """Runs store operations through an SQLAlchemy async engine."""

    def __init__(self, url: URL, *, auto_migrate: bool = False, pool_size: int = 10) -> None:
        self._url = url
        self._auto_migrate = auto_migrate
        self._pool_size = pool_size
        self.dialect_name: Final = url.get_backend_name()
        self.statements: Final = Statements.for_dialect(self.dialect_name)
        self._bind_names = _BindNames()
        self._engine: AsyncEngine | None = None
        self._listeners: list[Callable[[str], None]] = []
        self.write_listeners: list[Callable[[], None]] = []
        """Called (on the event loop) after each write commits (see `SqliteBackend`)."""
        self._writing = 0
        self._orphans: set[asyncio.Future[Any]] = set()
        """Operations still running for callers that were cancelled (see `_to_the_end`)."""

    @property
    def writing(self) -> bool:
        """Whether a write of this backend is in flight."""
        return self._writing > 0

    @property
    def one_statement(self) -> PostgresBackend | None:
        """This backend itself: it runs one-statement operations on its asyncpg connections."""
        return self if self.dialect_name == "postgresql" else None

    @property
    def database_path(self) -> None:
        """None: a server database."""
        return None

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine (open stores only)."""
        if self._engine is None:
            raise ClosedError("the store is not open: use `async with ConversationStore(...)`")
        return self._engine

    async def connect(self) -> None:
        """Create the engine, without looking at the schema (for migrations)."""
        if self._engine is None:
            self._engine = create_async_engine(
                self._url,
                pool_size=self._pool_size,
                # A connection the server closed is noticed when used, not by a round trip
                # before each operation (see `_fetch_one_statement`, `_read` and `_write`).
                pool_pre_ping=False,
                json_serializer=_json_dumps,
                json_deserializer=from_json,
            )
            event.listen(self._engine.sync_engine, "before_cursor_execute", self._trace)
            event.listen(self._engine.sync_engine.pool, "checkout", _refuse_closed)

    async def open(self) -> None:
        """Create the engine and check the schema."""
        await self.connect()
        assert self._engine is not None
        try:
            async with _loop_migration_lock(), self._engine.connect() as conn:
                await conn.run_sync(self._prepare_schema)
                await conn.commit()
        except BaseException as exc:
            await self.close()
            if isinstance(exc, sa_exc.SQLAlchemyError | OSError):
                raise translate(exc) from exc
            raise

    def _prepare_schema(self, conn: Connection) -> None:
        if at_head(conn):
            return
        from convstore.db import migrations  # Alembic only when not plainly current

        if self._auto_migrate:
            # Checked under the lock: a worker that waited finds the schema current.
            _lock_migrations(conn)
        state, revision = migrations.schema_state(conn)
        match state:
            case migrations.SchemaState.CURRENT:
                pass
            case migrations.SchemaState.EMPTY if self._auto_migrate:
                migrations.upgrade_connection(conn)
            case migrations.SchemaState.EMPTY | migrations.SchemaState.BEHIND:
                raise SchemaOutOfDateError(revision, migrations.head_revision())
            case migrations.SchemaState.UNKNOWN:
                raise migrations.unknown_schema_error(revision)

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to ``revision`` in one transaction."""
        from convstore.db.migrations import upgrade_connection

        try:
            async with _loop_migration_lock(), self.engine.begin() as conn:
                await conn.run_sync(_lock_migrations)
                await conn.run_sync(upgrade_connection, revision)
        except (sa_exc.SQLAlchemyError, OSError) as exc:  # OSError: the server is unreachable
            raise translate(exc) from exc

    async def partition(self, modulus: int) -> list[str]:
        """Hash-partition the per-conversation tables (`convstore.db.postgres._partitioning`)."""
        from convstore.db.postgres._partitioning import partition_tables

        try:
            async with _loop_migration_lock(), self.engine.begin() as conn:
                await conn.run_sync(_lock_migrations)
                return await conn.run_sync(partition_tables, modulus)
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            raise translate(exc) from exc

    async def compact(self) -> None:
        """``VACUUM FULL`` every table of the database: rewritten with live rows only.

        A delete leaves the old row versions in the table files until a vacuum, and a plain
        ``VACUUM`` only marks their space reusable; ``VACUUM FULL`` writes each table anew,
        holding an exclusive lock on it meanwhile (reads and writes of that table wait). The
        write-ahead log, its archive, replicas and backups still hold what they held
        (docs/data-in-and-out.md).
        """
        try:
            async with self.engine.connect() as plain:
                conn = await plain.execution_options(isolation_level="AUTOCOMMIT")
                names = await conn.run_sync(_own_tables)
                for name in names:
                    await conn.execute(text(f'VACUUM FULL "{name}"'))
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            raise translate(exc) from exc

    async def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one transaction, retrying the whole of it on transient failures.

        A caller cancelled mid-transaction gets `CancelledError` at once, and the transaction
        rolls back when ``fn`` returns (unless its ``COMMIT`` was already on its way, as on
        SQLite): the operation finishes in the background, so the connection is never cut
        mid-query (see `_to_the_end`).
        """
        abandoned = threading.Event()

        def unless_abandoned(tx: Tx) -> T:
            result = fn(tx)
            if abandoned.is_set():
                raise _Abandoned  # roll back: nobody is waiting for this write any more
            return result

        self._writing += 1
        try:
            result = await self._to_the_end(self._write(unless_abandoned), on_cancel=abandoned.set)
        finally:
            self._writing -= 1
        for listener in self.write_listeners:
            listener()
        return result

    async def _write(self, fn: Callable[[Tx], T]) -> T:
        engine = self.engine
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            txs: list[GenericTx] = []

            def run(conn: Connection, txs: list[GenericTx] = txs) -> T:
                txs.append(self._tx(conn))
                return fn(txs[-1])

            try:
                async with engine.begin() as conn:
                    result: T = await conn.run_sync(run)
            except (sa_exc.SQLAlchemyError, OSError) as exc:
                # A connection found dead before the server answered anything (closed while
                # pooled, not yet noticed): nothing was written, so the write starts over. Lost
                # later, the outcome is unknown (DatabaseError, as for a lost COMMIT).
                lost_early = is_disconnect(exc) and not (txs and txs[-1].answered)
                if attempt < _MAX_ATTEMPTS and (is_transient(exc) or lost_early):
                    await asyncio.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311
                    continue
                raise translate(exc) from exc
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def fetch_one_statement(
        self, sql: str, arguments: Sequence[Any], *, declines: frozenset[str]
    ) -> Any | None:
        """Run one statement on the driver connection, in a transaction of its own.

        The first row, or ``None`` when there is none or the server refused the statement with
        a SQLSTATE in ``declines`` (it then changed nothing; the caller falls back to its
        general path, which reports the error). Any other refusal is raised, translated: a
        statement broken by a schema change must fail, not make every call slow. A connection
        lost mid-statement raises `DatabaseError`: whether the statement committed is unknown,
        so it is not retried. Cancelling the caller lets the statement finish in the
        background (see `_to_the_end`): once sent, it commits or fails whole.
        """
        self._writing += 1
        try:
            row = await self._to_the_end(self._fetch_one_statement(sql, arguments, declines))
        finally:
            self._writing -= 1
        if row is not None:
            for listener in self.write_listeners:
                listener()
        return row

    async def _fetch_one_statement(
        self, sql: str, arguments: Sequence[Any], declines: frozenset[str]
    ) -> Any | None:
        import asyncpg  # the driver of every URL this backend serves besides SQLite's

        try:
            async with self._driver(sql) as driver:
                try:
                    return await driver.fetchrow(sql, *arguments)
                except asyncpg.PostgresError as exc:
                    if exc.sqlstate in declines:
                        return None  # a designed refusal: the statement changed nothing
                    raise translate(exc) from exc
        except asyncpg.InternalClientError as exc:
            if _never_sent(exc):
                return None  # nothing was sent: the general path retries on a fresh connection
            raise
        except (sa_exc.SQLAlchemyError, OSError, asyncpg.InterfaceError) as exc:
            raise translate(exc) from exc

    async def fetch_statement(self, sql: str, arguments: Sequence[Any]) -> list[Any]:
        """Run one read-only statement on the driver connection, outside any transaction.

        One statement sees one snapshot, so a read that is one statement needs no ``BEGIN`` or
        ``COMMIT`` (two round trips). Its rows (asyncpg records). Run again once on a fresh
        connection if the connection is found dead; see `_to_the_end` on cancelling.
        """
        return await self._to_the_end(self._fetch_statement(sql, arguments))

    async def _fetch_statement(self, sql: str, arguments: Sequence[Any]) -> list[Any]:
        import asyncpg

        disconnected = False
        for attempt in range(1, _NEVER_SENT_ATTEMPTS + 1):
            try:
                async with self._driver(sql) as driver:
                    rows: list[Any] = await driver.fetch(sql, *arguments)
            except asyncpg.InternalClientError as exc:
                # Nothing was sent: run it on another connection. The pool may hold several
                # the server ended (each is invalidated as it is found), so more than one try.
                if attempt < _NEVER_SENT_ATTEMPTS and _never_sent(exc):
                    continue
                raise
            except (sa_exc.SQLAlchemyError, OSError, asyncpg.PostgresError,
                    asyncpg.InterfaceError) as exc:  # fmt: skip
                if not disconnected and attempt < _NEVER_SENT_ATTEMPTS and is_disconnect(exc):
                    disconnected = True
                    continue  # a read is safe to run again on a fresh connection
                raise translate(exc) from exc
            return rows
        raise AssertionError("unreachable: the last attempt returns or raises")

    @asynccontextmanager
    async def _driver(self, sql: str) -> AsyncIterator[Any]:
        """A pooled connection's asyncpg connection, for ``sql`` (told to the listeners).

        A connection an error other than the server's own report left in an unknown state
        (cancelled or cut mid-statement) is invalidated, not pooled again.
        """
        import asyncpg

        async with self.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            for listener in list(self._listeners):  # not seen by SQLAlchemy's events
                listener(sql)
            try:
                yield raw.driver_connection
            except asyncpg.PostgresError:
                raise
            except BaseException:
                await conn.invalidate()
                raise

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one ``REPEATABLE READ`` transaction; see `_to_the_end` on cancelling."""
        return await self._to_the_end(self._read(fn))

    async def _read(self, fn: Callable[[Tx], T]) -> T:
        for attempt in (1, 2):
            try:
                async with self.engine.connect() as plain:
                    conn = await plain.execution_options(isolation_level="REPEATABLE READ")
                    async with conn.begin():
                        result: T = await conn.run_sync(lambda c: fn(self._tx(c)))
            except (sa_exc.SQLAlchemyError, OSError) as exc:
                if attempt == 1 and is_disconnect(exc):
                    continue  # a read is safe to run again on a fresh connection
                raise translate(exc) from exc
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _tx(self, conn: Connection) -> GenericTx:
        return GenericTx(conn, self.statements, self._bind_names)

    async def _to_the_end(
        self, operation: Coroutine[Any, Any, T], *, on_cancel: Callable[[], None] | None = None
    ) -> T:
        """Await ``operation``; if the caller is cancelled, let it finish in the background.

        Cancelling a coroutine in the middle of an asyncpg query makes SQLAlchemy terminate the
        connection, and asyncpg then leaves a failed future nobody awaits: each logs "Future
        exception was never retrieved" and costs a connection. So operations are shielded: they
        end normally and return their connection to the pool, and `close` waits for them. A
        write is told (``on_cancel``) and rolls itself back instead of committing.
        """
        task = asyncio.ensure_future(operation)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel()
            if not task.done():
                self._orphans.add(task)
                task.add_done_callback(self._forget)
            raise

    def _forget(self, task: asyncio.Future[Any]) -> None:
        self._orphans.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: the caller that wanted it was cancelled

    async def close(self) -> None:
        """Dispose of the engine (idempotent), once operations left by cancelled callers end."""
        if self._orphans:
            await asyncio.gather(*self._orphans, return_exceptions=True)
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.dispose()

    def add_statement_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(sql)`` for each statement; returns a function that removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def trace_all(self) -> None:
        """Statements are reported on every connection already; nothing to do."""

    def _trace(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        for listener in list(self._listeners):
            listener(statement)


_NEVER_SENT_ATTEMPTS: Final = 8
"""Tries of a one-statement read refused before it was sent (`_never_sent`)."""


def _never_sent(exc: BaseException) -> bool:
    """Whether asyncpg refused to start the statement on a connection the server had ended.

    The server's "terminating connection" report can reach a pooled, idle connection before
    its socket closes; the protocol is then still consuming that error, and the next statement
    fails as it starts ("cannot switch to state ...; another operation ... is in progress"),
    before anything is sent. `_driver` has invalidated the connection by then.
    """
    import asyncpg

    return isinstance(exc, asyncpg.InternalClientError) and "cannot switch to state" in str(exc)


def _own_tables(conn: Connection) -> list[str]:
    """The tables (and partitions) of the connection's schema, for `PostgresBackend.compact`."""
    rows = conn.execute(
        text(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm') ORDER BY 1"
        )
    )
    return [str(row[0]) for row in rows]
