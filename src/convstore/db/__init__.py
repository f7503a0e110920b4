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
- ``_revisions``: where the migration scripts are and which is newest, without Alembic.

Running operations:

- ``tx``: the `Tx` interface every store operation is written against, and value codecs.
- ``backend``: choosing a backend for a URL, and the `Backend` interface.
- ``errors``: driver errors translated into convstore errors, in one place.
- ``sqlite``: the SQLite backend (raw driver statements, one thread hop per operation), its
  transactions, connections and schema checks (see its docstring).
- ``postgres``: the PostgreSQL backend (SQLAlchemy on asyncpg), its one-statement append and
  loads, its deferred search index and hash partitioning (see its docstring).

Search:

- ``search_index``: the deferred search index (off the write path, exact at every search);
  its PostgreSQL side is ``postgres.search_index``.
- ``search_queue``: PostgreSQL's writes queue the messages they insert for the search index.
- ``search_ddl``: the full-text index's DDL of the earlier revisions, per database.
"""

from convstore._lazy import lazy_attributes

# Not `typing.TYPE_CHECKING` (see ``convstore/__init__.py``); type checkers treat it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "DEFAULT_URL": "convstore.db.backend",
    "Backend": "convstore.db.backend",
    "create_backend": "convstore.db.backend",
    "migrate": "convstore.db.backend",
    "parse_url": "convstore.db.backend",
    "partition": "convstore.db.backend",
    "sqlite_path": "convstore.db.backend",
    "Codec": "convstore.db.tx",
    "Tx": "convstore.db.tx",
}
"""Each name and the module that defines it: loaded on first use, so a module of this package
that needs no SQLAlchemy (the search's SQL text, the command line's read-only search) can be
imported without it."""

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

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
