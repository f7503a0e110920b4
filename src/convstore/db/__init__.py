"""Relational storage: the schema, the migrations, and the backends that run store operations.

The store above this package writes each operation once, as a function of a `Tx`; the backend
chosen for the URL decides how it reaches the database (see `convstore.db.backend`).
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
