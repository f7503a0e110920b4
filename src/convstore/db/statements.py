"""Every statement the store runs, built once from the schema for one dialect.

Invariants:

- Statements are SQLAlchemy Core objects with named bind parameters. A `Tx` either compiles
  them to the driver's SQL (SQLite hot path) or executes them through SQLAlchemy (PostgreSQL);
  the SQL text has one source either way.
- ``INSERT`` statements bind every column in table order, so the row builders in
  `convstore.store.rows` produce plain tuples in `column_names(table)` order.
- Upserts use the dialect's own ``ON CONFLICT`` construct; nothing else is dialect-specific.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    Delete,
    Insert,
    Select,
    Table,
    Update,
    bindparam,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from convstore.db.schema import (
    append_keys,
    attachments,
    compactions,
    conversations,
    messages,
    parts,
    tool_calls,
)

__all__ = ["Scoped", "Statements", "column_names"]

S = TypeVar("S", Select[Any], Update, Delete)


def column_names(table: Table) -> tuple[str, ...]:
    """Column names in table order: the tuple layout of that table's rows."""
    return tuple(c.name for c in table.columns)


@dataclass(frozen=True, slots=True)
class Scoped(Generic[S]):
    """One statement in two forms: for any tenant, and restricted to ``:for_tenant``."""

    any_tenant: S
    one_tenant: S

    def pick(self, tenant: str | None) -> S:
        """The form to run when the caller passed ``tenant``."""
        return self.any_tenant if tenant is None else self.one_tenant


def _scoped(build: Callable[[bool], S]) -> Scoped[S]:
    return Scoped(any_tenant=build(False), one_tenant=build(True))


def _by_conversation(tenant_scoped: bool) -> ColumnElement[bool]:
    where = conversations.c.id == bindparam("cid")
    if tenant_scoped:
        where = where & (conversations.c.tenant == bindparam("for_tenant"))
    return where


def _upsert_ignore(dialect_name: str, table: Table) -> Insert:
    match dialect_name:
        case "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        case "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing()
        case _:
            raise NotImplementedError(f"no upsert for dialect {dialect_name!r}")


_CONVERSATION_COLUMNS = (
    conversations.c.id,
    conversations.c.tenant,
    conversations.c.title,
    conversations.c.metadata,
    conversations.c.last_seq,
    conversations.c.created_at,
    conversations.c.updated_at,
)


_PART_COLUMNS = (
    parts.c.idx,
    parts.c.parent_idx,
    parts.c.kind,
    parts.c.text,
    parts.c.call_id,
    parts.c.result_kind,
    parts.c.media_type,
    parts.c.blob_sha256,
    parts.c.data,
)
"""A part's columns after its message's, in the order `convstore.db.mapping` reads them."""

_TOOL_CALL_COLUMNS = (
    tool_calls.c.id,
    tool_calls.c.seq,
    tool_calls.c.name,
    tool_calls.c.provider_id,
    tool_calls.c.arguments,
    tool_calls.c.raw_arguments,
    tool_calls.c.status,
    tool_calls.c.result_kind,
    tool_calls.c.result_seq,
    tool_calls.c.result_idx,
    tool_calls.c.details,
    tool_calls.c.created_at,
    tool_calls.c.completed_at,
)
"""The columns a `ToolCall` is built from, in the order `store.load` reads them."""


def _list_conversations(tenant_scoped: bool) -> Select[Any]:
    stmt = select(*_CONVERSATION_COLUMNS)
    if tenant_scoped:
        stmt = stmt.where(conversations.c.tenant == bindparam("for_tenant"))
    return stmt.order_by(conversations.c.updated_at.desc(), conversations.c.id.desc()).limit(
        bindparam("limit")
    )


