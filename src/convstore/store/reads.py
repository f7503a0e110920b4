"""Read operations, each a function of one open read transaction (``fn(tx)``).

Invariants:

- Loading a conversation runs a fixed number of statements whatever its length: the header,
  its messages, their tool calls and its compactions. An unbranched conversation (one chain,
  its tip the head) reads messages by ``seq`` ranges; a branched one walks the parent
  pointers up from the head. Either way a ``last=N`` window costs what N costs, not what the
  conversation's length or branch count does.
- Tool calls come with the messages that made or answered them, so a window still knows the
  lifecycle of every call and result in it; a call whose result lies after a ``before_seq``
  window still shows that result.
- Nothing here reads blob bytes.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import from_json, to_json

from convstore.db.mapping import (
    decode_compactions,
    decode_conversation,
    decode_messages,
    decode_tool_calls,
    outputs_of,
)
from convstore.db.statements import list_page
from convstore.db.tx import Row, Tx
from convstore.errors import ConversationNotFoundError, InvalidInputError, MessageNotFoundError
from convstore.model import Branch, Conversation, Message, ToolCallPart, ToolResultPart
from convstore.store.metadata_tags import tags_of

__all__ = [
    "ConversationPage",
    "ConversationSummary",
    "attachment_namespaces",
    "blob_namespaces",
    "branches",
    "conversation_tenant",
    "find_message",
    "list_conversations",
    "load_conversation",
    "messages_at",
    "path_seqs",
    "referenced_blobs",
    "tombstoned",
]

_NO_LIMIT = 2**62


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation's header, without its messages."""

    id: str
    title: str | None
    tenant: str | None
    metadata: dict[str, Any]
    message_count: int
    """Messages stored, on every branch."""
    created_at: datetime
    updated_at: datetime
    revision: str = ""
    cursor: str = ""
    """Pass as ``cursor=`` to list the conversations after this one."""


class ConversationPage(list[ConversationSummary]):
    """One page of `list_conversations`: a list, plus where the next page starts."""

    next_cursor: str | None = None
    """The cursor of the next page; ``None`` on the last page."""

    @property
    def has_more(self) -> bool:
        """Whether another page follows."""
        return self.next_cursor is not None


def messages_at(tx: Tx, cid: str, seqs: Iterable[int]) -> list[Message]:
    """The messages with these sequence numbers (those that exist), by ``seq``."""
    wanted = list(seqs)
    if not wanted:
        return []
    rows = tx.fetch(
        tx.statements.select_messages_in, {"cid": cid, "seqs": tx.codec.dump_json(wanted)}
    )
    return decode_messages(cid, rows, tx.codec)


def path_seqs(tx: Tx, cid: str, end: int | None) -> list[int]:
    """The sequence numbers of the path root → ``end``, in order."""
    if end is None:
        return []
    rows = tx.fetch(
        tx.statements.select_path_window,
        {"cid": cid, "head": end, "before": _NO_LIMIT, "n": _NO_LIMIT},
    )
    return sorted(row[0] for row in rows)


def tree(tx: Tx, cid: str) -> list[Row]:
    """Every message's (seq, parent_seq, role, created_at), by ``seq``."""
    return tx.fetch(tx.statements.select_tree, {"cid": cid})


def load_conversation(
    tx: Tx, cid: str, tenant: str | None, last: int | None, before_seq: int | None = None
) -> Conversation:
    """The active path, whole or the newest ``last`` messages below ``before_seq``."""
    st, codec = tx.statements, tx.codec
    rows = tx.fetch(st.select_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant})
    if not rows:
        raise ConversationNotFoundError(cid)
    header = rows[0]
    head, branched = header[8], bool(header[10])
    whole = last is None and before_seq is None
    if head is None:
        messages: list[Message] = []
    elif whole and not branched:
        messages = decode_messages(cid, tx.stream(st.select_messages, {"cid": cid}), codec)
    else:
        window = {
            "cid": cid,
            "head": head,
            "before": _NO_LIMIT if before_seq is None else before_seq,
            "n": _NO_LIMIT if last is None else last,
        }
        stmt = st.select_path_window if branched else st.select_messages_before
        messages = decode_messages(cid, tx.fetch(stmt, window), codec)
        messages.reverse()
    tool_calls = _calls_of(tx, cid, messages, everything=whole and not branched)
    compactions = decode_compactions(tx.fetch(st.select_compactions, {"cid": cid}), codec)
    return decode_conversation(header, codec, messages, tool_calls, compactions)


def _calls_of(tx: Tx, cid: str, messages: list[Message], *, everything: bool) -> list[Any]:
    """The calls made or answered in ``messages``, with their outputs."""
    st, codec = tx.statements, tx.codec
    outputs = outputs_of(messages)
    if everything:
        return decode_tool_calls(tx.fetch(st.select_tool_calls, {"cid": cid}), outputs, codec)
    made: set[int] = set()
    ids: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                ids.append(part.id)
                made.add(message.seq or 0)
            elif isinstance(part, ToolResultPart):
                ids.append(part.call_id)
    if not ids:
        return []
    window = {m.seq for m in messages}
    rows = [
        row
        for row in tx.fetch(st.select_tool_calls_in, {"cid": cid, "ids": codec.dump_json(ids)})
        if row[1] in window or row[8] in window
    ]
    # A call made in the window whose result lies after it (a before_seq page): its output.
    later = {row[8] for row in rows if row[8] is not None and row[8] not in window}
    if later:
        outputs.update(outputs_of(messages_at(tx, cid, sorted(later))))
    return decode_tool_calls(rows, outputs, codec)


