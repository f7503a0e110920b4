"""Full-text search: an index the database keeps exact in the same statement as every write.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26

SQLite gets an FTS5 ``trigram`` table over the external-content view ``search_documents`` and
triggers on ``messages`` and ``conversations``; PostgreSQL gets ``pg_trgm``, stored generated
columns on both tables and their GIN indexes (`convstore.db.search_ddl` describes each). The
upgrade indexes every row already stored (``rebuild`` on SQLite; on PostgreSQL the generated
columns are computed as they are added); no row changes. The downgrade drops every search
object and leaves the rows as they were.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_ddl

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    search_ddl.create(op.get_bind())


def downgrade() -> None:
    search_ddl.drop(op.get_bind())
