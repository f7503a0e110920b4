"""Search: messages by time, so a search of short terms stops at its page.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

Adds ``ix_search_messages_created`` on ``messages (created_at)`` (`convstore.db.search_ddl`),
on both databases: a query whose terms are all shorter than three characters ranks every hit
equal and lists the newest first, and with this index it reads messages newest first and stops
when its page is full instead of checking every message. The index is built from the rows
already there; no row changes. The downgrade drops it.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_ddl

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    search_ddl.create_recency(op.get_bind())


def downgrade() -> None:
    search_ddl.drop_recency(op.get_bind())
