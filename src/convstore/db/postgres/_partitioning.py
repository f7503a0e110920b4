"""Hash partitioning of the per-conversation tables on PostgreSQL (``convstore partition``).

`partition_tables` rebuilds ``messages``, ``tool_calls``, ``blob_refs``, ``compactions`` and
``append_keys`` as tables partitioned ``BY HASH (conversation_id)`` into ``modulus`` partitions,
in place, as ``docs/scaling.md`` describes.

Invariants:

- All or nothing: the whole conversion is one transaction (PostgreSQL DDL is transactional).
  It holds the migration lock, so it never runs beside ``convstore migrate`` or another
  conversion, and its table locks make concurrent writers wait until it commits.
- Data-preserving: every row is copied by column name into the new table before the old one is
  dropped; the new tables carry exactly the schema's columns, constraints and index names
  (built from `convstore.db.schema`; the search index's ties to ``messages`` are moved to
  the new table, see `convstore.db.search_index`), so
  Alembic sees no drift (``migrations/env.py`` leaves
  the partitions themselves out of its comparison).
- Idempotent: tables already hash-partitioned by ``conversation_id`` with this modulus are left
  alone; a different modulus rebuilds them with the new one (a repartition, same procedure).
  A table partitioned some other way (by hand) is refused, untouched.
- ``conversations`` (one row per conversation) and ``attachments`` (shared by every
  conversation) stay unpartitioned.
"""

from __future__ import annotations

import re
from typing import Final

from sqlalchemy import Connection, MetaData, Table, text
from sqlalchemy.schema import CreateIndex, CreateTable

from convstore.db import search_index
from convstore.db.migrations import SchemaState, head_revision, schema_state, unknown_schema_error
from convstore.db.schema import NAMING_CONVENTION, metadata
from convstore.errors import InvalidInputError, SchemaError, SchemaOutOfDateError

__all__ = ["MAX_MODULUS", "PARTITIONED_TABLES", "current_moduli", "partition_tables"]

PARTITIONED_TABLES: Final = ("messages", "tool_calls", "blob_refs", "compactions", "append_keys")
"""In foreign-key order: a table comes after every table it references."""

MAX_MODULUS: Final = 1024

_PARTITION_KEY: Final = "HASH (conversation_id)"
_BOUND: Final = re.compile(r"FOR VALUES WITH \(modulus (\d+), remainder (\d+)\)")
_OLD: Final = "__old"


def partition_name(table: str, remainder: int) -> str:
    """The name of one partition of ``table``."""
    return f"{table}_p{remainder}"


def current_moduli(conn: Connection) -> dict[str, int | None]:
    """Each per-conversation table's hash modulus; ``None`` for an unpartitioned table.

    Raises `SchemaError` for a table partitioned in a way this module did not make.
    """
    rows = conn.execute(
        text(
            "SELECT c.relname, c.relkind::text, pg_get_partkeydef(c.oid),"
            " ARRAY(SELECT pg_get_expr(p.relpartbound, p.oid) FROM pg_inherits i"
            "       JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = c.oid)"
            " FROM pg_class c"
            " WHERE c.relname = ANY(:names) AND c.relnamespace = current_schema()::regnamespace"
            " AND c.relkind IN ('r', 'p')"
        ),
        {"names": list(PARTITIONED_TABLES)},
    ).all()
    found: dict[str, int | None] = {}
    for name, kind, key, bounds in rows:
        if kind == "r":
            found[name] = None
            continue
        moduli = {int(m.group(1)) for m in map(_BOUND.fullmatch, bounds) if m is not None}
        remainders = {int(m.group(2)) for m in map(_BOUND.fullmatch, bounds) if m is not None}
        if key != _PARTITION_KEY or len(moduli) != 1:
            raise SchemaError(
                f"table {name!r} is partitioned as {key!r} with {len(bounds)} partitions, not "
                f"by {_PARTITION_KEY} with one modulus: convstore leaves it as it is"
            )
        (modulus,) = moduli
        if remainders != set(range(modulus)) or len(bounds) != modulus:
            raise SchemaError(
                f"table {name!r} lacks some of its {modulus} hash partitions: convstore "
                "leaves it as it is"
            )
        found[name] = modulus
    missing = set(PARTITIONED_TABLES) - found.keys()
    if missing:
        raise SchemaError(f"tables missing from the database: {', '.join(sorted(missing))}")
    return found