def _attachment_visible(tenant_scoped: bool) -> Select[Any]:
    stmt = select(parts.c.conversation_id).where(parts.c.blob_sha256 == bindparam("sha256"))
    if tenant_scoped:
        stmt = stmt.join(conversations, conversations.c.id == parts.c.conversation_id).where(
            conversations.c.tenant == bindparam("for_tenant")
        )
    return stmt.limit(1)


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements for one dialect."""

    # conversations
    insert_conversation: Insert
    bump_seq: Scoped[Update]
    """``last_seq += :n`` (and ``updated_at = :now``) returning the new ``last_seq``."""
    select_conversation: Scoped[Select[Any]]
    delete_conversation: Scoped[Delete]
    list_conversations: Scoped[Select[Any]]
    # messages and parts
    insert_message: Insert
    insert_part: Insert
    insert_attachment: Insert
    select_message_parts: Select[Any]
    """Messages with their parts, one row per part (a message without parts: one row of
    NULL part columns), ordered by (seq, idx): one query, and a row fewer per part."""
    # tool calls
    insert_tool_call: Insert
    select_tool_call: Select[Any]
    select_tool_calls: Select[Any]
    """Every call of a conversation."""
    select_tool_calls_between: Select[Any]
    """The calls made, or answered by their stored result, in messages ``first..last``."""
    complete_tool_call: Update
    interrupt_pending: Update
    cancel_pending: Update
    # compactions and idempotency keys
    insert_compaction: Insert
    select_compactions: Select[Any]
    insert_append_key: Insert
    select_append_key: Select[Any]
    # attachments, across conversations (gc, fsck, tenancy checks)
    select_referenced_blobs: Select[Any]
    delete_unreferenced_attachment: Delete
    select_attachment_visible: Scoped[Select[Any]]

    @classmethod
    def for_dialect(cls, dialect_name: str) -> Statements:
        """Build every statement for ``dialect_name`` (``sqlite`` or ``postgresql``)."""
        conv = conversations.c
        call = tool_calls.c
        return cls(
            insert_conversation=insert(conversations),
            bump_seq=_scoped(
                lambda s: (
                    update(conversations)
                    .where(_by_conversation(s))
                    .values(last_seq=conv.last_seq + bindparam("n"), updated_at=bindparam("now"))
                    .returning(conv.last_seq)
                )
            ),
            select_conversation=_scoped(
                lambda s: select(*_CONVERSATION_COLUMNS).where(_by_conversation(s))
            ),
            delete_conversation=_scoped(lambda s: delete(conversations).where(_by_conversation(s))),
            list_conversations=_scoped(_list_conversations),
            insert_message=insert(messages),
            insert_part=insert(parts),
            insert_attachment=_upsert_ignore(dialect_name, attachments),
            select_message_parts=select(
                messages.c.seq,
                messages.c.role,
                messages.c.provider,
                messages.c.model,
                messages.c.created_at,
                messages.c.details,
                *_PART_COLUMNS,
            )
            .select_from(
                messages.outerjoin(
                    parts,
                    (parts.c.conversation_id == messages.c.conversation_id)
                    & (parts.c.seq == messages.c.seq),
                )
            )
            .where(messages.c.conversation_id == bindparam("cid"))
            .where(messages.c.seq.between(bindparam("first"), bindparam("last")))
            .order_by(messages.c.seq, parts.c.idx),
            insert_tool_call=insert(tool_calls),
            select_tool_call=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == bindparam("cid"))
            .where(call.id == bindparam("call_id")),
            select_tool_calls=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == bindparam("cid"))
            .order_by(call.seq, call.idx),
            select_tool_calls_between=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == bindparam("cid"))
            .where(
                # Found through the window's own part rows (primary-key lookups), so a
                # window's cost does not grow with the conversation.
                call.id.in_(
                    select(parts.c.call_id)
                    .where(parts.c.conversation_id == bindparam("cid"))
                    .where(parts.c.seq.between(bindparam("first"), bindparam("last")))
                    .where(parts.c.call_id.is_not(None))
                )
            )
            .where(
                call.seq.between(bindparam("first"), bindparam("last"))
                | call.result_seq.between(bindparam("first"), bindparam("last"))
            )
            .order_by(call.seq, call.idx),
            complete_tool_call=update(tool_calls)
            .where(call.conversation_id == bindparam("cid"))
            .where(call.id == bindparam("call_id"))
            .values(
                status=bindparam("status"),
                result_kind=bindparam("result_kind"),
                result_seq=bindparam("result_seq"),
                result_idx=bindparam("result_idx"),
                completed_at=bindparam("now"),
            ),
            interrupt_pending=update(tool_calls)
            .where(call.conversation_id == bindparam("cid"))
            .where(call.status == "pending")
            .where(call.seq < bindparam("before_seq"))
            .values(status="interrupted", completed_at=bindparam("now")),
            cancel_pending=update(tool_calls)
            .where(call.conversation_id == bindparam("cid"))
            .where(call.status == "pending")
            .values(status="cancelled", completed_at=bindparam("now"))
            .returning(call.id),
            insert_compaction=insert(compactions).values(
                conversation_id=bindparam("cid"),
                through_seq=bindparam("through_seq"),
                summary=bindparam("summary"),
                created_at=bindparam("now"),
            ),
            select_compactions=select(
                compactions.c.through_seq, compactions.c.summary, compactions.c.created_at
            )
            .where(compactions.c.conversation_id == bindparam("cid"))
            .order_by(compactions.c.id),
            insert_append_key=insert(append_keys),
            select_append_key=select(append_keys.c.first_seq, append_keys.c.count)
            .where(append_keys.c.conversation_id == bindparam("cid"))
            .where(append_keys.c.key == bindparam("key")),
            select_referenced_blobs=select(parts.c.blob_sha256)
            .where(parts.c.blob_sha256.is_not(None))
            .distinct(),
            delete_unreferenced_attachment=delete(attachments)
            .where(attachments.c.sha256 == bindparam("sha256"))
            .where(
                ~select(parts.c.blob_sha256)
                .where(parts.c.blob_sha256 == bindparam("sha256"))
                .exists()
            ),
            select_attachment_visible=_scoped(_attachment_visible),
        )
