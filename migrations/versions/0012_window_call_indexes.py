"""PostgreSQL windows: a window's tool calls found by index.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29

Adds ``ix_tool_calls_seq`` on ``tool_calls (conversation_id, seq)`` and
``ix_tool_calls_result_seq`` on ``tool_calls (conversation_id, result_seq)``, on PostgreSQL
only (`convstore.db.schema.POSTGRESQL_ONLY`): the one-statement load
(`convstore.db.pg_load`) finds the calls made and answered in a window through them instead of
parsing every part of the window on the server. On a partitioned database (``convstore
partition``) each index is created on the partitioned table, so every partition gets its own.
No row changes; SQLite is untouched. The downgrade drops both indexes.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEXES = (
    ("ix_tool_calls_seq", ["conversation_id", "seq"]),
    ("ix_tool_calls_result_seq", ["conversation_id", "result_seq"]),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, columns in _INDEXES:
        op.create_index(name, "tool_calls", columns)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, _columns in _INDEXES:
        op.drop_index(name, table_name="tool_calls")
