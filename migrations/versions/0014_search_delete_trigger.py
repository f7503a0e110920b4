"""SQLite search: the mark stays at or below the newest message after any delete.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29

0011's delete trigger on ``messages`` lowered the deferred index's mark only when the deleted
row was at or below it. A statement deleting rows on both sides of the mark (a conversation
whose newest turns were not indexed yet, deleted, truncated or erased) could leave the mark
above the newest row; the next messages, given the freed rowids, were then never indexed and a
search missed them. The new trigger (`convstore.db.search_index.DELETE_TRIGGER`) checks the
mark after every deleted row. The upgrade also repairs what the old trigger lost: the mark is
lowered to the newest row, and every message at or below it that the index lacks is logged, so
the next catch-up indexes it. No row of ``messages`` changes; PostgreSQL (a queue, no mark) is
untouched. The downgrade restores 0011's trigger.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_index

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    search_index.upgrade_delete_trigger(op.get_bind())


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    search_index.downgrade_delete_trigger(op.get_bind())
