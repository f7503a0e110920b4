"""The relational schema (v2), as SQLAlchemy Core tables.

This module is the single source of table and column names. The Alembic migrations create and
change the schema (``alembic check`` in the tests proves the two never drift), the SQLAlchemy
path queries these tables, and the SQLite hot path compiles its statements from them.

Invariants:

- Every constraint and index has a stable name from `NAMING_CONVENTION`, so migrations can
  drop and alter them on every dialect.
- Every per-conversation table's primary key leads with ``conversation_id`` and nothing depends
  on a global sequence: a deployment can hash-partition or distribute every such table by
  conversation id (see ``docs/scaling.md``). ``attachments`` (one row per blob) is the only
  table shared across conversations.
- A conversation's messages are keyed by ``(conversation_id, seq)``; ``seq`` comes from the
  conversation's ``last_seq`` counter, bumped in the same transaction, so it is unique per
  conversation and never reused (a popped message's number is gone for good).
- Messages form a tree by ``parent_seq`` (a parent's ``seq`` is always below its child's);
  ``conversations.head_seq`` names the active path's newest message. ``branched`` is false
  while the tree is one chain whose tip is the head, so the common case reads messages by
  ``seq`` alone.
- A message's canonical parts are one compact JSON array (``messages.parts``, see
  `convstore.db.mapping`); tool calls stay relational rows because their lifecycle is queried
  and updated in place; each file a message references has a ``blob_refs`` row (what gc, fsck
  and tenant visibility query). The bytes themselves never enter the database.
- ``tool_calls`` rows hold each call's lifecycle as seen on the active path; moving the head
  rederives the lifecycles the move can change (`convstore.store.history.branches`).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.schema import SchemaItem

from convstore.db.types import UTCDateTime

__all__ = [
    "NAMING_CONVENTION",
    "POSTGRESQL_ONLY",
    "append_keys",
    "attachments",
    "blob_refs",
    "blob_tombstones",
    "checkpoint_values",
    "checkpoint_writes",
    "checkpoints",
    "compactions",
    "conversation_tags",
    "conversations",
    "exists_on",
    "messages",
    "metadata",
    "released_blobs",
    "settings",
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

POSTGRESQL_ONLY: Final = {"dialect": "postgresql"}
"""The ``info`` of a schema object that exists on PostgreSQL only (see `exists_on`)."""


def exists_on(obj: SchemaItem, dialect: str) -> bool:
    """Whether a schema object of the models exists on ``dialect``.

    Alembic's comparison leaves the others out (`migrations/env.py`).
    """
    return bool(obj.info.get("dialect", dialect) == dialect)


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
    Column("state", NullableJSON, nullable=True),
    Column("head_seq", Integer, nullable=True),
    Column("revision", String(32), nullable=False, server_default="0"),
    Column("branched", Boolean, nullable=False, server_default=text("false")),
    # Listing order (creation never changes; unlike updated_at it is not rewritten by appends),
    # with the id as the tie-break, so any page is one index range, with or without a tenant.
    Index(None, "created_at", "id"),
    Index(None, "tenant", "created_at", "id"),
)

conversation_tags: Final = Table(
    "conversation_tags",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("tag", String(32), primary_key=True),
    Column("tenant", String(255), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    # A metadata filter walks one tag's conversations newest first, with or without a tenant.
    Index(None, "tag", "created_at", "conversation_id"),
    Index(None, "tenant", "tag", "created_at", "conversation_id"),
)
"""One row per top-level metadata entry of a conversation: ``tag`` is a digest of the key and
its value (`convstore.store.conversations.metadata_tags`), so equality filters are index ranges of
fixed-size entries whatever the values hold. ``tenant`` and ``created_at`` copy the conversation's
(neither ever changes), so a filtered page never reads a conversation it does not list."""

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
    Column("parent_seq", Integer, nullable=True),
    Column("message_id", String(255), nullable=True),
    Column("parts", JSON, nullable=False, server_default=text("'[]'")),
    Column("native", NullableJSON, nullable=True),
    Column("usage", NullableJSON, nullable=True),
    # Partial: most messages have no application id, and an index entry per message would cost
    # every append a page.
    Index(
        None,
        "conversation_id",
        "message_id",
        unique=True,
        sqlite_where=text("message_id IS NOT NULL"),
        postgresql_where=text("message_id IS NOT NULL"),
    ),
    Index(
        "ix_messages_message_id",
        "message_id",
        sqlite_where=text("message_id IS NOT NULL"),
        postgresql_where=text("message_id IS NOT NULL"),
    ),
    # Children that do not follow their parent by one seq: the first message of a branch, or
    # of an append after a pop. With the message ``seq + 1`` they are all of a message's
    # children, so `pop` finds whether the head has any without a scan, while an append that
    # continues a chain (the common case) writes no entry here.
    Index(
        "ix_messages_branch_children",
        "conversation_id",
        "parent_seq",
        sqlite_where=text("parent_seq <> seq - 1"),
        postgresql_where=text("parent_seq <> seq - 1"),
    ),
)

attachments: Final = Table(
    "attachments",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("media_type", String(255), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

blob_refs: Final = Table(
    "blob_refs",
    metadata,
    Column("conversation_id", ID, primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("sha256", String(64), ForeignKey("attachments.sha256"), primary_key=True),
    Column("namespace", String(64), nullable=False, server_default=text("''")),
    ForeignKeyConstraint(
        ["conversation_id", "seq"],
        ["messages.conversation_id", "messages.seq"],
        ondelete="CASCADE",
    ),
    Index(None, "sha256"),
)
"""One row per (message, blob) it references: its own files and those inside content results.
``namespace`` is the blob store namespace holding the bytes (per tenant, or ``""``)."""

blob_tombstones: Final = Table(
    "blob_tombstones",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("deleted_at", UTCDateTime(), nullable=True),
)
"""Blobs garbage collection is deleting (``deleted_at`` NULL) or deleted (when, by the storage's
clock). An append that references one waits for the deletion to end, and stores the bytes again
unless it stored them after the deletion (see `convstore.store.maintenance.garbage`)."""

released_blobs: Final = Table(
    "released_blobs",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("released_at", UTCDateTime(), nullable=False),
)
"""Blobs that lost their last reference to a tenant erase: the next garbage collection deletes
them whatever their age (see `convstore.store.maintenance.released_blobs`)."""

tool_calls: Final = Table(
    "tool_calls",
    metadata,
    # Tied to the conversation, not to the message that made the call: deleting a message
    # would have to find its calls by (conversation_id, seq), which no index serves (one would
    # cost every append a page), so every message delete scanned the conversation's calls
    # (and deleting a conversation was quadratic). `pop` deletes a message's calls itself.
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
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
    Column("cancelled_at", UTCDateTime(), nullable=True),
    # Only pending calls: a user turn interrupts them and cancel_tool_calls cancels them, and
    # neither should scan a conversation's finished calls.
    Index(
        "ix_tool_calls_pending",
        "conversation_id",
        "seq",
        sqlite_where=text("status = 'pending'"),
        postgresql_where=text("status = 'pending'"),
    ),
    # PostgreSQL only (revision 0012): its one-statement window (`convstore.db.postgres.load`) finds
    # the calls made and answered in a window through these, in index ranges, instead of
    # parsing the window's parts. SQLite reads a window's calls by the ids its decoded parts
    # name (`convstore.store.load.reads.calls_of`); its appends do not pay for them.
    Index("ix_tool_calls_seq", "conversation_id", "seq", info=POSTGRESQL_ONLY).ddl_if(
        dialect="postgresql"
    ),
    Index("ix_tool_calls_result_seq", "conversation_id", "result_seq", info=POSTGRESQL_ONLY).ddl_if(
        dialect="postgresql"
    ),
)

compactions: Final = Table(
    "compactions",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("through_seq", Integer, nullable=False),
    Column("summary", Text, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)
"""``id`` counts a conversation's compactions from 1 (no global sequence)."""

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