def encode_cursor(created_at: datetime, cid: str) -> str:
    """An opaque cursor for the listing position of one conversation."""
    raw = to_json([created_at.isoformat(), cid])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, cid = from_json(base64.urlsafe_b64decode(padded.encode("ascii")))
        return datetime.fromisoformat(created), str(cid)
    except (ValueError, TypeError, binascii.Error, UnicodeError) as exc:
        raise InvalidInputError(f"not a list_conversations cursor: {cursor!r}") from exc


def list_conversations(
    tx: Tx,
    tenant: str | None,
    limit: int,
    cursor: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ConversationPage:
    """Conversations, newest first (by creation, then id), ``limit`` at a time.

    Creation order never changes, so a walk by cursor sees every conversation that existed
    when it started exactly once, however the others are written meanwhile. One statement per
    page (`convstore.db.statements.list_page`): an index range whatever the page's depth, the
    metadata filter included, so a read never holds its snapshot across pages.
    """
    codec = tx.codec
    tags = tags_of(metadata)
    params: dict[str, Any] = {"for_tenant": tenant, "limit": limit + 1}
    params.update({f"tag{i}": t for i, t in enumerate(tags)})
    if cursor is not None:
        after_created, params["after_id"] = _decode_cursor(cursor)
        params["after_created"] = codec.dump_time(after_created)
    stmt = list_page(
        tenant_scoped=tenant is not None, after_cursor=cursor is not None, tags=len(tags)
    )
    page = ConversationPage()
    for row in tx.fetch(stmt, params):
        (cid, row_tenant, title, meta, _last, created, updated, _state, _head, revision,
         _branched, count) = row  # fmt: skip
        created_at = codec.load_time(created)
        page.append(
            ConversationSummary(
                id=cid,
                title=title,
                tenant=row_tenant,
                metadata=codec.load_json(meta) or {},
                message_count=count,
                created_at=created_at,
                updated_at=codec.load_time(updated),
                revision=revision,
                cursor=encode_cursor(created_at, cid),
            )
        )
    if len(page) > limit:
        del page[limit:]
        page.next_cursor = page[-1].cursor if page else None
    return page


def find_message(
    tx: Tx, message_id: str, conversation_id: str | None, tenant: str | None
) -> Message:
    """The message with the application id ``message_id``; `MessageNotFoundError` if none."""
    st = tx.statements
    if conversation_id is not None:
        visible = tx.fetch(
            st.select_conversation.pick(tenant), {"cid": conversation_id, "for_tenant": tenant}
        )
        if not visible:
            raise MessageNotFoundError(message_id, conversation_id)
        rows = tx.fetch(st.select_message_by_id, {"cid": conversation_id, "message_id": message_id})
        if not rows:
            raise MessageNotFoundError(message_id, conversation_id)
        return decode_messages(conversation_id, rows, tx.codec)[0]
    found = tx.fetch(st.find_message.pick(tenant), {"message_id": message_id, "for_tenant": tenant})
    if not found:
        raise MessageNotFoundError(message_id)
    cid, *row = found[0]
    return decode_messages(cid, [tuple(row)], tx.codec)[0]


def branches(tx: Tx, cid: str, tenant: str | None) -> list[Branch]:
    """One `Branch` per tip of the message tree (and the head, if it is not a tip)."""
    rows = tx.fetch(
        tx.statements.select_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if not rows:
        raise ConversationNotFoundError(cid)
    head = rows[0][8]
    shape = tree(tx, cid)
    parents = {row[1] for row in shape}
    found = []
    for seq, _parent, _role, created in shape:
        if seq not in parents or seq == head:
            found.append(
                Branch(head_seq=seq, active=seq == head, created_at=tx.codec.load_time(created))
            )
    return found


def attachment_namespaces(tx: Tx, sha256: str, tenant: str | None) -> list[str]:
    """The namespaces in which conversations (of ``tenant``) reference a blob, shared first."""
    rows = tx.fetch(
        tx.statements.select_attachment_namespaces.pick(tenant),
        {"sha256": sha256, "for_tenant": tenant},
    )
    return sorted({str(row[0]) for row in rows})


def blob_namespaces(tx: Tx, cid: str) -> dict[str, str]:
    """The namespace of every blob a conversation references, by digest."""
    return dict(tx.fetch(tx.statements.select_blob_namespaces, {"cid": cid}))


def revision_of(tx: Tx, cid: str, tenant: str | None) -> str:
    """A conversation's current revision; `ConversationNotFoundError` if the tenant has none."""
    rows = tx.fetch(
        tx.statements.select_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if not rows:
        raise ConversationNotFoundError(cid)
    revision: str = rows[0][9]
    return revision


def conversation_tenant(tx: Tx, cid: str) -> str | None:
    """The tenant of a conversation; `ConversationNotFoundError` if there is none."""
    rows = tx.fetch(tx.statements.select_conversation.any_tenant, {"cid": cid})
    if not rows:
        raise ConversationNotFoundError(cid)
    tenant: str | None = rows[0][1]
    return tenant


def tombstoned(tx: Tx, blobs: Iterable[tuple[str, str]]) -> bool:
    """Whether garbage collection is deleting any of these (namespace, digest) blobs now."""
    st = tx.statements
    for ns, sha in blobs:
        mark = tx.fetch(st.select_tombstone, {"ns": ns, "digest": sha})
        if mark and mark[0][0] is None:
            return True
    return False


def referenced_blobs(tx: Tx) -> set[tuple[str, str]]:
    """Every (namespace, digest) some message references."""
    return {(ns, sha) for ns, sha in tx.fetch(tx.statements.select_referenced_blobs)}
