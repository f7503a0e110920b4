"""Branches and undo: moving the head, removing messages, forking, and the lifecycles they move.

Each operation is a function of one open write transaction (``fn(tx)``), like `writes`.

Invariants:

- The head names the active path; `pop` and `truncate` walk it back, `switch_branch` moves it
  anywhere in the tree, `fork` copies the path to a point into a new conversation.
- A popped message is deleted only when no other message descends from it; otherwise it stays
  for the branches that run through it and only the head moves. Deleting a message deletes the
  calls it made (here) and its blob references (by cascade), so gc may collect its blobs.
  Finding either costs index lookups, never a scan of the conversation.
- ``tool_calls`` rows describe lifecycles on the active path (rows of calls off it are left
  as they were, and rederived when their messages join the path again). A call's lifecycle on
  a path: the first result after the call on the path completes it, unless it was stored after
  the call was cancelled (then it is history, as it was when appended); otherwise a call ever
  cancelled is cancelled (``cancelled_at`` keeps that across paths); otherwise a later user
  message interrupts it; otherwise it is pending. The rule is `convstore.store.history.lifecycle`'s
  (`answers`, `unanswered`); `settle` decides which calls to ask it about.
- When the head moves other than by growing the path at its end, the path keeps what it shares
  with the old one (root → the last shared message) and swaps the rest. `settle` rederives only
  the lifecycles that can change: the calls made in the part that joins, the calls answered in
  either swapped part, and, when a user message left or joined, the calls after the shared
  part's newest user message. Everything else on the shared part keeps its (correct) row. So
  a move costs the swapped parts and the turn they hang from, not the conversation's length.
- Sequence numbers are never reused: a fork keeps the source's numbers, and the source's
  counter is never wound back.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from convstore.db.search_queue import queue_messages
from convstore.db.statements.messages import MessageRowAt
from convstore.db.tx import Tx
from convstore.errors import InvalidInputError
from convstore.model import Conversation, Message, Role, ToolCallStatus, ToolResultPart
from convstore.store.append.header_lock import Header, advance, lock, new_revision
from convstore.store.conversations.metadata_tags import write_tags
from convstore.store.history.lifecycle import answers, status_for, unanswered
from convstore.store.ids import new_id
from convstore.store.load.paths import diverge, walk_up
from convstore.store.load.reads import load_conversation, messages_at, path_seqs

__all__ = ["fork", "move_head", "pop", "settle", "switch_branch", "truncate"]

_SETTLED = (ToolCallStatus.COMPLETE.value, ToolCallStatus.ERROR.value)


@dataclass(frozen=True, slots=True)
class _Lifecycle:
    """A call's stored lifecycle columns."""

    seq: int
    status: str
    result_kind: str | None
    result_seq: int | None
    result_idx: int | None
    cancelled_at: datetime | None


def _lifecycles(tx: Tx, cid: str, ids: Iterable[str]) -> dict[str, _Lifecycle]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    codec = tx.codec
    return {
        call_id: _Lifecycle(
            seq, status, kind, rseq, ridx, None if cancelled is None else codec.load_time(cancelled)
        )
        for call_id, seq, status, kind, rseq, ridx, cancelled in tx.fetch(
            tx.statements.select_lifecycles_in, {"cid": cid, "ids": codec.dump_json(wanted)}
        )
    }


def settle(
    tx: Tx,
    cid: str,
    shared: int | None,
    left: Sequence[Message],
    joined: Sequence[Message],
    now: datetime,
) -> None:
    """The path was root → ``shared`` + ``left`` and is root → ``shared`` + ``joined`` now.

    ``joined`` is in path order. Rederives the lifecycle of every call on the new path that the
    swap can change (see the module's invariants) and stores those that did change.
    """
    user = Role.USER
    joined_calls = {p.id: m.seq for m in joined for p in m.tool_calls}
    answered = {p.call_id for m in (*left, *joined) for p in m.tool_results}
    users_moved = any(m.role is user for m in (*left, *joined))
    if not (joined_calls or answered or users_moved):
        return
    rows = _lifecycles(tx, cid, {*joined_calls, *answered})
    # The shared part is read upwards from its end, only as far as the calls asked about (and,
    # if a user message moved, back to its newest user message).
    below = [r.seq for r in rows.values() if shared is not None and r.seq <= shared]
    walked: list[tuple[int, int | None, str]] = []
    if shared is not None and (below or users_moved):
        walked = walk_up(tx, cid, shared, floor=min(below, default=shared), to_user=users_moved)
    on_shared = {seq for seq, _, _ in walked}
    shared_users = sorted(seq for seq, _, role in walked if role == user.value)
    if users_moved:
        # Calls after the shared part's newest user message: a user message that left may
        # have interrupted them, one that joined may interrupt them now.
        newest = shared_users[-1] if shared_users else 0
        tail = [s for s, _, role in walked if s > newest and role == Role.ASSISTANT.value]
        made = [p.id for m in messages_at(tx, cid, tail) for p in m.tool_calls]
        rows.update(_lifecycles(tx, cid, [i for i in made if i not in rows]))
    joined_users = sorted(m.seq or 0 for m in joined if m.role is user)
    results: dict[str, list[tuple[int, int, ToolResultPart, datetime | None]]] = {}
    for m in joined:
        for idx, part in enumerate(m.parts):
            if isinstance(part, ToolResultPart):
                results.setdefault(part.call_id, []).append((m.seq or 0, idx, part, m.created_at))

    def user_after(seq: int, users: list[int]) -> bool:
        return bisect_right(users, seq) < len(users)

    stamp = tx.codec.dump_time(now)
    changes = []
    for call_id, row in sorted(rows.items(), key=lambda item: (item[1].seq, item[0])):
        if call_id in joined_calls:
            if joined_calls[call_id] != row.seq:
                continue  # the id names a call made elsewhere in the tree
        elif row.seq not in on_shared:
            continue  # not on the new path
        elif row.status in _SETTLED and row.result_seq in on_shared:
            continue  # answered on the shared part: nothing after it can change that
        answer = next(
            (
                (rs, ri, result)
                for rs, ri, result, stored_at in results.get(call_id, ())
                if rs > row.seq and answers(stored_at, row.cancelled_at)
            ),
            None,
        )
        wanted: tuple[str, str | None, int | None, int | None]
        if answer is not None:
            rs, ri, result = answer
            wanted = (status_for(result.output).value, result.output.kind, rs, ri)
        else:
            open_status = unanswered(
                cancelled=row.cancelled_at is not None,
                user_after=user_after(row.seq, joined_users) or user_after(row.seq, shared_users),
            )
            wanted = (open_status.value, None, None, None)
        if (row.status, row.result_kind, row.result_seq, row.result_idx) == wanted:
            continue
        status, kind, rseq, ridx = wanted
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
        tx.execute_many(tx.statements.set_lifecycle, changes)


