"""Read operations, each a function of one open read transaction (``fn(tx)``).

Invariants:

- Loading a conversation runs a fixed number of statements whatever its length: the
  conversation row, its tool calls, its messages joined with their parts, and its
  compactions, each one ``SELECT`` over a contiguous ``seq`` range (sequence numbers have no
  gaps). A ``last=N`` window reads index ranges and key lookups only, so its cost follows N,
  not the conversation's length.
- Tool calls come with the messages that made or answered them, so a ``last=N`` window still
  knows the lifecycle of every result in it.
- Nothing here reads blob bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from convstore.db.mapping import decode_compactions, decode_conversation_row, decode_messages
from convstore.db.tx import Tx
from convstore.errors import ConversationNotFoundError
from convstore.model import Conversation, Message

__all__ = [
    "ConversationSummary",
    "attachment_visible",
    "list_conversations",
    "load_conversation",
    "messages_between",
    "referenced_blobs",
]


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation's header, without its messages."""

    id: str
    title: str | None
    tenant: str | None
    metadata: dict[str, Any]
    message_count: int
    created_at: datetime
    updated_at: datetime


def load_conversation(tx: Tx, cid: str, tenant: str | None, last: int | None) -> Conversation:
    """The conversation, whole or its newest ``last`` messages."""
    st = tx.statements
    rows = tx.fetch(st.select_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant})
    if not rows:
        raise ConversationNotFoundError(cid)
    last_seq: int = rows[0][4]
    first = 1 if last is None else max(1, last_seq - last + 1)
    window = {"cid": cid, "first": first, "last": last_seq}
    calls = st.select_tool_calls if first == 1 else st.select_tool_calls_between
    messages, tool_calls = decode_messages(
        tx.stream(st.select_message_parts, window), tx.fetch(calls, window), tx.codec
    )
    compactions = decode_compactions(tx.fetch(st.select_compactions, {"cid": cid}), tx.codec)
    return decode_conversation_row(rows[0], tx.codec, messages, tool_calls, compactions)


def messages_between(tx: Tx, cid: str, first: int, last: int) -> list[Message]:
    """Messages ``first..last`` (inclusive) of a conversation already known to be visible."""
    window = {"cid": cid, "first": first, "last": last}
    st = tx.statements
    messages, _ = decode_messages(
        tx.stream(st.select_message_parts, window),
        tx.fetch(st.select_tool_calls_between, window),
        tx.codec,
    )
    return messages


def list_conversations(tx: Tx, tenant: str | None, limit: int) -> list[ConversationSummary]:
    """The most recently updated conversations first."""
    rows = tx.fetch(
        tx.statements.list_conversations.pick(tenant), {"for_tenant": tenant, "limit": limit}
    )
    codec = tx.codec
    return [
        ConversationSummary(
            id=cid,
            title=title,
            tenant=row_tenant,
            metadata=codec.load_json(metadata) or {},
            message_count=last_seq,
            created_at=codec.load_time(created),
            updated_at=codec.load_time(updated),
        )
        for cid, row_tenant, title, metadata, last_seq, created, updated in rows
    ]


def attachment_visible(tx: Tx, sha256: str, tenant: str | None) -> bool:
    """Whether any conversation (of ``tenant``, when given) references the blob."""
    rows = tx.fetch(
        tx.statements.select_attachment_visible.pick(tenant),
        {"sha256": sha256, "for_tenant": tenant},
    )
    return bool(rows)


def referenced_blobs(tx: Tx) -> set[str]:
    """Every blob hash some part row references."""
    return {row[0] for row in tx.fetch(tx.statements.select_referenced_blobs)}
