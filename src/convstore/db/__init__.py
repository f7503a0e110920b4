"""Relational storage: the schema, the migrations, and the backends that run store operations.

The store above this package writes each operation once, as a function of a `Tx`; the backend
chosen for the URL decides how it reaches the database (see `convstore.db.backend`). Every SQL
statement convstore runs is in this package (``tests/test_layout.py`` checks).

The schema and its statements:

- ``schema``: the tables, as SQLAlchemy Core (the migrations in ``migrations/`` create them).
- ``types``: column types shared by the schema, the migrations and the SQLite hot path.
- ``statements``: every statement the store runs, one module per table (see its docstring).
- ``mapping``: rows to the canonical model and back.
- ``migrations``: the programmatic face of the Alembic migrations.
- ``revisions``: where the migration scripts are and which is newest, without Alembic.
- ``partitioning``: hash partitioning of the per-conversation tables on PostgreSQL.

Running operations:

- ``tx``: the `Tx` interface every store operation is written against, and value codecs.
- ``backend``: choosing a backend for a URL, and the `Backend` interface.
- ``errors``: driver errors translated into convstore errors, in one place.
- ``sqlite``, ``sqlite_tx``, ``sqlite_connections``, ``sqlite_schema``: the SQLite backend
  (raw driver statements, one thread hop per operation), its transactions, connections and
  schema checks.
- ``postgres``: the SQLAlchemy backend, used for PostgreSQL (asyncpg).
- ``pg_append``, ``pg_load``: PostgreSQL's common append and its loads, each one statement.

Search:

- ``search_index``, ``search_index_postgres``: the deferred search index (off the write path,
  exact at every search) on SQLite and PostgreSQL.
- ``search_ddl``: the full-text index's DDL of the earlier revisions, per database.
"""

from convstore.db.backend import (
    DEFAULT_URL,
    Backend,
    create_backend,
    migrate,
    parse_url,
    partition,
    sqlite_path,
)
from convstore.db.tx import Codec, Tx

__all__ = [
    "DEFAULT_URL",
    "Backend",
    "Codec",
    "Tx",
    "create_backend",
    "migrate",
    "parse_url",
    "partition",
    "sqlite_path",
]
