"""Schema checks and migrations of an SQLite database, on the backend's writer connection.

Alembic and the schema checks speak SQLAlchemy; here they get a SQLAlchemy connection that
borrows the writer's raw ``sqlite3`` connection (in its driver thread) without ever closing
it. Invariants: foreign keys are off while the schema changes (a batch migration's table
rebuild must not cascade deletes) and back on afterwards, whatever happens; a migration runs
in one ``BEGIN IMMEDIATE`` transaction.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import Connection, create_engine, event
from sqlalchemy.pool import StaticPool

from convstore.db._revisions import sqlite_at_head
from convstore.errors import SchemaOutOfDateError

__all__ = ["migrate_schema", "prepare_schema"]


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


def prepare_schema(raw: sqlite3.Connection, auto_migrate: bool) -> None:
    """Check the schema is current; create it in an empty database if ``auto_migrate``."""
    if sqlite_at_head(raw):
        return
    # Alembic only when the database is not plainly current (`convstore.db._revisions`).
    from convstore.db.migrations import (
        SchemaState,
        head_revision,
        schema_state,
        unknown_schema_error,
        upgrade_connection,
    )

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


def migrate_schema(raw: sqlite3.Connection, revision: str) -> None:
    """Upgrade the schema to ``revision`` in one transaction."""
    from convstore.db.migrations import upgrade_connection

    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        with _sqlalchemy_connection_on(raw) as conn, conn.begin():
            upgrade_connection(conn, revision)
    finally:
        raw.execute("PRAGMA foreign_keys = ON")
