"""Choosing a backend for a database URL, and the interface every backend offers.

Invariants:

- ``sqlite+aiosqlite`` URLs get `SqliteBackend` (raw driver, one hop per operation);
  ``postgresql+asyncpg`` URLs get `PostgresBackend`. Anything else is refused up front with
  an `InvalidInputError` naming what is supported.
- A backend runs whole operations (``fn(tx)``) in one transaction; callers never see a driver
  exception (see `convstore.db.errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from convstore.db.sqlite.backend import SqliteBackend
from convstore.db.statements import Statements
from convstore.db.tx import Tx
from convstore.errors import InvalidInputError, MissingDependencyError

if TYPE_CHECKING:
    # Imported when a PostgreSQL URL is opened: SQLAlchemy's asyncio extension (and with it
    # the ORM) is not something an SQLite store needs to load.
    from convstore.db.postgres.backend import PostgresBackend

__all__ = [
    "DEFAULT_URL",
    "Backend",
    "OneStatement",
    "compact",
    "create_backend",
    "migrate",
    "parse_url",
    "partition",
    "sqlite_path",
]

T = TypeVar("T")

DEFAULT_URL = "sqlite+aiosqlite:///convstore.db"


class OneStatement(Protocol):
    """Whole operations as one statement each, in one round trip (PostgreSQL's asyncpg path)."""

    async def fetch_one_statement(
        self, sql: str, arguments: Sequence[Any], *, declines: frozenset[str]
    ) -> Any | None:
        """Run one writing statement in a transaction of its own; its first row.

        ``None`` when it returned no row, or when the server refused it with one of the
        SQLSTATEs in ``declines`` (the refusals the statement is designed to meet: it then
        changed nothing, and the caller takes its general path). Any other refusal raises.
        """
        ...

    async def fetch_statement(self, sql: str, arguments: Sequence[Any]) -> list[Any]:
        """Run one read-only statement outside any transaction; its rows."""
        ...


class Backend(Protocol):
    """What the store needs from a database backend."""

    @property
    def one_statement(self) -> OneStatement | None:
        """This backend's one-statement runner, or ``None`` (every operation is ``fn(tx)``).

        The store's fast paths are parameters of its pipelines, not other backends' types:
        the append (`convstore.store.append.appending`) and the load take it when it is there.
        """
        ...

    @property
    def database_path(self) -> Path | None:
        """The database file of an SQLite backend on disk; ``None`` otherwise."""
        ...

    @property
    def dialect_name(self) -> str:
        """``sqlite`` or ``postgresql``."""
        ...

    @property
    def statements(self) -> Statements:
        """The statements compiled for this dialect."""
        ...

    @property
    def write_listeners(self) -> list[Callable[[], None]]:
        """Called (on the event loop) after each write commits."""
        ...

    @property
    def writing(self) -> bool:
        """Whether a write is in flight."""
        ...

    async def connect(self) -> None:
        """Connect without looking at the schema."""
        ...

    async def open(self) -> None:
        """Connect and check the schema."""
        ...

    async def close(self) -> None:
        """Release every connection."""
        ...

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema."""
        ...

    async def write(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one write transaction."""
        ...

    async def read(self, fn: Callable[[Tx], T]) -> T:
        """Run ``fn`` in one read transaction."""
        ...

    def add_statement_listener(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Report each SQL statement to ``listener``."""
        ...

    async def trace_all(self) -> None:
        """Report statements on already-open connections too."""
        ...

    async def compact(self) -> None:
        """Rewrite the database so deleted rows leave its files."""
        ...


def parse_url(url: str | URL) -> URL:
    """A SQLAlchemy URL, or `InvalidInputError` for one that cannot be parsed or served."""
    try:
        parsed = make_url(url)
        _ = parsed.port  # parsed lazily: a port that is not a number fails here, not on connect
    except (ArgumentError, ValueError) as exc:
        # The URL itself is not repeated: it may hold a password.
        raise InvalidInputError(f"not a database URL: {exc}") from exc
    if parsed.drivername not in ("sqlite+aiosqlite", "postgresql+asyncpg"):
        raise InvalidInputError(
            f"unsupported database URL scheme {parsed.drivername!r}: use "
            "'sqlite+aiosqlite:///path.db' or 'postgresql+asyncpg://user@host/db'"
        )
    return parsed


def create_backend(
    url: str | URL,
    *,
    auto_migrate: bool | None = None,
    sqlite_synchronous: Literal["full", "normal"] = "full",
) -> SqliteBackend | PostgresBackend:
    """The backend for ``url``.

    ``auto_migrate=None`` means: create the schema in a new, empty SQLite database, and never
    implicitly on a server database.
    """
    parsed = parse_url(url)
    if parsed.drivername == "sqlite+aiosqlite":
        return SqliteBackend(
            parsed,
            synchronous=sqlite_synchronous,
            auto_migrate=True if auto_migrate is None else auto_migrate,
        )
    _require_asyncpg()
    from convstore.db.postgres.backend import PostgresBackend

    return PostgresBackend(parsed, auto_migrate=bool(auto_migrate))


def _require_asyncpg() -> None:
    """Refuse a PostgreSQL URL up front when the ``postgres`` extra is missing.

    Without this, SQLAlchemy's dialect fails on the first connect with a bare traceback.
    """
    try:
        import asyncpg  # noqa: F401 -- only checking that the extra is installed
    except ImportError as exc:
        raise MissingDependencyError("a postgresql+asyncpg:// URL", "asyncpg", "postgres") from exc


async def migrate(url: str | URL = DEFAULT_URL, revision: str = "head") -> None:
    """Upgrade the database at ``url`` to ``revision`` (creating the schema in an empty one).

    This is what ``convstore migrate`` runs; it works on a database behind head, which
    `ConversationStore` refuses to open.
    """
    backend = create_backend(url, auto_migrate=False)
    await backend.connect()
    try:
        await backend.migrate(revision)
    finally:
        await backend.close()


async def compact(backend: Backend) -> None:
    """Rewrite the database so deleted rows leave its files (``erase --compact``).

    SQLite: ``VACUUM`` and a WAL truncation; PostgreSQL: ``VACUUM FULL`` of every table.
    """
    await backend.compact()


async def partition(url: str | URL, modulus: int) -> list[str]:
    """Hash-partition the per-conversation tables of the PostgreSQL database at ``url``.

    What ``convstore partition`` runs (see `convstore.db.postgres._partitioning`): the tables
    rebuilt, none when they already had ``modulus`` partitions.
    """
    from convstore.db.postgres.backend import PostgresBackend

    backend = create_backend(url, auto_migrate=False)
    if not isinstance(backend, PostgresBackend) or backend.dialect_name != "postgresql":
        raise InvalidInputError("partitioning is for PostgreSQL databases only")
    await backend.connect()
    try:
        return await backend.partition(modulus)
    finally:
        await backend.close()


def sqlite_path(url: str | URL) -> Path | None:
    """The file of an SQLite URL (``None`` for in-memory or non-SQLite URLs)."""
    parsed = parse_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(str(parsed.database))
