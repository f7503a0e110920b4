"""The programmatic face of the Alembic migrations.

Invariants:

- The schema is created and changed only by the Alembic scripts: from a checkout they are the
  repository's ``migrations/``; from an installed wheel, the copy packaged as
  ``convstore/_migrations`` (see ``pyproject.toml``).
- Migrations run on a synchronous SQLAlchemy connection handed to Alembic's ``env.py`` (through
  ``config.attributes["connection"]``), so they can share the connection and transaction of
  whoever calls them: the SQLite backend runs them in its driver thread on its own connection.
- One migration at a time per process: Alembic keeps its running context in module globals,
  so two stores migrating at once (threads, or greenlets on one event loop) would trample each
  other. Backends serialise across processes with the database's own lock.
- `schema_state` tells apart an empty database (safe to migrate), one at head, one behind head
  (`SchemaOutOfDateError`, naming the command to run) and one this code does not know.
"""

from __future__ import annotations

import enum
import threading
from functools import cache
from typing import Final

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from convstore.db._revisions import migrations_directory
from convstore.errors import SchemaError

__all__ = [
    "SchemaState",
    "alembic_config",
    "downgrade_connection",
    "head_revision",
    "migrations_directory",
    "schema_state",
    "unknown_schema_error",
    "upgrade_connection",
]


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for the packaged scripts, optionally bound to ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(migrations_directory()))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@cache
def head_revision() -> str:
    """The newest revision the migrations define (there is exactly one head)."""
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise SchemaError(f"the migrations have {len(heads)} heads; expected exactly one")
    return heads[0]


class SchemaState(enum.Enum):
    """What a database holds, as far as convstore's schema goes."""

    EMPTY = "empty"
    """No tables at all: a new database."""
    CURRENT = "current"
    """At the migration head."""
    BEHIND = "behind"
    """At an older revision: needs ``convstore migrate``."""
    UNKNOWN = "unknown"
    """Tables without convstore's revision, or a revision this version does not know."""


def current_revision(connection: Connection) -> str | None:
    """The revision stamped in the database, or ``None``."""
    return MigrationContext.configure(connection).get_current_revision()


def schema_state(connection: Connection) -> tuple[SchemaState, str | None]:
    """The database's state and its current revision."""
    revision = current_revision(connection)
    if revision is None:
        tables = set(inspect(connection).get_table_names())
        return (SchemaState.EMPTY if not tables else SchemaState.UNKNOWN), None
    if revision == head_revision():
        return SchemaState.CURRENT, revision
    known = {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    return (SchemaState.BEHIND if revision in known else SchemaState.UNKNOWN), revision


def unknown_schema_error(revision: str | None) -> SchemaError:
    """The error for a database whose schema this convstore does not know, saying what to do."""
    if revision is None:
        return SchemaError(
            "the database holds tables but no convstore schema revision: it is not a convstore "
            "database (check the URL)"
        )
    return SchemaError(
        f"the database is at schema revision {revision!r}, which this convstore does not know "
        f"(its newest is {head_revision()!r}): it was migrated by a newer convstore; upgrade "
        "convstore to use it"
    )


_ALEMBIC: Final = threading.Lock()
"""Held while Alembic's global context is in use (see the module invariants)."""


def upgrade_connection(connection: Connection, revision: str = "head") -> None:
    """Upgrade the database behind ``connection`` (inside the caller's transaction)."""
    with _ALEMBIC:
        command.upgrade(alembic_config(connection), revision)


def downgrade_connection(connection: Connection, revision: str) -> None:
    """Downgrade the database behind ``connection`` (inside the caller's transaction)."""
    with _ALEMBIC:
        command.downgrade(alembic_config(connection), revision)