def partition_tables(conn: Connection, modulus: int) -> list[str]:
    """Partition the per-conversation tables by ``modulus`` in ``conn``'s transaction.

    Returns the tables rebuilt (none when every table already had this modulus). The caller
    holds the migration lock and commits.
    """
    if conn.dialect.name != "postgresql":
        raise InvalidInputError("partitioning is for PostgreSQL databases only")
    if isinstance(modulus, bool) or not isinstance(modulus, int) or not 2 <= modulus <= MAX_MODULUS:
        raise InvalidInputError(f"the modulus is a whole number from 2 to {MAX_MODULUS}")
    state, revision = schema_state(conn)
    match state:
        case SchemaState.CURRENT:
            pass
        case SchemaState.EMPTY | SchemaState.BEHIND:
            raise SchemaOutOfDateError(revision, head_revision())
        case SchemaState.UNKNOWN:
            raise unknown_schema_error(revision)
    moduli = current_moduli(conn)
    if all(m == modulus for m in moduli.values()):
        return []
    # Every table is rebuilt, even one already at this modulus after an interrupted repartition
    # (impossible: one transaction) or by hand: the foreign keys between them are recreated
    # together, so they are simplest to rebuild together.
    tables = _tables_to_create()
    # The search index's ties to `messages` (its foreign key and queue triggers) are the
    # database's, not the models': untied from the old table, tied to the new one after the
    # copy (the copied rows are indexed already and are not queued again).
    search_index.pg_detach(conn)
    for name in PARTITIONED_TABLES:
        _move_aside(conn, name)
    for name in PARTITIONED_TABLES:
        _create(conn, tables[name], modulus)
    for name in PARTITIONED_TABLES:
        columns = ", ".join(f'"{c.name}"' for c in tables[name].columns)
        conn.exec_driver_sql(
            f'INSERT INTO "{name}" ({columns}) SELECT {columns} FROM "{name}{_OLD}"'  # noqa: S608 (schema names)
        )
    search_index.pg_attach(conn)
    for name in reversed(PARTITIONED_TABLES):  # referencing tables first
        conn.exec_driver_sql(f'DROP TABLE "{name}{_OLD}"')
    for name in PARTITIONED_TABLES:
        conn.exec_driver_sql(f'ANALYZE "{name}"')
    return list(PARTITIONED_TABLES)


def _tables_to_create() -> dict[str, Table]:
    """The schema's tables, copied so that partitioning options can be set on them."""
    copy = MetaData(naming_convention=NAMING_CONVENTION)
    for table in metadata.sorted_tables:
        table.to_metadata(copy)
    result = {}
    for name in PARTITIONED_TABLES:
        table = copy.tables[name]
        table.dialect_kwargs["postgresql_partition_by"] = _PARTITION_KEY
        result[name] = table
    return result


def _move_aside(conn: Connection, name: str) -> None:
    """Rename ``name``, its partitions and its indexes out of the way of the new table."""
    relations = conn.execute(
        text(
            "WITH t AS (SELECT CAST(:t AS regclass) AS oid"
            "           UNION ALL SELECT inhrelid FROM pg_inherits"
            "           WHERE inhparent = CAST(:t AS regclass))"
            " SELECT c.relname, c.relkind::text FROM pg_class c"
            " WHERE c.oid IN (SELECT oid FROM t)"
            " OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t))"
        ),
        {"t": f'"{name}"'},
    ).all()
    for relname, kind in relations:
        if kind in ("i", "I"):  # indexes (and the constraints they back) keep schema-wide names
            conn.exec_driver_sql(f'ALTER INDEX "{relname}" RENAME TO "{relname}{_OLD}"')
        elif relname != name:  # a partition from an earlier modulus
            conn.exec_driver_sql(f'ALTER TABLE "{relname}" RENAME TO "{relname}{_OLD}"')
    conn.exec_driver_sql(f'ALTER TABLE "{name}" RENAME TO "{name}{_OLD}"')


def _create(conn: Connection, table: Table, modulus: int) -> None:
    """Create ``table`` partitioned by hash, its partitions and its indexes."""
    conn.execute(CreateTable(table))
    for remainder in range(modulus):
        conn.exec_driver_sql(
            f'CREATE TABLE "{partition_name(table.name, remainder)}" PARTITION OF "{table.name}"'
            f" FOR VALUES WITH (MODULUS {modulus}, REMAINDER {remainder})"
        )
    for index in sorted(table.indexes, key=lambda i: str(i.name)):
        conn.execute(CreateIndex(index))
