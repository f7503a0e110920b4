"""Search on PostgreSQL: the text functions of the generated columns in PL/pgSQL.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26

``convstore_search_body`` and ``convstore_search_thinking`` keep their bodies and results but
become PL/pgSQL functions (`convstore.db.search_ddl.POSTGRES_PLPGSQL`): as SQL functions that
cannot be inlined they were planned again in every statement, that is for every message an
append inserts; PL/pgSQL keeps the plans for the session. ``CREATE OR REPLACE`` keeps each
function's identity, so the generated columns that call them stay as they are and no stored
value changes. SQLite is untouched. The downgrade restores the SQL functions.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_ddl

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    search_ddl.use_plpgsql(op.get_bind())


def downgrade() -> None:
    search_ddl.use_sql(op.get_bind())
