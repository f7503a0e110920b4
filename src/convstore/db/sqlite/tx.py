"""SQLite transactions as they run in a connection's driver thread.

Each function here runs whole inside the aiosqlite thread of one raw ``sqlite3`` connection
(the backend in `convstore.db.sqlite.backend` hands it over in one hop): a read or write transaction
around one store operation, a group of writes sharing one ``COMMIT`` (each in its own
savepoint, failing alone), and the bound on the WAL's size checked after each group. Core
statements are compiled to driver SQL once per statement object (`StatementCache`).

Invariants: a transaction either commits or is rolled back before the function returns or
raises; a transient lock error is raised, never swallowed, so the backend retries the whole
transaction or group.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from sqlalchemy import Insert
from sqlalchemy.dialects import sqlite as sqlite_dialect

from convstore.db.errors import is_transient
from convstore.db.statements import Statements
from convstore.db.tx import Codec, Row, SqliteCodec, Statement, Tx

__all__ = [
    "CODEC",
    "IDLE_CHECKPOINT_BYTES",
    "WAL_AUTOCHECKPOINT_PAGES",
    "WAL_CHECKPOINT_BYTES",
    "Outcome",
    "StatementCache",
    "bound_wal",
    "checkpoint_when_idle",
    "in_group",
    "in_group_bounded",
    "in_transaction",
    "wal_file",
]

T = TypeVar("T")

_DIALECT: Final = sqlite_dialect.dialect(paramstyle="qmark")

CODEC: Final = SqliteCodec()
"""The codec of every SQLite transaction (and of the lean append's planning, before the hop):
one instance, so an append's timestamp, formatted while planning, is not formatted again."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    literals: Mapping[str, Any]

    def bind(self, params: Mapping[str, Any] | None) -> tuple[Any, ...]:
        if params is None:
            return tuple(self.literals[n] for n in self.names)
        return tuple(params[n] if n in params else self.literals[n] for n in self.names)


class StatementCache:
    """Core statement -> driver SQL, compiled once per statement object.

    It keeps `KEPT` statements at most, dropping the oldest first: statements made per tenant
    (the search's, naming a tenant's index table) must not accumulate for ever.
    """

    KEPT: Final = 4096

    def __init__(self) -> None:
        self._compiled: dict[int, tuple[Statement, _Compiled]] = {}

    def get(self, stmt: Statement) -> _Compiled:
        """The driver SQL of ``stmt``, compiled on first use."""
        hit = self._compiled.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        compiled = stmt.compile(dialect=_DIALECT)
        entry = _Compiled(
            sql=compiled.string,
            names=tuple(compiled.positiontup or ()),
            literals=dict(compiled.params),
        )
        if len(self._compiled) >= self.KEPT:
            del self._compiled[next(iter(self._compiled))]
        self._compiled[id(stmt)] = (stmt, entry)
        return entry


class SqliteTx:
    """A `Tx` over a raw sqlite3 connection, used only inside its driver thread."""

    def __init__(
        self, raw: sqlite3.Connection, statements: Statements, cache: StatementCache
    ) -> None:
        self.statements = statements
        self.codec: Codec = CODEC
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


def in_transaction(
    raw: sqlite3.Connection,
    begin: str,
    fn: Callable[[Tx], T],
    statements: Statements,
    cache: StatementCache,
) -> T:
    """Run ``fn`` in one transaction opened by ``begin``: committed, or rolled back on error."""
    raw.execute(begin)
    try:
        result = fn(SqliteTx(raw, statements, cache))
        raw.execute("COMMIT")
    except BaseException:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
    return result


Outcome = tuple[bool, Any]
"""``(True, result)`` or ``(False, exception)`` of one write of a group."""


def in_group(
    raw: sqlite3.Connection,
    fns: Sequence[Callable[[Tx], Any]],
    statements: Statements,
    cache: StatementCache,
) -> list[Outcome]:
    """Run ``fns`` in one write transaction, each in a savepoint; their outcomes, in order.

    Raises (rolling everything back) what the group as a whole cannot survive: an error that
    ended the transaction, a transient lock error (the caller retries the group), or a
    ``BaseException`` that is not an ``Exception``.
    """
    if len(fns) == 1:
        try:
            return [(True, in_transaction(raw, "BEGIN IMMEDIATE", fns[0], statements, cache))]
        except sqlite3.Error as exc:
            if is_transient(exc):
                raise
            return [(False, exc)]
        except Exception as exc:  # handed to the caller that submitted fn
            return [(False, exc)]
    outcomes: list[Outcome] = []
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
"""A WAL larger than this after a commit is checkpointed and truncated (see `bound_wal`)."""

_CHECKPOINT_WAIT_MS: Final = 250
"""How long a bounding checkpoint waits for older readers before it gives up until next time."""


def wal_file(database: Path) -> Path:
    """The WAL file SQLite keeps beside ``database``."""
    return database.with_name(database.name + "-wal")


WAL_AUTOCHECKPOINT_PAGES: Final = 4000
"""The writer's own checkpoint threshold (SQLite's default is 1,000 pages): a backstop only.

A checkpoint run by a commit runs inside that append, in its caller's wait: it copies the log
back and fsyncs the database (about 0.19 M instructions per append of the benchmark turn,
amortized, and a latency spike every ~130 appends). Idle-time work checkpoints long before this
(`checkpoint_when_idle`); the writer does only when that work is not running.
"""

IDLE_CHECKPOINT_BYTES: Final = 1024 * 1024
"""A WAL larger than this is checkpointed by the idle-time work (`checkpoint_when_idle`)."""


def checkpoint_when_idle(raw: sqlite3.Connection, wal: Path) -> None:
    """Checkpoint the WAL once it passes `IDLE_CHECKPOINT_BYTES` (truncate it past the bound).

    Past `WAL_CHECKPOINT_BYTES` this is `bound_wal`'s truncating checkpoint. Otherwise it
    runs on a connection other than the writer's, between appends: ``PASSIVE`` takes no write
    lock, so an append that starts meanwhile is not held up, and pages a reader still needs are
    left for the next time. The writer restarts the log from its start at its next commit.
    """
    try:
        size = wal.stat().st_size
    except OSError:
        return
    if size > WAL_CHECKPOINT_BYTES:
        bound_wal(raw, wal)  # the idle-time work's own commits grew it past the bound
    elif size > IDLE_CHECKPOINT_BYTES:
        with contextlib.suppress(sqlite3.Error):  # busy: the next idle period tries again
            raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def in_group_bounded(
    raw: sqlite3.Connection,
    fns: Sequence[Callable[[Tx], Any]],
    statements: Statements,
    cache: StatementCache,
    wal: Path | None,
) -> list[Outcome]:
    """`in_group`, then `bound_wal` in the same thread hop (no extra hop per write)."""
    outcomes = in_group(raw, fns, statements, cache)
    if wal is not None:
        bound_wal(raw, wal)
    return outcomes


def bound_wal(raw: sqlite3.Connection, wal: Path) -> None:
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