def move_head(tx: Tx, header: Header, to: int | None, now: datetime) -> None:
    """Make ``to`` the head (``None``: the empty path) and settle the lifecycles it moves."""
    parting = diverge(tx, header.cid, header.head_seq, to)
    moved = messages_at(tx, header.cid, [*parting.first_only, *parting.second_only])
    leaving = set(parting.first_only)
    header.head_seq = to
    settle(
        tx,
        header.cid,
        parting.shared,
        [m for m in moved if m.seq in leaving],
        [m for m in moved if m.seq not in leaving],
        now,
    )


def pop(
    tx: Tx, cid: str, tenant: str | None, expected_revision: str | None, now: datetime
) -> Message:
    """Remove the newest message of the active path and return it."""
    header = lock(tx, cid, tenant, expected_revision)
    if header.head_seq is None:
        raise InvalidInputError(f"conversation {cid!r} has no message to pop")
    (message,) = messages_at(tx, cid, [header.head_seq])
    _remove(tx, header, message)
    header.head_seq = message.parent_seq
    settle(tx, cid, message.parent_seq, [message], [], now)
    advance(tx, header, now)
    return message


def _remove(tx: Tx, header: Header, message: Message) -> None:
    """Delete ``message``, unless another message descends from it (then it stays)."""
    st = tx.statements
    if tx.fetch(st.select_child, {"cid": header.cid, "seq": message.seq}):
        header.branched = True  # the head now sits inside the tree
    else:
        calls = [p.id for p in message.tool_calls]
        if calls:
            tx.execute(
                st.delete_calls_of,
                {"cid": header.cid, "seq": message.seq, "ids": tx.codec.dump_json(calls)},
            )
        tx.execute(st.delete_message, {"cid": header.cid, "seq": message.seq})


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
    head = header.head_seq
    walked = [] if head is None else [s for s, _, _ in walk_up(tx, cid, head, floor=after_seq)]
    if after_seq != 0 and after_seq not in walked:
        raise InvalidInputError(
            f"after_seq {after_seq} is not on the active path of conversation {cid!r}"
        )
    popped = messages_at(tx, cid, [s for s in walked if s > after_seq])
    popped.reverse()  # newest first: each is removed after the one that descends from it
    for message in popped:
        _remove(tx, header, message)
    if popped:
        header.head_seq = after_seq or None
        settle(tx, cid, header.head_seq, popped, [], now)
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
        move_head(tx, header, head_seq, now)
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
    queue_messages(tx, new_cid, [row[MessageRowAt.seq] for row in messages])
    refs = tx.fetch(st.select_blob_refs, {"cid": cid, "seqs": json_seqs})
    tx.insert_rows(st.insert_blob_ref, [(new_cid, *row[1:]) for row in refs])
    copied = messages_at(tx, new_cid, seqs)
    call_ids = [p.id for m in copied for p in m.tool_calls]
    if call_ids:
        calls = tx.fetch(st.copy_tool_calls, {"cid": cid, "ids": codec.dump_json(call_ids)})
        tx.insert_rows(st.insert_tool_call, [(new_cid, *row[1:]) for row in calls])
        settle(tx, new_cid, None, [], copied, now)  # the whole path joins the new conversation
    compactions = tx.fetch(st.copy_compactions, {"cid": cid, "at_seq": at_seq})
    tx.insert_rows(st.insert_compaction_row, [(new_cid, *row[1:]) for row in compactions])
    return _header_only(load_conversation(tx, new_cid, None, 0))


def _header_only(conversation: Conversation) -> Conversation:
    return conversation.model_copy(update={"messages": [], "tool_calls": []})
