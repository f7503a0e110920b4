"""A read-only snapshot of an SQLite file through the standard library's ``sqlite3``.

The command line's ``convstore search`` answers from here when it can: no SQLAlchemy, no
aiosqlite, no asyncio, no thread. It opens the file read-only (a ``mode=ro`` URI), reads in one
transaction (one snapshot) and runs the store's own SQL text
(`convstore.db.statements.search_sql`), so a hit found here is the hit the store finds.

Invariants:

- Never writes: the connection cannot (``mode=ro``); it may create the empty ``-wal`` and
  ``-shm`` files a WAL database's readers share, as any reader does.
- Answers only what the store would answer the same way without writing: a database not
  plainly at the migration head (`convstore.db._revisions.sqlite_at_head`) or an index with
  work pending (the store catches up first, a write) is the caller's cue to take the store's
  path instead. So does any driver error: the store's path reports it, translated.
- `plain_sqlite_path` reads only URLs whose file SQLAlchemy reads the same way (no query, no
  percent-escapes); for any other URL the store's path parses it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from convstore.db._revisions import sqlite_at_head
from convstore.db.statements.search_sql import (
    PATH_SEQS,
    PENDING_SQLITE,
    TENANT_SLOT,
    TENANT_SLOTS,
    Shape,
    search_sql,
)

__all__ = ["SELECT_SETTING", "ReadOnlySqlite", "plain_sqlite_path"]

_SCHEME: Final = "sqlite+aiosqlite:///"

SELECT_SETTING: Final = "SELECT value FROM settings WHERE key = :key"
"""`convstore.db.statements.maintenance.SELECT_SETTING` as text (a test compares them)."""


def plain_sqlite_path(url: str) -> Path | None:
    """The file of ``sqlite+aiosqlite:///PATH`` when it is spelled plainly, else ``None``.

    Plainly: no ``?query`` and no ``%`` escapes, not in memory; `convstore.db.sqlite_path`
    gives the same path for such a URL.
    """
    if not url.startswith(_SCHEME):
        return None
    database = url.removeprefix(_SCHEME)
    if not database or database == ":memory:" or "?" in database or "%" in database:
        return None
    return Path(database)


class ReadOnlySqlite:
    """One read transaction on an SQLite file, opened read-only (a context manager).

    Entering raises `sqlite3.Error` when the file cannot be opened or read as a database.
    """

    def __init__(self, path: Path) -> None:
        self._uri = f"{path.resolve().as_uri()}?mode=ro"
        self._raw: sqlite3.Connection | None = None

    def __enter__(self) -> Self:
        raw = sqlite3.connect(self._uri, uri=True, isolation_level=None)
        try:
            raw.execute("BEGIN")
        except BaseException:
            raw.close()
            raise
        self._raw = raw
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            try:
                raw.execute("ROLLBACK")
            finally:
                raw.close()

    def _fetch(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        assert self._raw is not None, "used outside `with`"
        return self._raw.execute(sql, params or {}).fetchall()

    def at_head(self) -> bool:
        """Whether the schema is plainly at the migration head."""
        assert self._raw is not None, "used outside `with`"
        return sqlite_at_head(self._raw)

    def search_pending(self) -> bool:
        """Whether the deferred search index lacks anything this snapshot holds."""
        return bool(self._fetch(PENDING_SQLITE)[0][0])

    def tenant_slots(self, tenant: str | None) -> tuple[int, ...]:
        """The index tables a search of ``tenant`` reads (every tenant's for ``None``)."""
        if tenant is None:
            return tuple(int(slot) for (slot,) in self._fetch(TENANT_SLOTS))
        return tuple(int(slot) for (slot,) in self._fetch(TENANT_SLOT, {"tenant": tenant}))

    def search_rows(self, shape: Shape, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The rows of the search query for ``shape`` (SQLite's)."""
        return self._fetch(search_sql(shape), params)

    def path_seqs(self, cid: str, head: int, floor: int) -> set[int]:
        """The seqs of the path ending at ``head``, up to the first at or below ``floor``."""
        rows = self._fetch(PATH_SEQS, {"cid": cid, "head": head, "floor": floor})
        return {int(seq) for (seq,) in rows}

    def setting(self, key: str) -> str | None:
        """A store-wide setting (``settings``), if set."""
        rows = self._fetch(SELECT_SETTING, {"key": key})
        return None if not rows else str(rows[0][0])
