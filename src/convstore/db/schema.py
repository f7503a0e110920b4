"""The relational schema, as SQLAlchemy Core tables.

This module is the single source of table and column names. The Alembic migrations create and
change the schema (``alembic check`` in the tests proves the two never drift), the SQLAlchemy
path queries these tables, and the SQLite hot path compiles its statements from them.

Invariants:

- Every constraint and index has a stable name from `NAMING_CONVENTION`, so migrations can
  drop and alter them on every dialect.
- A conversation's rows are keyed by ``(conversation_id, seq[, idx])`` that the client computes:
  ``seq`` comes from the conversation's ``last_seq`` counter, bumped in the same transaction,
  so sequence numbers are unique, gap-free and increasing per conversation.
- Children cascade with their conversation. A file part references its blob by SHA-256 through
  ``attachments``; the bytes themselves never enter the database.
- A tool result whose output is a `ContentOutput` stores one child part row per content part
  (``parent_idx`` pointing at the result), so every blob reference is a ``parts.blob_sha256``.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from convstore.db.types import UTCDateTime

__all__ = [
    "NAMING_CONVENTION",
    "append_keys",
    "attachments",
    "compactions",
    "conversations",
    "messages",
    "metadata",
    "parts",
    "tool_calls",
]

NAMING_CONVENTION: Final = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata: Final = MetaData(naming_convention=NAMING_CONVENTION)

NullableJSON = JSON(none_as_null=True)
"""JSON where Python ``None`` is SQL ``NULL`` (not the JSON text ``null``)."""

ID = String(64)
"""Conversation ids."""

CALL_ID = String(255)
"""Tool-call ids (provider ids run long: Responses item ids are over 50 characters)."""

conversations: Final = Table(
    "conversations",
    metadata,
    Column("id", ID, primary_key=True),
    Column("tenant", String(255), nullable=True),
    Column("title", Text, nullable=True),
    Column("metadata", NullableJSON, nullable=True),
    Column("last_seq", Integer, nullable=False, server_default="0"),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Index(None, "tenant", "updated_at"),
)

messages: Final = Table(
    "messages",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("role", String(16), nullable=False),
    Column("provider", String(64), nullable=True),
    Column("model", String(255), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("details", NullableJSON, nullable=True),
)

attachments: Final = Table(
    "attachments",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("media_type", String(255), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

parts: Final = Table(
    "parts",
    metadata,
    Column("conversation_id", ID, primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("idx", Integer, primary_key=True, autoincrement=False),
    Column("parent_idx", Integer, nullable=True),
    Column("kind", String(16), nullable=False),
    Column("text", Text, nullable=True),
    Column("call_id", CALL_ID, nullable=True),
    Column("result_kind", String(16), nullable=True),
    Column("media_type", String(255), nullable=True),
    Column("blob_sha256", String(64), ForeignKey("attachments.sha256"), nullable=True),
    Column("data", NullableJSON, nullable=True),
    ForeignKeyConstraint(
        ["conversation_id", "seq"],
        ["messages.conversation_id", "messages.seq"],
        ondelete="CASCADE",
    ),
    Index(None, "blob_sha256"),
)

tool_calls: Final = Table(
    "tool_calls",
    metadata,
    Column("conversation_id", ID, primary_key=True),
    Column("id", CALL_ID, primary_key=True),
    Column("seq", Integer, nullable=False),
    Column("idx", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("provider_id", String(255), nullable=True),
    Column("arguments", JSON, nullable=False),
    Column("raw_arguments", Text, nullable=True),
    Column("status", String(16), nullable=False),
    Column("result_kind", String(16), nullable=True),
    Column("result_seq", Integer, nullable=True),
    Column("result_idx", Integer, nullable=True),
    Column("details", NullableJSON, nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("completed_at", UTCDateTime(), nullable=True),
    ForeignKeyConstraint(
        ["conversation_id", "seq"],
        ["messages.conversation_id", "messages.seq"],
        ondelete="CASCADE",
    ),
    Index(None, "conversation_id", "status"),
)

compactions: Final = Table(
    "compactions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("through_seq", Integer, nullable=False),
    Column("summary", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Index(None, "conversation_id", "id"),
)

append_keys: Final = Table(
    "append_keys",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("key", String(255), primary_key=True),
    Column("first_seq", Integer, nullable=False),
    Column("count", Integer, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)
