"""The search's statements for a `Tx`: `convstore.db.statements.search_sql`'s text, wrapped.

The SQL itself, and what each statement answers on each database, is in ``search_sql``; this
module only wraps it (each query shape once), so the store (`convstore.store.search`) and the
command line's read-only path (`convstore.db.sqlite.read_only`) run the same text.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from sqlalchemy import TextClause, text

from convstore.db.statements import search_sql
from convstore.db.statements.search_sql import POSTGRES_WEIGHTS, Mode, Shape

__all__ = [
    "PATH_SEQS",
    "PENDING_SQLITE",
    "POSTGRES_WEIGHTS",
    "QUEUE",
    "TENANT_PLANS",
    "TENANT_SLOT",
    "TENANT_SLOTS",
    "Mode",
    "Shape",
    "search_statement",
]

TENANT_PLANS: Final = text(search_sql.TENANT_PLANS)
"""PostgreSQL, before a tenant's search: plan it without sequential scans."""
PENDING_SQLITE: Final = text(search_sql.PENDING_SQLITE)
"""One row: whether the deferred index lacks anything this snapshot holds (SQLite)."""
TENANT_SLOT: Final = text(search_sql.TENANT_SLOT)
"""A tenant's slot in the index (SQLite), when its table exists."""
TENANT_SLOTS: Final = text(search_sql.TENANT_SLOTS)
"""Every slot whose index table exists, highest first (SQLite)."""
QUEUE: Final = text(
    "INSERT INTO search_queue (conversation_id, seq, last_seq) VALUES (:cid, :seq, :last_seq)"
)
"""PostgreSQL: queue messages ``:seq`` to ``:last_seq`` (NULL: ``:seq`` alone) of conversation
``:cid`` for the search index (`convstore.db.search_queue`)."""
PATH_SEQS: Final = text(search_sql.PATH_SEQS)
"""The seqs of the path ending at ``:head``, from it up to the first at or below ``:floor``."""


@lru_cache(maxsize=search_sql.SHAPES_KEPT)
def search_statement(shape: Shape) -> TextClause:
    """The statement for ``shape`` (the same object for the same shape)."""
    return text(search_sql.search_sql(shape))
