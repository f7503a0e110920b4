"""Write operations, each a function of one open transaction (``fn(tx)``).

Invariants:

- Every write first locks the conversation's header row and ends by advancing it to a new
  revision (`convstore.store.append.header_lock`). Keys are computed in Python, so each table is
  written with one ``executemany``.
- A write is all or nothing: any error raises out of ``fn`` and the backend rolls back.
- An append's rows and the lifecycle of every call it touches are decided once, by walking
  the batch (`convstore.store.append._batch`); here the walk meets the stored calls of its path.
- A batch may reference only blobs it stored or its tenant can see, and none that garbage
  collection is deleting (`BlobBeingCollectedError`: the caller stores them again and retries).
- An append with ``parent_seq`` other than the head starts a branch: the lifecycles of the path
  it grows from are recomputed first (`convstore.store.history.branches`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from convstore.db.statements.tool_calls import ToolCallAt
from convstore.db.tx import Tx
from convstore.errors import (
    AttachmentNotFoundError,
    ConversationNotFoundError,
    InvalidInputError,
    InvalidMessageError,
)
from convstore.model import (
    Compaction,
    Message,
    ToolCall,
    ToolCallStatus,
    ToolResultPart,
)
from convstore.model._base import trusted
from convstore.store._results import AppendResult
from convstore.store.append._batch import (
    AppendPlan,
    Batch,
    DbCall,
    NoChange,
    OnConflict,
    PlannedBatch,
    call_as_stored,
    plan_batch,
)
from convstore.store.append.header_lock import Header, advance, lock
from convstore.store.history.branches import move_head
from convstore.store.load.paths import PathAbove, walk_up
from convstore.store.load.reads import messages_at

_new_message = trusted(Message)

__all__ = [
    "AppendPlan",
    "BlobBeingCollectedError",
    "NoChange",
    "OnConflict",
    "PlannedBatch",
    "append_messages",
    "cancel_pending",
    "check_message_ids",
    "check_references",
    "compact",
    "complete_call",
    "delete_conversation",
    "finish_tombstones",
    "hold_blobs",
    "plan_batch",
    "stored_copies",
]


def append_messages(tx: Tx, plan: AppendPlan) -> AppendResult:
    """Store ``plan.messages``; the stored copies (with ``seq``).

    A replayed idempotency key raises `NoChange` with the messages the first append stored.
    """
    return _append(tx, plan, completion=False)


def complete_call(tx: Tx, plan: AppendPlan) -> ToolCall:
    """Store ``plan``'s one tool-result message and complete the call it answers; that call.

    The result must answer a call on the active path (`ToolCallNotFoundError`); an equal repeat
    of a stored result changes nothing (`NoChange` carries the call as stored).
    """
    _append(tx, plan, completion=True)
    result = plan.messages[0].parts[0]
    assert isinstance(result, ToolResultPart)
    return call_as_stored(tx, plan.conversation_id, result)


def _append(tx: Tx, plan: AppendPlan, *, completion: bool) -> AppendResult:
    st, cid = tx.statements, plan.conversation_id
    count = len(plan.messages)
    # Lock the conversation before looking the key up: a concurrent append with the same key
    # has then either committed, and is replayed here, or not begun. Looked up first, a twin
    # still in flight is missed, and its commit turns this append into a uniqueness error on
    # PostgreSQL.
    header = lock(tx, cid, plan.tenant, plan.expected_revision)
    if plan.idempotency_key is not None:
        previous = tx.fetch(st.select_append_key, {"cid": cid, "key": plan.idempotency_key})
        if previous:
            first, stored_count = previous[0]
            replayed = messages_at(tx, cid, range(first, first + stored_count))
            raise NoChange(AppendResult(replayed, revision=header.revision))
    parent = header.head_seq if plan.parent_seq is None else plan.parent_seq
    if parent != header.head_seq:
        _start_branch(tx, header, parent, plan.now)
    check_message_ids(tx, cid, plan.messages)
    namespaces = check_references(tx, plan)
    first_seq = header.last_seq + 1
    on_path = _path_test(tx, header, parent)
    batch = Batch(
        tx, plan, lambda call_id: _stored_call(tx, cid, call_id, on_path), namespaces, completion
    )
    batch.walk(first_seq, parent)
    batch.write()
    if plan.idempotency_key is not None:
        tx.insert_rows(
            st.insert_append_key,
            [(cid, plan.idempotency_key, first_seq, count, tx.codec.dump_time(plan.now))],
        )
    header.last_seq = first_seq + count - 1
    header.head_seq = header.last_seq
    revision = advance(tx, header, plan.now)
    return stored_copies(
        plan.messages, cid, first_seq, parent, plan.now, revision, times=plan.created_at
    )


def stored_copies(
    messages: list[Message],
    cid: str,
    first_seq: int,
    parent: int | None,
    now: datetime,
    revision: str,
    *,
    times: Sequence[datetime] | None = None,
) -> AppendResult:
    """What an append returns: its messages as stored from ``first_seq`` on, after ``parent``.

    ``times``: each message's creation time, when not ``now`` (`AppendPlan.created_at`).
    """
    stored = AppendResult(revision=revision)
    for offset, m in enumerate(messages):
        seq = first_seq + offset
        stored.append(
            _new_message(
                {
                    **m.__dict__,
                    "seq": seq,
                    "created_at": times[offset] if times is not None else now,
                    "parent_seq": parent if offset == 0 else seq - 1,
                    "conversation_id": cid,
                }
            )
        )
    return stored


def _stored_call(tx: Tx, cid: str, call_id: str, on_path: Callable[[int], bool]) -> DbCall | None:
    """The call ``call_id`` as stored, if it is on the path."""
    rows = tx.fetch(tx.statements.select_tool_call, {"cid": cid, "call_id": call_id})
    if not rows or not on_path(rows[0][ToolCallAt.seq]):
        return None
    row = rows[0]
    answered = row[ToolCallAt.result_seq]
    return DbCall(
        status=ToolCallStatus(row[ToolCallAt.status]),
        result_at=None if answered is None else (answered, row[ToolCallAt.result_idx]),
    )


def _start_branch(tx: Tx, header: Header, parent: int | None, now: datetime) -> None:
    """Make ``parent`` the end of the active path before a batch grows a branch from it."""
    if parent is not None and not messages_at(tx, header.cid, [parent]):
        raise InvalidInputError(
            f"parent_seq {parent} is not a message of conversation {header.cid!r}"
        )
    header.branched = True
    move_head(tx, header, parent, now)


def _path_test(tx: Tx, header: Header, end: int | None) -> Callable[[int], bool]:
    """Whether a stored message is on the path ending at ``end``.

    Reads the path upwards from ``end`` only as far as the messages asked about (the calls
    a batch's results answer: usually the turn it continues).
    """
    if not header.branched:
        return lambda _seq: True  # one chain: every message is on it
    return PathAbove(tx, header.cid, end).contains


def check_message_ids(tx: Tx, cid: str, messages: list[Message]) -> None:
    """Refuse an application message id the batch repeats or the conversation already holds."""
    ids = [m.id for m in messages if m.id is not None]
    if not ids:
        return
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InvalidMessageError(f"message id {dup!r} appears twice in one append")
    taken = tx.fetch(
        tx.statements.message_id_taken,
        {"cid": cid, "ids": tx.codec.dump_json(ids)},
    )
    if taken:
        raise InvalidMessageError(
            f"message id {taken[0][0]!r} is already used in conversation {cid!r}"
        )


class BlobBeingCollectedError(Exception):
    """A blob the batch references is being deleted by garbage collection right now.

    Raised inside the write (so it rolls back); the store waits for the collection to end,
    stores the bytes again and retries. Never escapes the store.
    """

    def __init__(self, blobs: list[tuple[str, str]]) -> None:
        super().__init__(f"{len(blobs)} blob(s) are being garbage-collected")
        self.blobs = blobs


def check_references(tx: Tx, plan: AppendPlan) -> dict[str, str]:
    """The namespace of every blob the batch references; refuses blobs it may not reference.

    Refuses a reference to a blob this batch did not store and the caller cannot see.

    A content hash is not a capability: without this check, a tenant that learned the SHA-256
    of another tenant's file could reference it and read it back (``read_attachment``,
    ``render``). A hash no conversation references fails the same way, so the error does not
    tell whether anyone stored those bytes.
    """
    st = tx.statements
    namespaces = {sha256: plan.namespace for sha256, _, _ in plan.attachments}
    for sha256 in sorted(_referenced_blobs(plan.messages) - namespaces.keys()):
        visible = tx.fetch(
            st.select_attachment_visible.pick(plan.tenant),
            {"sha256": sha256, "for_tenant": plan.tenant},
        )
        if not visible:
            raise AttachmentNotFoundError(sha256)
        namespaces[sha256] = visible[0][0]
    # Garbage collection marks a blob before deleting its bytes, holding the blob's catalogue
    # row; holding it here too (catalogued first if new) orders this batch and the collector,
    # so either the collector sees this batch's references or this batch sees the mark, and
    # must not reference bytes that may be gone in a moment.
    stamp = tx.codec.dump_time(plan.now)
    tx.insert_rows(st.insert_attachment, [(*a, stamp) for a in plan.attachments])
    hold_blobs(tx, namespaces, plan.written)
    return namespaces


def hold_blobs(tx: Tx, namespaces: Mapping[str, str], written: Mapping[str, datetime]) -> None:
    """Take a shared hold on each blob (digest -> namespace) this transaction will reference.

    Raises `BlobBeingCollectedError` when garbage collection is deleting one, or deleted it
    after this batch's put (``written``, storage clock) stored or touched it. The blobs'
    catalogue rows must exist (``insert_attachment``) first.
    """
    st = tx.statements
    collected = []
    for sha, ns in sorted(namespaces.items()):
        if not tx.fetch(st.lock_attachment_shared, {"sha256": sha}) and sha in written:
            # PostgreSQL (read committed): the catalogue insert found the row, then a collector
            # that had just deleted the bytes removed it. Without a row the reference cannot
            # be written; the bytes are stored again and the batch retried, as for a mark.
            collected.append((ns, sha))
            continue
        mark = tx.fetch(st.select_tombstone, {"ns": ns, "digest": sha})
        if not mark:
            continue
        deleted_at, put_at = mark[0][0], written.get(sha)
        if deleted_at is None:
            collected.append((ns, sha))  # being deleted right now
        elif put_at is not None and put_at < tx.codec.load_time(deleted_at):
            collected.append((ns, sha))  # this batch's put may have been a touch of doomed bytes
    if collected:
        raise BlobBeingCollectedError(collected)


def _referenced_blobs(messages: list[Message]) -> set[str]:
    return {f.attachment.sha256 for m in messages for f in m.files if f.attachment is not None}


def finish_tombstones(tx: Tx, blobs: list[tuple[str, str]], deleted_at: datetime) -> None:
    """Record these (namespace, digest) blobs as deleted at ``deleted_at`` (storage clock)."""
    stamp = tx.codec.dump_time(deleted_at)
    tx.execute_many(
        tx.statements.finish_tombstone,
        [{"ns": ns, "digest": sha, "deleted_at": stamp} for ns, sha in blobs],
    )


def delete_conversation(
    tx: Tx, cid: str, tenant: str | None, expected_revision: str | None = None
) -> None:
    """Delete a conversation and, by cascade, everything in it."""
    if expected_revision is not None:
        lock(tx, cid, tenant, expected_revision)
    deleted = tx.execute(
        tx.statements.delete_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if deleted == 0:
        raise ConversationNotFoundError(cid)


def cancel_pending(
    tx: Tx, cid: str, tenant: str | None, now: datetime, expected_revision: str | None = None
) -> list[str]:
    """Move every pending call of the active path to ``cancelled``; the ids, in call order."""
    header = lock(tx, cid, tenant, expected_revision)
    st, stamp = tx.statements, tx.codec.dump_time(now)
    if not header.branched:
        # RETURNING comes in no particular order: put the ids in call order.
        rows = sorted(tx.fetch(st.cancel_pending, {"cid": cid, "now": stamp}), key=lambda r: r[1:])
        cancelled = [r[0] for r in rows]
    else:
        # A pending call on the path has no user message after it there (it would be
        # interrupted): the path back to its newest user message holds every one.
        head = header.head_seq
        tail = (
            set()
            if head is None
            else {s for s, _, _ in walk_up(tx, cid, head, floor=head, to_user=True)}
        )
        pending = tx.fetch(st.select_pending, {"cid": cid})
        cancelled = [call_id for call_id, seq in pending if seq in tail]
        tx.execute_many(
            st.cancel_call, [{"cid": cid, "call_id": c, "now": stamp} for c in cancelled]
        )
    advance(tx, header, now)
    return cancelled


def compact(
    tx: Tx,
    cid: str,
    tenant: str | None,
    through_seq: int,
    summary: str,
    now: datetime,
    *,
    expected_revision: str | None = None,
) -> Compaction:
    """Record that ``summary`` stands in for messages up to ``through_seq`` when rendering."""
    header = lock(tx, cid, tenant, expected_revision)
    if not 1 <= through_seq <= header.last_seq:
        raise InvalidInputError(
            f"through_seq must be between 1 and the conversation's last seq ({header.last_seq}), "
            f"got {through_seq}"
        )
    tx.execute(
        tx.statements.insert_compaction,
        {
            "cid": cid,
            "through_seq": through_seq,
            "summary": summary,
            "now": tx.codec.dump_time(now),
        },
    )
    advance(tx, header, now)
    return Compaction(through_seq=through_seq, summary=summary, created_at=now)
