"""PostgreSQL search: the writes queue what they insert; the insert trigger goes.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29

``search_queue`` gains ``last_seq``: a row queues the messages ``seq`` to ``last_seq`` of a
conversation (NULL: ``seq`` alone), and the writes that insert messages add it in their own
transaction (`convstore.db.search_queue`; the one-statement append inside its statement), one
row per append. The statement-level trigger ``search_messages_queue`` and its function go: with
its transition table it cost an append about 3% more server instructions than no search
objects at all (issue 31). What is queued stays queued. SQLite is untouched. The downgrade
restores the trigger and splits every queued range into one row per message.
"""

from collections.abc import Sequence

from alembic import op

from convstore.db.postgres import search_index

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    search_index.queue_ranges(op.get_bind())


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    search_index.queue_keys(op.get_bind())
