"""Initial schema: conversations, messages, parts, tool calls, attachments, compactions.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from convstore.db.types import UTCDateTime

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "attachments",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("media_type", sa.String(length=255), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_attachments")),
    )
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=255), nullable=True),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("last_seq", sa.Integer(), server_default="0", nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(
        op.f("ix_conversations_tenant_updated_at"), "conversations", ["tenant", "updated_at"]
    )
    op.create_table(
        "append_keys",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("first_seq", sa.Integer(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_append_keys_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "key", name=op.f("pk_append_keys")),
    )
    op.create_table(
        "compactions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("through_seq", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_compactions_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compactions")),
    )
    op.create_index(
        op.f("ix_compactions_conversation_id_id"), "compactions", ["conversation_id", "id"]
    )
    op.create_table(
        "messages",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("provider", sa.String(length=64), nullable=True),
        sa.Column("model", sa.String(length=255), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", name=op.f("pk_messages")),
    )
    op.create_table(
        "parts",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("idx", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("parent_idx", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("call_id", sa.String(length=255), nullable=True),
        sa.Column("result_kind", sa.String(length=16), nullable=True),
        sa.Column("media_type", sa.String(length=255), nullable=True),
        sa.Column("blob_sha256", sa.String(length=64), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["blob_sha256"],
            ["attachments.sha256"],
            name=op.f("fk_parts_blob_sha256_attachments"),
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id", "seq"],
            ["messages.conversation_id", "messages.seq"],
            name=op.f("fk_parts_conversation_id_seq_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "seq", "idx", name=op.f("pk_parts")),
    )
    op.create_index(op.f("ix_parts_blob_sha256"), "parts", ["blob_sha256"])
    op.create_table(
        "tool_calls",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("provider_id", sa.String(length=255), nullable=True),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("raw_arguments", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("result_kind", sa.String(length=16), nullable=True),
        sa.Column("result_seq", sa.Integer(), nullable=True),
        sa.Column("result_idx", sa.Integer(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id", "seq"],
            ["messages.conversation_id", "messages.seq"],
            name=op.f("fk_tool_calls_conversation_id_seq_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "id", name=op.f("pk_tool_calls")),
    )
    op.create_index(
        op.f("ix_tool_calls_conversation_id_status"), "tool_calls", ["conversation_id", "status"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_tool_calls_conversation_id_status"), table_name="tool_calls")
    op.drop_table("tool_calls")
    op.drop_index(op.f("ix_parts_blob_sha256"), table_name="parts")
    op.drop_table("parts")
    op.drop_table("messages")
    op.drop_index(op.f("ix_compactions_conversation_id_id"), table_name="compactions")
    op.drop_table("compactions")
    op.drop_table("append_keys")
    op.drop_index(op.f("ix_conversations_tenant_updated_at"), table_name="conversations")
    op.drop_table("conversations")
    op.drop_table("attachments")
