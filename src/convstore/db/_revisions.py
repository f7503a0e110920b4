"""Where the migration scripts are and which revision is newest, without importing Alembic.

Opening a store only needs to know whether the database is at the newest revision; Alembic
(and Mako, and every dialect's DDL module it loads) costs a command line more than the rest of
opening a store, so it is imported only when the answer is not a plain yes
(`convstore.db.migrations`).

Invariants:

- `quick_head` reads each script's ``revision`` and ``down_revision`` assignments as text; it
  answers only when they form exactly one head, and ``None`` whenever a script is written in a
  way it does not recognise: the caller then asks Alembic. ``tests/db/test_migrations.py``
  checks that it names Alembic's head.
- A database whose ``alembic_version`` holds exactly `quick_head` is current; anything else
  (no table, another revision, several rows) goes to Alembic's full check.
"""

from __future__ import annotations

import re
import sqlite3
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from convstore.errors import SchemaError

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["at_head", "migrations_directory", "quick_head", "sqlite_at_head"]

_ASSIGNMENT = re.compile(
    r"^(revision|down_revision)(?:\s*:\s*[^=\n]+)?\s*=\s*(?:\"([^\"]+)\"|'([^']+)'|(None))\s*$",
    re.MULTILINE,
)


def migrations_directory() -> Path:
    """Where the Alembic scripts are: packaged in a wheel, or at the repository root."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_migrations"
    if (packaged / "env.py").is_file():
        return packaged
    checkout = package.parent.parent / "migrations"
    if (checkout / "env.py").is_file():
        return checkout
    raise SchemaError(f"convstore's migrations are missing (looked in {packaged} and {checkout})")


@cache
def quick_head() -> str | None:
    """The one revision no script names as its ``down_revision``, read from the scripts' text.

    ``None`` when that is not plain from the text (see the module invariants).
    """
    revisions: set[str] = set()
    downs: set[str] = set()
    for script in (migrations_directory() / "versions").glob("*.py"):
        found: dict[str, str | None] = {}
        for match in _ASSIGNMENT.finditer(script.read_text(encoding="utf-8")):
            name, double, single, _none = match.groups()
            if name in found:
                return None
            found[name] = double or single
        if set(found) != {"revision", "down_revision"} or found["revision"] is None:
            return None
        revisions.add(found["revision"])
        if found["down_revision"] is not None:
            downs.add(found["down_revision"])
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def sqlite_at_head(raw: sqlite3.Connection) -> bool:
    """Whether an SQLite database is plainly at `quick_head` (one query)."""
    head = quick_head()
    if head is None:
        return False
    try:
        rows = raw.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.OperationalError:  # no such table: empty, or not convstore's
        return False
    return rows == [(head,)]


def at_head(conn: Connection) -> bool:
    """Whether a PostgreSQL database is plainly at `quick_head`; its transaction rolled back.

    The table is looked up as Alembic does (the search path), without an error that would
    abort the transaction.
    """
    from sqlalchemy import text

    head = quick_head()
    if head is None:
        return False
    rows: list[tuple[object, ...]] = []
    if conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL")).scalar_one():
        rows = [tuple(r) for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
    conn.rollback()
    return rows == [(head,)]
