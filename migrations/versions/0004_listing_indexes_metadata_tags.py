"""Listing as index ranges: (created_at, id) indexes and metadata tags.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26

- ``conversations`` gets ``(created_at, id)`` and ``(tenant, created_at, id)`` indexes (the
  latter replaces ``(tenant, created_at)``), so a listing page, first or deep, with or without
  a tenant, is one index range under a row-comparison cursor.
- New ``conversation_tags``: one row per top-level metadata entry (a digest of key and value),
  keyed by conversation id first and deleted with its conversation, indexed by tag so an
  equality filter is an index range too. Filled here from every conversation's metadata.

The downgrade drops the table and the new indexes and restores ``(tenant, created_at)``;
no data outside ``conversation_tags`` changes either way.
"""

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from convstore.db.types import UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 1000


# The tag rule as this revision wrote it; the store computes the same (the module
# convstore.store.metadata_tags). Kept here, not imported, so this revision keeps doing what it
# did whatever later code does.
def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _tag(key: str, value: Any) -> str:
    text = json.dumps(
        [key, _canonical(value)], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def upgrade() -> None:
    op.create_index(op.f("ix_conversations_created_at_id"), "conversations", ["created_at", "id"])
    op.create_index(
        op.f("ix_conversations_tenant_created_at_id"),
        "conversations",
        ["tenant", "created_at", "id"],
    )
    op.drop_index(op.f("ix_conversations_tenant_created_at"), table_name="conversations")
    tags = op.create_table(
        "conversation_tags",
        sa.Column("conversation_id", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=255), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_tags_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "tag", name=op.f("pk_conversation_tags")),
    )
    op.create_index(
        op.f("ix_conversation_tags_tag_created_at_conversation_id"),
        "conversation_tags",
        ["tag", "created_at", "conversation_id"],
    )
    op.create_index(
        op.f("ix_conversation_tags_tenant_tag_created_at_conversation_id"),
        "conversation_tags",
        ["tenant", "tag", "created_at", "conversation_id"],
    )
    _fill(tags)


def _fill(tags: sa.Table) -> None:
    """A tag row per top-level metadata entry of every existing conversation."""
    bind = op.get_bind()
    conversations = sa.table(
        "conversations",
        sa.column("id", sa.String()),
        sa.column("tenant", sa.String()),
        sa.column("metadata", sa.JSON()),
        sa.column("created_at", UTCDateTime()),
    )
    query = (
        sa.select(
            conversations.c.id,
            conversations.c.tenant,
            conversations.c.metadata,
            conversations.c.created_at,
        )
        .where(conversations.c.metadata.is_not(None))
        .order_by(conversations.c.id)
    )
    rows: list[dict[str, Any]] = []
    for cid, tenant, stored, created in bind.execute(query).all():
        # SQLite's JSON text where the dialect did not decode it.
        meta = json.loads(stored) if isinstance(stored, str) else stored
        if not isinstance(meta, dict):
            continue
        digests = sorted({_tag(key, value) for key, value in meta.items()})
        rows.extend(
            {"conversation_id": cid, "tag": d, "tenant": tenant, "created_at": created}
            for d in digests
        )
        if len(rows) >= _BATCH:
            bind.execute(sa.insert(tags), rows)
            rows = []
    if rows:
        bind.execute(sa.insert(tags), rows)


def downgrade() -> None:
    op.drop_index(
        op.f("ix_conversation_tags_tenant_tag_created_at_conversation_id"),
        table_name="conversation_tags",
    )
    op.drop_index(
        op.f("ix_conversation_tags_tag_created_at_conversation_id"),
        table_name="conversation_tags",
    )
    op.drop_table("conversation_tags")
    op.create_index(
        op.f("ix_conversations_tenant_created_at"), "conversations", ["tenant", "created_at"]
    )
    op.drop_index(op.f("ix_conversations_tenant_created_at_id"), table_name="conversations")
    op.drop_index(op.f("ix_conversations_created_at_id"), table_name="conversations")
