"""Branches and undo: moving the head, removing messages, forking, and the lifecycles they move.

Each operation is a function of one open write transaction (``fn(tx)``), like `writes`.

Invariants:

- The head names the active path; `pop` and `truncate` walk it back, `switch_branch` moves it
  anywhere in the tree, `fork` copies the path to a point into a new conversation.
- A popped message is deleted only when no other message descends from it; otherwise it stays
  for the branches that run through it and only the head moves. Deleting a message deletes the
  calls it made and its blob references (so gc may collect its blobs), by cascade.
- ``tool_calls`` rows describe lifecycles on the active path. Whenever the path changes other
  than by growing at its end, `recompute_lifecycles` rederives them from the path: the first
  result after the call on the path completes it, unless it was stored after the call was
  cancelled (then it is history, as it was when appended); otherwise a call ever cancelled is
  cancelled (``cancelled_at`` keeps that across paths); otherwise a later user message
  interrupts it; otherwise it is pending.
- Sequence numbers are never reused: a fork keeps the source's numbers, and the source's
  counter is never wound back.
"""

from __future__ import annotations

from datetime import datetime

from convstore.db.tx import Tx
from convstore.errors import InvalidInputError
from convstore.model import Conversation, Message, Role, ToolCallStatus, ToolResultPart
from convstore.store.ids import new_id
from convstore.store.lifecycle import status_for
from convstore.store.metadata_tags import write_tags
from convstore.store.reads import load_conversation, messages_at, path_seqs, tree
from convstore.store.writes import Header, advance, lock, new_revision

__all__ = ["fork", "pop", "recompute_lifecycles", "switch_branch", "truncate"]


def recompute_lifecycles(tx: Tx, cid: str, end: int | None, now: datetime) -> None:
    """Rederive the lifecycle of every call on the path root → ``end``."""
    st, codec = tx.statements, tx.codec
    path = path_seqs(tx, cid, end)
    if not path:
        return
    roles = {seq: role for seq, _parent, role, _created in tree(tx, cid)}
    wanted = [s for s in path if roles.get(s) in (Role.ASSISTANT.value, Role.TOOL.value)]
    messages = messages_at(tx, cid, wanted)
    calls = [(m.seq or 0, p.id) for m in messages for p in m.tool_calls]
    if not calls:
        return
    rows = {
        row[0]: row
        for row in tx.fetch(
            st.select_tool_calls_in, {"cid": cid, "ids": codec.dump_json([c for _, c in calls])}
        )
    }
    results: list[tuple[int, int, ToolResultPart]] = [
        (m.seq or 0, idx, part)
        for m in messages
        if m.role is Role.TOOL
        for idx, part in enumerate(m.parts)
        if isinstance(part, ToolResultPart)
    ]
    users = [s for s in path if roles.get(s) == Role.USER.value]
    created = {m.seq: m.created_at for m in messages}
    cancelled = {
        call_id: codec.load_time(at)
        for call_id, at in tx.fetch(
            st.select_cancellations, {"cid": cid, "ids": codec.dump_json([c for _, c in calls])}
        )
    }
    stamp = codec.dump_time(now)
    changes = []
    for seq, call_id in calls:
        row = rows.get(call_id)
        if row is None or row[1] != seq:
            continue
        cancelled_at = cancelled.get(call_id)

        def answers(rs: int, result: ToolResultPart, call_id: str = call_id, seq: int = seq,
                    cancelled_at: datetime | None = cancelled_at) -> bool:  # fmt: skip
            if rs <= seq or result.call_id != call_id:
                return False
            # A result stored after the cancellation was refused (or kept as history only).
            stored_at = created.get(rs)
            return cancelled_at is None or (stored_at is not None and stored_at < cancelled_at)

        answer = next(((rs, ri, r) for rs, ri, r in results if answers(rs, r)), None)
        wanted_row: tuple[str, str | None, int | None, int | None]
        if answer is not None:
            rs, ri, result = answer
            wanted_row = (status_for(result.output).value, result.output.kind, rs, ri)
        elif cancelled_at is not None:
            wanted_row = (ToolCallStatus.CANCELLED.value, None, None, None)
        elif any(u > seq for u in users):
            wanted_row = (ToolCallStatus.INTERRUPTED.value, None, None, None)
        else:
            wanted_row = (ToolCallStatus.PENDING.value, None, None, None)
        if (row[6], row[7], row[8], row[9]) == wanted_row:
            continue
        status, kind, rseq, ridx = wanted_row
        changes.append(
            {
                "cid": cid,
                "call_id": call_id,
                "status": status,
                "result_kind": kind,
                "result_seq": rseq,
                "result_idx": ridx,
                "completed_at": None if status == ToolCallStatus.PENDING.value else stamp,
            }
        )
    if changes:
        tx.execute_many(st.set_lifecycle, changes)


