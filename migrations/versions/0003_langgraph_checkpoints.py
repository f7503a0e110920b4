"""LangGraph checkpoints: checkpoints, their channel values and pending writes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26

Adds three tables, each keyed by conversation id first and deleted with its conversation (a
LangGraph thread is a conversation): ``checkpoints`` (a checkpoint without its channel values,
its metadata and parent), ``checkpoint_values`` (a channel's value per version) and
``checkpoint_writes`` (pending writes). Existing data is untouched; the downgrade drops the
three tables and what they hold.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.String(length=64)
_KEY = sa.String(length=255)


def _conversation_id() -> sa.Column[str]:
    return sa.Column("conversation_id", _ID, nullable=False)


def _conversation_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["conversation_id"],
        ["conversations.id"],
        name=op.f(f"fk_{table}_conversation_id_conversations"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        _conversation_id(),
        sa.Column("checkpoint_ns", _KEY, nullable=False),
        sa.Column("checkpoint_id", _KEY, nullable=False),
        sa.Column("parent_checkpoint_id", _KEY, nullable=True),
        sa.Column("checkpoint_type", sa.String(length=32), nullable=False),
        sa.Column("checkpoint", sa.LargeBinary(), nullable=False),
        sa.Column("channel_versions", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=False),
        _conversation_fk("checkpoints"),
        sa.PrimaryKeyConstraint(
            "conversation_id", "checkpoint_ns", "checkpoint_id", name=op.f("pk_checkpoints")
        ),
    )
    op.create_table(
        "checkpoint_values",
        _conversation_id(),
        sa.Column("checkpoint_ns", _KEY, nullable=False),
        sa.Column("channel", _KEY, nullable=False),
        sa.Column("version", _KEY, nullable=False),
        sa.Column("value_type", sa.String(length=32), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=True),
        _conversation_fk("checkpoint_values"),
        sa.PrimaryKeyConstraint(
            "conversation_id",
            "checkpoint_ns",
            "channel",
            "version",
            name=op.f("pk_checkpoint_values"),
        ),
    )
    op.create_table(
        "checkpoint_writes",
        _conversation_id(),
        sa.Column("checkpoint_ns", _KEY, nullable=False),
        sa.Column("checkpoint_id", _KEY, nullable=False),
        sa.Column("task_id", _KEY, nullable=False),
        sa.Column("idx", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("channel", _KEY, nullable=False),
        sa.Column("value_type", sa.String(length=32), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=True),
        sa.Column("task_path", sa.Text(), server_default=sa.text("''"), nullable=False),
        _conversation_fk("checkpoint_writes"),
        sa.PrimaryKeyConstraint(
            "conversation_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name=op.f("pk_checkpoint_writes"),
        ),
    )


def downgrade() -> None:
    op.drop_table("checkpoint_writes")
    op.drop_table("checkpoint_values")
    op.drop_table("checkpoints")
