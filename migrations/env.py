"""Alembic environment for convstore.

Runs in three ways, all against `convstore.db.schema.metadata`:

- from the command line (``alembic upgrade head`` at the repository root): the database is
  ``CONVSTORE_URL`` or the embedded default, driven through SQLAlchemy's async engine;
- programmatically with a URL (``convstore migrate``): the same, with the URL in the config;
- programmatically with a connection the caller already holds
  (``config.attributes["connection"]``): migrations run on it, inside the caller's transaction.

SQLite cannot ALTER most things in place, so migrations run in batch mode there. On a
PostgreSQL database partitioned by ``convstore partition``, the partitions (and the per-partition
copies of foreign keys that PostgreSQL makes) are left out of the comparison with the models:
the partitioned tables themselves carry the schema. The full-text search objects
(`convstore.db.search_ddl`) are left out too: the database maintains them, not the models.
"""

import asyncio
import os
from logging.config import fileConfig

from typing import Any

from alembic import context
from sqlalchemy import JSON, Connection, pool
from sqlalchemy.ext.asyncio import async_engine_from_config

from convstore.db import search_ddl
from convstore.db.schema import exists_on, metadata

DEFAULT_URL = "sqlite+aiosqlite:///convstore.db"

config = context.config
if config.config_file_name is not None and not config.attributes.get("connection"):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def _url() -> str:
    configured = config.get_main_option("sqlalchemy.url")
    return configured or os.environ.get("CONVSTORE_URL") or DEFAULT_URL


def _compare_server_default(
    _context: Any,
    _inspected_column: Any,
    metadata_column: Any,
    inspected_default: str | None,
    _metadata_default: Any,
    rendered_metadata_default: str | None,
) -> bool | None:
    """Compare JSON column defaults as text: PostgreSQL's ``json`` has no ``=`` to ask it."""
    if not isinstance(metadata_column.type, JSON):
        return None  # Alembic's own comparison

    def bare(value: str | None) -> str | None:
        return None if value is None else value.strip("()").removesuffix("::json").strip("()")

    return bare(inspected_default) != bare(rendered_metadata_default)


def _partitions(connection: Connection) -> frozenset[str]:
    """The tables that are partitions of another (PostgreSQL), named in no model."""
    if connection.dialect.name != "postgresql":
        return frozenset()
    return frozenset(
        connection.exec_driver_sql(
            "SELECT relname FROM pg_class WHERE relispartition"
            " AND relnamespace = current_schema()::regnamespace"
        ).scalars()
    )


def _configure(connection: Connection) -> None:
    partitions = _partitions(connection)

    def include_name(name: str | None, type_: str, parents: Any) -> bool:
        # The search index's tables, columns and indexes belong to the database's own DDL
        # (convstore.db.search_ddl), not to the models; that includes SQLite's per-tenant FTS5
        # tables the catch-up makes at run time (search_fts_<slot> and their shadow tables).
        if not search_ddl.include_name(name, type_, parents):
            return False
        return not (type_ == "table" and name in partitions)

    def include_object(obj: Any, _name: Any, type_: str, reflected: bool, _compare: Any) -> bool:
        if not reflected and not exists_on(obj, connection.dialect.name):
            return False  # a model's object this database does not have (POSTGRESQL_ONLY)
        # A foreign key to a partitioned table is mirrored by PostgreSQL as one key per
        # partition, each reflected as a key of the referencing table.
        return not (
            reflected
            and type_ == "foreign_key_constraint"
            and obj.referred_table.name in partitions
        )

    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        compare_server_default=_compare_server_default,
        include_name=include_name,
        include_object=include_object,
    )


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=metadata,
        literal_binds=True,
        render_as_batch=_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_on(connection: Connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = async_engine_from_config(
        {"sqlalchemy.url": _url()}, prefix="sqlalchemy.", poolclass=pool.NullPool
    )
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run_on)
            await connection.commit()
    finally:
        await engine.dispose()


def run_migrations_online() -> None:
    shared = config.attributes.get("connection")
    if shared is not None:
        _run_on(shared)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