settings: Final = Table(
    "settings",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)
"""Store-wide settings, such as where the blobs live (so gc and fsck find them from anywhere)."""


# -- LangGraph checkpoints (convstore.integrations.langgraph) -----------------------------------
# A thread is a conversation: its checkpoints live in the tables below, keyed by conversation id
# first, and go with it when it is deleted. The store treats checkpoint, value and write payloads
# as opaque bytes typed by the serializer that wrote them (``*_type``); it never decodes them.

CHECKPOINT_KEY = String(255)
"""Checkpoint namespaces, channel names, versions and task ids (the framework's own strings)."""

checkpoints: Final = Table(
    "checkpoints",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("checkpoint_ns", CHECKPOINT_KEY, primary_key=True),
    Column("checkpoint_id", CHECKPOINT_KEY, primary_key=True),
    Column("parent_checkpoint_id", CHECKPOINT_KEY, nullable=True),
    Column("checkpoint_type", String(32), nullable=False),
    Column("checkpoint", LargeBinary, nullable=False),
    Column("channel_versions", JSON, nullable=False),
    Column("metadata", JSON, nullable=False),
)
"""One row per checkpoint: the checkpoint without its channel values, its metadata and parent;
``channel_versions`` names the version (as text) of each channel value it holds.
Checkpoint ids sort by creation time (LangGraph's are UUIDv6), so a thread's newest checkpoint
is its largest id."""

checkpoint_values: Final = Table(
    "checkpoint_values",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("checkpoint_ns", CHECKPOINT_KEY, primary_key=True),
    Column("channel", CHECKPOINT_KEY, primary_key=True),
    Column("version", CHECKPOINT_KEY, primary_key=True),
    Column("value_type", String(32), nullable=False),
    Column("value", LargeBinary, nullable=True),
)
"""A channel's value at one version, written once when the version first appears; a checkpoint
names the versions it holds. A channel of messages holds references to the conversation's
messages (stored once), not the messages."""

checkpoint_writes: Final = Table(
    "checkpoint_writes",
    metadata,
    Column(
        "conversation_id",
        ID,
        ForeignKey("conversations.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("checkpoint_ns", CHECKPOINT_KEY, primary_key=True),
    Column("checkpoint_id", CHECKPOINT_KEY, primary_key=True),
    Column("task_id", CHECKPOINT_KEY, primary_key=True),
    Column("idx", Integer, primary_key=True, autoincrement=False),
    Column("channel", CHECKPOINT_KEY, nullable=False),
    Column("value_type", String(32), nullable=False),
    Column("value", LargeBinary, nullable=True),
    Column("task_path", Text, nullable=False, server_default=text("''")),
)
"""Writes of a checkpoint's tasks not yet folded into a checkpoint (LangGraph's pending writes)."""
