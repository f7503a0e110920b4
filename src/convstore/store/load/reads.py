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

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from convstore.db.mapping import (
    decode_compactions,
    decode_conversation,
    decode_messages,
    new_tool_call,
    outputs_of,
)
from convstore.db.statements.conversations import HeaderAt
from convstore.db.statements.messages import MessageAt
from convstore.db.statements.tool_calls import LifecycleAt
from convstore.db.tx import Codec, Row, Tx
from convstore.errors import ConversationNotFoundError, MessageNotFoundError
from convstore.limits import MAX_SEQ
from convstore.model import (
    Branch,
    Conversation,
    Message,
    Role,
    ToolCall,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
)
from convstore.model.tree import MessageTree, TreeNode
from convstore.store.history.lifecycle import path_lifecycles
from convstore.store.load._message_reads import MessageDecoder, TxMessages
from convstore.store.load.message_cache import MessageCache

__all__ = [
    "attachment_namespaces",
    "blob_namespaces",
    "branches",
    "calls_of",
    "conversation_tenant",
    "find_message",
    "header_row",
    "load_conversation",
    "messages_at",
    "messages_by_seq",
    "other_path",
    "path_seqs",
    "referenced_blobs",
    "tombstoned",
]

_NO_LIMIT = 2**62
# Enum members bound once: `Role.TOOL` is a lookup through the enum's metaclass on every use,
# which the per-message loops of a load would pay hundreds of times.
_ASSISTANT: Final = Role.ASSISTANT
_TOOL: Final = Role.TOOL

_H: Final = HeaderAt
_M: Final = MessageAt
_L: Final = LifecycleAt
"""Positions in header, message and lifecycle rows (`convstore.db.statements`)."""


def messages_at(tx: Tx, cid: str, seqs: Iterable[int]) -> list[Message]:
    """The messages with these sequence numbers (those that exist), by ``seq``."""
    return TxMessages(tx, cid, None, None).at(seqs)


def messages_by_seq(tx: Tx, cid: str, tenant: str | None, seqs: list[int]) -> list[Message]:
    """The messages with these ``seq`` s, on any branch, in the order asked.

    `MessageNotFoundError` names the first seq the conversation does not hold.
    """
    owner = conversation_tenant(tx, cid)
    if tenant is not None and owner != tenant:
        raise ConversationNotFoundError(cid)
    found = {m.seq: m for m in messages_at(tx, cid, sorted(set(seqs)))}
    missing = [seq for seq in seqs if seq not in found]
    if missing:
        raise MessageNotFoundError(f"conversation {cid!r} holds no message with seq {missing[0]}")
    return [found[seq] for seq in seqs]


def path_seqs(tx: Tx, cid: str, end: int | None) -> list[int]:
    """The sequence numbers of the path root → ``end``, in order."""
    if end is None:
        return []
    rows = tx.fetch(
        tx.statements.select_path_window,
        {"cid": cid, "head": end, "before": _NO_LIMIT, "n": _NO_LIMIT},
    )
    return sorted(row[_M.seq] for row in rows)


def tree(tx: Tx, cid: str) -> list[Row]:
    """Every message's (seq, parent_seq, role, created_at), by ``seq``."""
    return tx.fetch(tx.statements.select_tree, {"cid": cid})


