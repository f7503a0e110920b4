"""PostgreSQL search: the newest-first indexes serve a search of every tenant only.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-29

``ix_search_docs_created`` and ``ix_search_titles_created`` (``created_at``, every tenant's
rows) become partial on ``conversation_id <> ''``, true of every row, which only the
statements of a search of every tenant state (`convstore.db.statements.search`). A tenant's
search can then use only the tenant-leading indexes: before, once the tenant's own matches
outnumbered the ranking cap and another tenant had many documents of the term, the planner
walked ``ix_search_docs_created`` newest first, filtering the tenant, and read the other
tenant's rows (2,020 rows alone, 8,020 beside another tenant's 6,000 messages of the term:
issue 32, finding 7). No row changes; SQLite is untouched. The downgrade restores the full
indexes.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db.postgres import search_index

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    search_index.partial_created(op.get_bind(), partial=True)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    search_index.partial_created(op.get_bind(), partial=False)
