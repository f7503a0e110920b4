"""Search off the write path: a deferred index, exact at every search.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29

SQLite: 0006's triggers on ``messages`` (which indexed every message inside its append) and
0008's ``ix_search_messages_created`` give way to the deferred index of
`convstore.db.search_index`: an FTS5 table whose document ids carry the tenant, a mark of what
is indexed, a log of deleted and updated rows kept by triggers on ``DELETE`` and ``UPDATE OF
parts`` only, and title triggers on ``conversations``. The upgrade indexes every row already
stored; no row changes.

PostgreSQL: 0006's stored generated columns (computed in every append) and their GIN indexes,
and 0008's index, give way to ``search_docs`` (the same search columns plus tenant, role and
time, a multicolumn GIN over tenant and text, and a foreign key to ``messages`` ``ON DELETE
CASCADE``, so a deleted message's document goes at its commit), ``search_titles`` (kept by
triggers on conversations) and ``search_queue``, which a statement-level trigger with a
transition table fills with each insert's keys. ``btree_gin`` is created if missing. The
upgrade queues and indexes every stored message.

The downgrade restores 0010's objects and indexes the rows again.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db import search_index

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    search_index.upgrade(op.get_bind())


def downgrade() -> None:
    search_index.downgrade(op.get_bind())