def _after_leaving_path(tx: Tx, header: Header, message: Message, now: datetime) -> None:
    """The head ``message`` left the path: rederive what it decided for earlier calls.

    A tool message may have answered calls (now unanswered again); a user message may have
    interrupted them (now pending again, unless another user turn still follows them).
    """
    if message.role is Role.USER:
        recompute_lifecycles(tx, header.cid, header.head_seq, now)
        return
    answered = {p.call_id for p in message.parts if isinstance(p, ToolResultPart)}
    if not answered:
        return
    rows = tx.fetch(
        tx.statements.select_tool_calls_in,
        {"cid": header.cid, "ids": tx.codec.dump_json(sorted(answered))},
    )
    if any(row[8] == message.seq for row in rows):
        recompute_lifecycles(tx, header.cid, header.head_seq, now)


def pop(
    tx: Tx, cid: str, tenant: str | None, expected_revision: str | None, now: datetime
) -> Message:
    """Remove the newest message of the active path and return it."""
    header = lock(tx, cid, tenant, expected_revision)
    if header.head_seq is None:
        raise InvalidInputError(f"conversation {cid!r} has no message to pop")
    message = _pop_one(tx, header, now)
    advance(tx, header, now)
    return message


def _pop_one(tx: Tx, header: Header, now: datetime) -> Message:
    st = tx.statements
    seq = header.head_seq
    assert seq is not None
    (message,) = messages_at(tx, header.cid, [seq])
    has_children = bool(tx.fetch(st.select_child, {"cid": header.cid, "seq": seq}))
    if has_children:
        header.branched = True  # the head now sits inside the tree
    else:
        tx.execute(st.delete_message, {"cid": header.cid, "seq": seq})
    header.head_seq = message.parent_seq
    _after_leaving_path(tx, header, message, now)
    return message


def truncate(
    tx: Tx,
    cid: str,
    tenant: str | None,
    after_seq: int,
    expected_revision: str | None,
    now: datetime,
) -> list[Message]:
    """Pop until ``after_seq`` is the head (``0``: until the path is empty); the popped ones."""
    header = lock(tx, cid, tenant, expected_revision)
    if after_seq != 0 and after_seq not in set(path_seqs(tx, cid, header.head_seq)):
        raise InvalidInputError(
            f"after_seq {after_seq} is not on the active path of conversation {cid!r}"
        )
    popped = []
    while header.head_seq is not None and header.head_seq != after_seq:
        popped.append(_pop_one(tx, header, now))
    advance(tx, header, now)
    return popped


def switch_branch(
    tx: Tx,
    cid: str,
    tenant: str | None,
    head_seq: int,
    expected_revision: str | None,
    now: datetime,
) -> None:
    """Make ``head_seq`` the head: the active path becomes root → ``head_seq``."""
    header = lock(tx, cid, tenant, expected_revision)
    if not messages_at(tx, cid, [head_seq]):
        raise InvalidInputError(f"head_seq {head_seq} is not a message of conversation {cid!r}")
    if head_seq != header.head_seq:
        header.branched = True
        header.head_seq = head_seq
        recompute_lifecycles(tx, cid, head_seq, now)
    advance(tx, header, now)


def fork(
    tx: Tx,
    cid: str,
    tenant: str | None,
    at_seq: int,
    title: str | None,
    now: datetime,
) -> Conversation:
    """A new conversation whose active path is a copy of ``cid``'s path up to ``at_seq``."""
    st, codec = tx.statements, tx.codec
    header = lock(tx, cid, tenant, None)
    path = path_seqs(tx, cid, header.head_seq)
    if at_seq not in path:
        raise InvalidInputError(
            f"at_seq {at_seq} is not on the active path of conversation {cid!r}"
        )
    seqs = path[: path.index(at_seq) + 1]
    new_cid = new_id()
    stamp = codec.dump_time(now)
    tx.insert_rows(
        st.insert_conversation,
        [
            (
                new_cid,
                header.tenant,
                header.title if title is None else title,
                header.metadata,
                at_seq,
                stamp,
                stamp,
                header.state,
                at_seq,
                new_revision(),
                False,
            )
        ],
    )
    write_tags(tx, new_cid, header.tenant, stamp, codec.load_json(header.metadata))
    json_seqs = codec.dump_json(seqs)
    messages = tx.fetch(st.copy_messages, {"cid": cid, "seqs": json_seqs})
    tx.insert_rows(st.insert_message, [(new_cid, *row[1:]) for row in messages])
    refs = tx.fetch(st.select_blob_refs, {"cid": cid, "seqs": json_seqs})
    tx.insert_rows(st.insert_blob_ref, [(new_cid, *row[1:]) for row in refs])
    copied = messages_at(tx, new_cid, seqs)
    call_ids = [p.id for m in copied for p in m.tool_calls]
    if call_ids:
        calls = tx.fetch(st.copy_tool_calls, {"cid": cid, "ids": codec.dump_json(call_ids)})
        tx.insert_rows(st.insert_tool_call, [(new_cid, *row[1:]) for row in calls])
        recompute_lifecycles(tx, new_cid, at_seq, now)
    compactions = tx.fetch(st.copy_compactions, {"cid": cid, "at_seq": at_seq})
    tx.insert_rows(st.insert_compaction_row, [(new_cid, *row[1:]) for row in compactions])
    return _header_only(load_conversation(tx, new_cid, None, 0))


def _header_only(conversation: Conversation) -> Conversation:
    return conversation.model_copy(update={"messages": [], "tool_calls": []})