def header_row(tx: Tx, cid: str, tenant: str | None) -> Row:
    """The conversation's header row (`HeaderAt`); `ConversationNotFoundError` if unseen."""
    rows = tx.fetch(
        tx.statements.select_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if not rows:
        raise ConversationNotFoundError(cid)
    return rows[0]


def load_conversation(
    tx: Tx,
    cid: str,
    tenant: str | None,
    last: int | None,
    before_seq: int | None = None,
    *,
    head_seq: int | None = None,
    cache: MessageCache | None = None,
) -> Conversation:
    """The path root → head (the stored one, or ``head_seq``).

    Whole, or the newest ``last`` messages below ``before_seq``.
    """
    st, codec = tx.statements, tx.codec
    header = header_row(tx, cid, tenant)
    head, branched = header[_H.head_seq], bool(header[_H.branched])
    reader = TxMessages(tx, cid, header[_H.created_at], cache)
    if head_seq is not None and head_seq != head:
        return _load_other_path(tx, reader, header, head_seq, last, before_seq)
    whole = last is None and before_seq is None
    if head is None:
        messages: list[Message] = []
    elif whole and not branched:
        messages = reader.read(
            st.select_messages, st.select_message_keys, {"cid": cid}, stream=True
        )
    else:
        window = {
            "cid": cid,
            "head": head,
            "before": _NO_LIMIT if before_seq is None else before_seq,
            "n": _NO_LIMIT if last is None else last,
        }
        if branched:
            messages = reader.read(st.select_path_window, st.select_path_window_keys, window)
        else:
            messages = reader.read(st.select_messages_before, st.select_message_keys_before, window)
        messages.reverse()
    tool_calls = calls_of(reader, messages, everything=whole)
    compactions = decode_compactions(tx.fetch(st.select_compactions, {"cid": cid}), codec)
    return decode_conversation(header, codec, messages, tool_calls, compactions)


def calls_of(
    reader: MessageDecoder, messages: list[Message], *, everything: bool
) -> list[ToolCall]:
    """The calls made or answered in ``messages`` (a window of the active path).

    Their lifecycles are those stored for that path. Calls made in the window are built from
    their own parts; only their lifecycles are read (`LIFECYCLE_COLUMNS`). A call answered in
    the window but made before it is built from the message that made it.
    """
    codec = reader.codec
    # One pass: the calls the window makes, the calls its results answer, their outputs.
    made: list[tuple[int, ToolCallPart]] = []
    ids: dict[str, None] = {}
    answered: dict[str, None] = {}
    outputs: dict[tuple[int, int], ToolOutput] = {}
    for message in messages:
        role = message.role
        if role is _ASSISTANT:
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    made.append((message.seq or 0, part))
                    ids[part.id] = None
        elif role is _TOOL:
            for idx, part in enumerate(message.parts):
                if isinstance(part, ToolResultPart):
                    answered[part.call_id] = None
                    outputs[(message.seq or 0, idx)] = part.output
    reaching_back = not everything and not answered.keys() <= ids.keys()
    ids.update(answered)
    if not ids:
        return []
    first = messages[0].seq
    rows = reader.call_rows(
        everything=everything, reaching_back=reaching_back, ids=list(ids), first=first
    )
    if not rows:
        return []
    calls = []
    if not everything:
        window = {m.seq for m in messages}
        # A call made in the window whose result lies after it (a before_seq page): its output.
        answered_in = {row[_L.result_seq] for row in rows}
        later = sorted({seq for seq in answered_in if seq is not None and seq not in window})
        if later:
            outputs.update(outputs_of(reader.later(later)))
        # Calls answered here but made before the window (results follow calls on a path, so
        # the statement gave their name and arguments), in call order.
        if reaching_back:
            before = [
                r
                for r in rows
                if r[_L.result_seq] in window and r[_L.seq] not in window and r[_L.name]
            ]
            for row in sorted(before, key=lambda r: (r[_L.seq], r[_L.idx])):
                arguments = codec.load_json(row[_L.arguments])
                made_by = (row[_L.id], row[_L.name], arguments, row[_L.provider_id])
                calls.append(_lifecycle_call(made_by, row, outputs, codec.load_time))
    lifecycles = {row[_L.id]: row for row in rows}
    calls.extend(_built_calls(made, lifecycles.get, outputs, codec.load_time, reader))
    return calls


LifecycleRow = tuple[Any, ...]
"""A `LIFECYCLE_COLUMNS` row: id, seq, idx, status, result_kind, result_seq, result_idx,
created_at, completed_at, cancelled_at."""


def _built_calls(
    made: Iterable[tuple[int, ToolCallPart]],
    lifecycle_of: Callable[[str], LifecycleRow | None],
    outputs: Mapping[tuple[int, int], ToolOutput],
    load_time: Callable[[Any], datetime],
    reader: MessageDecoder | None = None,
) -> list[ToolCall]:
    """A `ToolCall` for each (message seq, call part) of ``made`` that ``lifecycle_of`` knows.

    With a ``reader`` whose cache kept a call built from the same values, that one.
    """
    calls = []
    cache = None if reader is None else reader.cache
    cid = "" if reader is None else reader.cid
    for seq, part in made:
        row = lifecycle_of(part.id)
        if row is None or row[_L.seq] != seq:  # the stored call of that id is another part
            continue
        if cache is None:
            calls.append(_lifecycle_call(part, row, outputs, load_time))
            continue
        result_seq = row[_L.result_seq]
        output = None if result_seq is None else outputs.get((result_seq, row[_L.result_idx]))
        key = (cid, part.id)
        kept = cache.kept_call(key)
        # The same fresh lifecycle row, and the very part and output objects: the same call.
        if kept is not None and kept[0] == row and kept[1] is part and kept[2] is output:
            calls.append(kept[3])
            continue
        call = _lifecycle_call(part, row, outputs, load_time)
        cache.keep_call(key, (row, part, output, call))
        calls.append(call)
    return calls


def _lifecycle_call(
    made: ToolCallPart | tuple[str, str, dict[str, Any], str | None],
    row: LifecycleRow,
    outputs: Mapping[tuple[int, int], ToolOutput],
    load_time: Callable[[Any], datetime],
) -> ToolCall:
    _id, seq, _idx, status, kind, result_seq, result_idx, created, completed = row[:9]
    return new_tool_call(
        made,
        seq=seq,
        status=status,
        result_kind=kind,
        output=None if result_seq is None else outputs.get((result_seq, result_idx)),
        result_seq=result_seq,
        created_at=load_time(created),
        completed_at=None if completed is None else load_time(completed),
    )


def _load_other_path(
    tx: Tx,
    reader: TxMessages,
    header: Row,
    head_seq: int,
    last: int | None,
    before_seq: int | None,
) -> Conversation:
    """The path root → ``head_seq`` (not the stored head): see `other_path`."""
    st, cid = tx.statements, reader.cid
    # ``seq < before``: bounded so that a head of MAX_SEQ (no message has it) binds as a 64-bit
    # integer and finds nothing, instead of overflowing the driver.
    before = min(head_seq + 1, MAX_SEQ)
    params = {"cid": cid, "head": head_seq, "before": before, "n": _NO_LIMIT}
    if header[_H.branched]:
        path = reader.read(st.select_path_window, st.select_path_window_keys, params)
    else:
        path = reader.read(st.select_messages_before, st.select_message_keys_before, params)
    path.reverse()
    calls = tx.fetch(st.select_call_states, {"cid": cid})
    compactions = tx.fetch(st.select_compactions, {"cid": cid})
    return other_path(header, tx.codec, path, calls, compactions, head_seq, last, before_seq)


def other_path(  # noqa: PLR0917 (the rows a load read, and its arguments)
    header: Row,
    codec: Codec,
    path: list[Message],
    call_rows: list[Row],
    compaction_rows: list[Row],
    head_seq: int,
    last: int | None,
    before_seq: int | None,
) -> Conversation:
    """The path root → ``head_seq`` (not the stored head), its lifecycles derived from it.

    ``path`` is the whole of it, oldest first; ``call_rows`` are `LIFECYCLE_COLUMNS` of every
    call of the conversation. Stored lifecycles describe the active path; another path's are
    derived from its own messages (`path_lifecycles`), so a call answered only on the active
    branch is unanswered here. The whole path is read: its lifecycles depend on all of it.
    """
    cid = header[_H.id]
    if not path or path[-1].seq != head_seq:
        raise MessageNotFoundError(f"head_seq {head_seq}", cid)
    made_at = {row[_L.id]: row[_L.seq] for row in call_rows}
    created = {row[_L.id]: codec.load_time(row[_L.created_at]) for row in call_rows}
    cancelled = {
        row[_L.id]: codec.load_time(row[_L.cancelled_at])
        for row in call_rows
        if row[_L.cancelled_at] is not None
    }
    derived = path_lifecycles(path, made_at, cancelled)
    below = [m for m in path if before_seq is None or (m.seq or 0) < before_seq]
    messages = below if last is None else below[max(len(below) - last, 0) :] if last else []
    window = {m.seq for m in messages}
    wanted = {
        call_id: (call_id, made_at[call_id], 0, lc.status.value, lc.result_kind, lc.result_seq,
                  lc.result_idx, created[call_id], lc.completed_at, None)
        for call_id, lc in derived.items()
        if made_at[call_id] in window or lc.result_seq in window
    }  # fmt: skip
    made = [(m.seq or 0, p) for m in path for p in m.parts if isinstance(p, ToolCallPart)]
    tool_calls = _built_calls(made, wanted.get, outputs_of(path), _as_is)
    compactions = decode_compactions(compaction_rows, codec)
    ending_there = list(header)  # the path read ends there
    ending_there[_H.head_seq] = head_seq
    header = tuple(ending_there)
    return decode_conversation(header, codec, messages, tool_calls, compactions)


def _as_is(value: Any) -> Any:
    return value


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
    head = header_row(tx, cid, tenant)[_H.head_seq]
    shape = tree(tx, cid)
    parents = {parent for _seq, parent, _role, _created in shape}
    found = []
    for seq, _parent, _role, created in shape:
        if seq not in parents or seq == head:
            found.append(
                Branch(head_seq=seq, active=seq == head, created_at=tx.codec.load_time(created))
            )
    return found


_ROLES: Final = {role.value: role for role in Role}


def message_tree(tx: Tx, cid: str, tenant: str | None) -> MessageTree:
    """Every message's place in the tree, and the stored head."""
    head = header_row(tx, cid, tenant)[_H.head_seq]
    load_time, roles = tx.codec.load_time, _ROLES
    # Positional arguments and a dict for the role: a third of the cost of keywords and
    # ``Role(...)`` per node (10,000 nodes: 18 vs 78 ms).
    nodes = tuple(
        TreeNode(seq, parent, roles[role], load_time(created))
        for seq, parent, role, created in tree(tx, cid)
    )
    return MessageTree(nodes=nodes, head_seq=head)


def attachment_namespaces(tx: Tx, sha256: str, tenant: str | None) -> list[str]:
    """The namespaces in which conversations (of ``tenant``) reference a blob, shared first."""
    rows = tx.fetch(
        tx.statements.select_attachment_namespaces.pick(tenant),
        {"sha256": sha256, "for_tenant": tenant},
    )
    return sorted({str(namespace) for (namespace,) in rows})


def blob_namespaces(tx: Tx, cid: str) -> dict[str, str]:
    """The namespace of every blob a conversation references, by digest."""
    return dict(tx.fetch(tx.statements.select_blob_namespaces, {"cid": cid}))


def revision_of(tx: Tx, cid: str, tenant: str | None) -> str:
    """A conversation's current revision; `ConversationNotFoundError` if the tenant has none."""
    revision: str = header_row(tx, cid, tenant)[_H.revision]
    return revision


def conversation_tenant(tx: Tx, cid: str) -> str | None:
    """The tenant of a conversation; `ConversationNotFoundError` if there is none."""
    rows = tx.fetch(tx.statements.select_conversation.any_tenant, {"cid": cid})
    if not rows:
        raise ConversationNotFoundError(cid)
    tenant: str | None = rows[0][_H.tenant]
    return tenant


def tombstoned(tx: Tx, blobs: Iterable[tuple[str, str]]) -> bool:
    """Whether garbage collection is deleting any of these (namespace, digest) blobs now."""
    st = tx.statements
    for ns, sha in blobs:
        mark = tx.fetch(st.select_tombstone, {"ns": ns, "digest": sha})
        if mark and mark[0] == (None,):  # marked, bytes not yet deleted
            return True
    return False


def referenced_blobs(tx: Tx) -> set[tuple[str, str]]:
    """Every (namespace, digest) some message references."""
    return {(ns, sha) for ns, sha in tx.fetch(tx.statements.select_referenced_blobs)}
