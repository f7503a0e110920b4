"""SQLite search: one FTS5 table per tenant in place of the shared ``search_fts``.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29

All tenants' documents shared one FTS5 table, so a trigram's doclist held every tenant's
documents: a tenant's search of a term only another tenant used walked that tenant's entries
(issue 32, finding 7). Each tenant slot (``search_tenants``; 0: no tenant) now has a table of
its own, ``search_fts_<slot>``, made by the catch-up when it first indexes the tenant's
documents (`convstore.db.search_index`). Titles are logged by the ``conversations`` triggers
(``search_title_log``) and indexed by the catch-up, which alone knows the tables.

Up: the shared table is dropped and the index starts empty (mark 0, every title logged); the
store's catch-up builds the tenant tables in bounded transactions (FTS5 cannot move segments
between tables: moving is indexing again, better done in steps than in this transaction).
Down: the tenant tables are dropped and the shared table made again, titles in it and the mark
at 0, for revision 0015's catch-up to fill. PostgreSQL is untouched (its ``search_docs``
is read through tenant-leading indexes already).
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_index

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    search_index.upgrade_tenant_tables(op.get_bind())


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    search_index.downgrade_tenant_tables(op.get_bind())
