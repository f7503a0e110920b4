"""Write operations, each a function of one open transaction (``fn(tx)``).

Invariants:

- Every write first locks the conversation's header row (`lock`). That one statement proves
  the conversation exists and is visible to the tenant, checks ``expected_revision``,
  serialises writers of one conversation on every database, and yields the counters the write
  advances; `advance` then stores a fresh revision with them. Keys are computed in Python, so
  each table is written with one ``executemany``.
- A write is all or nothing: any error raises out of ``fn`` and the backend rolls back.
- The lifecycle of every call the batch touches is decided here, once, by
  `convstore.store.lifecycle.on_result`; calls created and answered in the same batch are
  inserted already in their final state. Only calls on the active path are answered: a result
  for a call on another branch (or none) is kept as history with no lifecycle
  (``complete_tool_call`` refuses it: `ToolCallNotFoundError`).
- An append with ``parent_seq`` other than the head starts a branch: the lifecycles of the path
  it grows from are recomputed first (`convstore.store.branches`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from convstore.db.mapping import (
    CALL_COMPLETED_AT,
    CALL_RESULT_IDX,
    CALL_RESULT_KIND,
    CALL_RESULT_SEQ,
    CALL_SEQ,
    CALL_STATUS,
    STATUSES,
    CallRow,
    decode_tool_calls,
    encode_message,
    encode_tool_call,
    outputs_of,
)
from convstore.db.tx import Row, Tx
from convstore.errors import (
    AttachmentNotFoundError,
    ConversationNotFoundError,
    InvalidInputError,
    InvalidMessageError,
    RevisionConflictError,
    ToolCallConflictError,
    ToolCallNotFoundError,
)
from convstore.model import (
    Compaction,
    Message,
    Role,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
)
from convstore.model._base import trusted
from convstore.store.lifecycle import Outcome, on_result, status_for
from convstore.store.paths import PathAbove, walk_up
from convstore.store.reads import messages_at
from convstore.store.results import AppendResult

_new_message = trusted(Message)

__all__ = [
    "AppendPlan",
    "BlobBeingCollectedError",
    "Header",
    "NoChange",
    "PlannedBatch",
    "advance",
    "append_messages",
    "cancel_pending",
    "check_message_ids",
    "compact",
    "delete_conversation",
    "finish_tombstones",
    "hold_blobs",
    "lock",
    "new_revision",
    "plan_batch",
    "stored_copies",
]

OnConflict = Literal["raise", "keep-first"]


class NoChange(Exception):  # noqa: N818 (control flow, not an error)
    """Raised inside a write to roll it back and hand ``value`` to the caller instead."""

    def __init__(self, value: Any) -> None:
        super().__init__("no change")
        self.value = value


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """One append, ready for the database: file bytes are already blobs."""

    conversation_id: str
    messages: list[Message]
    attachments: list[tuple[str, int, str]]
    """(sha256, size, media type) of each blob the messages reference."""
    now: datetime
    tenant: str | None = None
    idempotency_key: str | None = None
    on_conflict: OnConflict = "raise"
    completion: bool = False
    """``complete_tool_call``: the result must answer a known call, and an equal repeat of a
    stored result changes nothing (`NoChange` carries the call)."""
    expected_revision: str | None = None
    parent_seq: int | None = None
    """The message the batch follows; ``None``: the head."""
    namespace: str = ""
    """The blob namespace the batch's new blobs were stored in."""
    written: dict[str, datetime] = field(default_factory=dict)
    """When (storage clock) the batch's puts left each of its new blobs."""


def new_revision() -> str:
    """An opaque revision token: random, so it never repeats for a conversation."""
    return secrets.token_hex(8)


@dataclass(slots=True)
class Header:
    """A conversation's header row, as locked by `lock`."""

    cid: str
    tenant: str | None
    title: str | None
    metadata: Any
    last_seq: int
    created_at: Any
    updated_at: Any
    state: Any
    head_seq: int | None
    revision: str
    branched: bool

    @classmethod
    def of(cls, row: Row) -> Header:
        """From a ``CONVERSATION_COLUMNS`` row."""
        (cid, tenant, title, metadata, last_seq, created, updated, state, head, revision,
         branched) = row  # fmt: skip
        return cls(cid, tenant, title, metadata, last_seq, created, updated, state, head,
                   revision, bool(branched))  # fmt: skip


def lock(tx: Tx, cid: str, tenant: str | None, expected_revision: str | None) -> Header:
    """Lock the conversation's header for this transaction and check ``expected_revision``."""
    rows = tx.fetch(
        tx.statements.lock_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if not rows:
        raise ConversationNotFoundError(cid)
    header = Header.of(rows[0])
    if expected_revision is not None and expected_revision != header.revision:
        raise RevisionConflictError(cid, expected_revision, header.revision)
    return header


def advance(tx: Tx, header: Header, now: datetime) -> str:
    """Store ``header``'s counters with a new revision (and ``updated_at``); the revision."""
    header.revision = new_revision()
    tx.execute(
        tx.statements.advance_conversation,
        {
            "cid": header.cid,
            "last_seq": header.last_seq,
            "head_seq": header.head_seq,
            "branched": header.branched,
            "revision": header.revision,
            "now": tx.codec.dump_time(now),
        },
    )
    return header.revision


@dataclass(slots=True)
class _DbCall:
    """A call stored by an earlier append, as this batch sees (and changes) it."""

    status: ToolCallStatus
    result_at: tuple[int, int] | None


@dataclass(slots=True)
class _Batch:
    """Rows and lifecycle changes accumulated while walking the batch in order."""

    tx: Tx
    plan: AppendPlan
    find_call: Callable[[str], _DbCall | None]
    """A call stored on the path the batch extends, by id (``None``: no such call)."""
    namespaces: dict[str, str]
    """The blob namespace of every blob the batch references, by digest."""
    message_rows: list[Row] = field(default_factory=list)
    blob_rows: list[Row] = field(default_factory=list)
    new_calls: dict[str, CallRow] = field(default_factory=dict)
    outputs: dict[tuple[int, int], ToolOutput] = field(default_factory=dict)
    db_calls: dict[str, _DbCall | None] = field(default_factory=dict)
    completions: list[dict[str, Any]] = field(default_factory=list)
    interrupt_before: int | None = None

    def walk(self, first_seq: int, parent_seq: int | None) -> None:
        """Add the plan's messages as ``first_seq`` onwards, the first following ``parent_seq``."""
        previous_seq = parent_seq
        for offset, message in enumerate(self.plan.messages):
            self.add(message, first_seq + offset, previous_seq)
            previous_seq = first_seq + offset

    def add(self, message: Message, seq: int, parent_seq: int | None) -> None:
        codec, cid, now = self.tx.codec, self.plan.conversation_id, self.plan.now
        self.message_rows.append(encode_message(cid, message, seq, parent_seq, now, codec))
        if self.namespaces:  # the batch references blobs (most reference none)
            for sha256 in {f.attachment.sha256 for f in message.files if f.attachment is not None}:
                self.blob_rows.append((cid, seq, sha256, self.namespaces[sha256]))
        if message.role is Role.USER:
            self._interrupt_pending(seq)
        for idx, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                if part.id in self.new_calls:
                    raise ToolCallConflictError(
                        f"tool-call id {part.id!r} appears twice in one append"
                    )
                self.new_calls[part.id] = encode_tool_call(cid, seq, idx, part, now, codec)
            elif isinstance(part, ToolResultPart):
                self.outputs[(seq, idx)] = part.output
                self._apply_result(seq, idx, part)

    def _interrupt_pending(self, seq: int) -> None:
        stamp = self.tx.codec.dump_time(self.plan.now)
        for row in self.new_calls.values():
            if row[CALL_STATUS] == ToolCallStatus.PENDING:
                row[CALL_STATUS] = ToolCallStatus.INTERRUPTED.value
                row[CALL_COMPLETED_AT] = stamp
        if self.interrupt_before is None:
            self.interrupt_before = seq

    def _apply_result(self, seq: int, idx: int, part: ToolResultPart) -> None:
        row = self.new_calls.get(part.call_id)
        if row is not None:
            status = STATUSES[row[CALL_STATUS]]
            answered = row[CALL_RESULT_SEQ] is not None
            stored = (
                self.outputs[(row[CALL_RESULT_SEQ], row[CALL_RESULT_IDX])] if answered else None
            )
        else:
            db_call = self._db_call(part.call_id)
            if db_call is None:
                if self.plan.completion:
                    raise ToolCallNotFoundError(self.plan.conversation_id, part.call_id)
                return  # a result without its call: kept as history, no lifecycle
            status = db_call.status
            stored = self._stored_output(db_call)
        match on_result(status, stored, part.output):
            case Outcome.COMPLETES:
                self._complete(part, seq, idx, row)
            case Outcome.DUPLICATE if self.plan.completion:
                raise NoChange(_call_as_stored(self.tx, self.plan.conversation_id, part))
            case Outcome.DUPLICATE:
                pass  # an equal repeat stays in the history; the renderer de-duplicates it
            case Outcome.CONFLICT if self.plan.completion or self.plan.on_conflict == "raise":
                raise ToolCallConflictError(
                    f"tool call {part.call_id!r} is {status.value} with a different result; "
                    "a stored result is never replaced"
                )
            case Outcome.CONFLICT:
                pass  # keep-first: the later result stays as history only

    def _complete(self, part: ToolResultPart, seq: int, idx: int, row: CallRow | None) -> None:
        status = status_for(part.output)
        stamp = self.tx.codec.dump_time(self.plan.now)
        if row is not None:
            row[CALL_STATUS] = status.value
            row[CALL_RESULT_KIND] = part.output.kind
            row[CALL_RESULT_SEQ] = seq
            row[CALL_RESULT_IDX] = idx
            row[CALL_COMPLETED_AT] = stamp
            return
        self.completions.append(
            {
                "cid": self.plan.conversation_id,
                "call_id": part.call_id,
                "status": status.value,
                "result_kind": part.output.kind,
                "result_seq": seq,
                "result_idx": idx,
                "completed_at": stamp,
            }
        )
        db_call = self.db_calls[part.call_id]
        assert db_call is not None  # _apply_result found it
        db_call.status = status
        db_call.result_at = (seq, idx)

    def _db_call(self, call_id: str) -> _DbCall | None:
        if call_id not in self.db_calls:
            self.db_calls[call_id] = self.find_call(call_id)
        return self.db_calls[call_id]

    def _stored_output(self, db_call: _DbCall) -> ToolOutput | None:
        if db_call.result_at is None:
            return None
        if db_call.result_at in self.outputs:  # answered earlier in this batch
            return self.outputs[db_call.result_at]
        seq, _ = db_call.result_at
        stored = messages_at(self.tx, self.plan.conversation_id, [seq])
        return outputs_of(stored).get(db_call.result_at)

    def placed(self, tx: Tx, last_seq: int, head_seq: int | None) -> _Batch:
        """This batch, planned by `plan_batch`, as ``tx`` writes it after ``last_seq``.

        Its first message follows ``head_seq``. A new batch: the planned one is unchanged (a
        write retried after lock contention places it again).
        """
        rows = []
        for row in self.message_rows:  # (cid, seq, ..., parent_seq at 7, ...)
            parent = head_seq if row[7] is None else row[7] + last_seq
            rows.append((row[0], row[1] + last_seq, *row[2:7], parent, *row[8:]))
        calls = {}
        for call_id, call in self.new_calls.items():
            placed = list(call)
            placed[CALL_SEQ] += last_seq
            if placed[CALL_RESULT_SEQ] is not None:
                placed[CALL_RESULT_SEQ] += last_seq
            calls[call_id] = placed
        return _Batch(
            tx,
            self.plan,
            self.find_call,
            self.namespaces,
            message_rows=rows,
            blob_rows=self.blob_rows,
            new_calls=calls,
            outputs=self.outputs,
            db_calls=self.db_calls,
            completions=[{**c, "result_seq": c["result_seq"] + last_seq} for c in self.completions],
            interrupt_before=None
            if self.interrupt_before is None
            else self.interrupt_before + last_seq,
        )

    def write(self) -> None:
        tx, st, plan = self.tx, self.tx.statements, self.plan
        tx.insert_rows(st.insert_message, self.message_rows)
        tx.insert_rows(st.insert_blob_ref, self.blob_rows)
        tx.insert_rows(st.insert_tool_call, [tuple(r) for r in self.new_calls.values()])
        if self.completions:
            tx.execute_many(st.set_lifecycle, self.completions)
        if self.interrupt_before is not None:
            tx.execute(
                st.interrupt_pending,
                {
                    "cid": plan.conversation_id,
                    "before_seq": self.interrupt_before,
                    "now": tx.codec.dump_time(plan.now),
                },
            )


def append_messages(tx: Tx, plan: AppendPlan) -> tuple[AppendResult, ToolCall | None]:
    """Store ``plan.messages``; the stored copies (with ``seq``) and, for a completion, the call."""
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
            raise NoChange((AppendResult(replayed, revision=header.revision), None))
    parent = header.head_seq if plan.parent_seq is None else plan.parent_seq
    if parent != header.head_seq:
        _start_branch(tx, header, parent, plan.now)
    check_message_ids(tx, cid, plan.messages)
    namespaces = _check_references(tx, plan)
    first_seq = header.last_seq + 1
    on_path = _path_test(tx, header, parent)
    batch = _Batch(tx, plan, lambda call_id: _stored_call(tx, cid, call_id, on_path), namespaces)
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
    stored = stored_copies(plan.messages, cid, first_seq, parent, plan.now, revision)
    completed = None
    if plan.completion:
        result = plan.messages[0].parts[0]
        assert isinstance(result, ToolResultPart)
        completed = _call_as_stored(tx, cid, result)
    return stored, completed


def plan_batch(tx: Tx, plan: AppendPlan) -> PlannedBatch:
    """The rows and lifecycle changes of ``plan``, planned without reading the database.

    Sequence numbers start at 1 (relative to the conversation's ``last_seq``), the first
    message follows no parent, and every earlier call the batch answers is taken as pending:
    the caller must make those assumptions hold (see `convstore.store.one_statement`). ``tx``
    supplies only the codec; planning runs no statement.
    """
    batch = _Batch(tx, plan, lambda _call_id: _DbCall(ToolCallStatus.PENDING, None), {})
    batch.walk(1, None)
    return batch


PlannedBatch = _Batch
"""What `plan_batch` returns: the rows of a batch, to be `placed` and written."""


def stored_copies(
    messages: list[Message],
    cid: str,
    first_seq: int,
    parent: int | None,
    now: datetime,
    revision: str,
) -> AppendResult:
    """What an append returns: its messages as stored from ``first_seq`` on, after ``parent``."""
    stored = AppendResult(revision=revision)
    for offset, m in enumerate(messages):
        seq = first_seq + offset
        stored.append(
            _new_message(
                {
                    **m.__dict__,
                    "seq": seq,
                    "created_at": now,
                    "parent_seq": parent if offset == 0 else seq - 1,
                    "conversation_id": cid,
                }
            )
        )
    return stored


def _stored_call(tx: Tx, cid: str, call_id: str, on_path: Callable[[int], bool]) -> _DbCall | None:
    """The call ``call_id`` as stored, if it is on the path."""
    rows = tx.fetch(tx.statements.select_tool_call, {"cid": cid, "call_id": call_id})
    if not rows or not on_path(rows[0][1]):
        return None
    return _DbCall(
        status=ToolCallStatus(rows[0][6]),
        result_at=(rows[0][8], rows[0][9]) if rows[0][8] is not None else None,
    )


def _start_branch(tx: Tx, header: Header, parent: int | None, now: datetime) -> None:
    """Make ``parent`` the end of the active path before a batch grows a branch from it."""
    from convstore.store.branches import move_head  # branches builds on this module

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


def _check_references(tx: Tx, plan: AppendPlan) -> dict[str, str]:
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


def _call_as_stored(tx: Tx, cid: str, result: ToolResultPart) -> ToolCall:
    """The call ``result`` answers, as the database now holds it, with ``result``'s output."""
    row = tx.fetch(tx.statements.select_tool_call, {"cid": cid, "call_id": result.call_id})[0]
    return decode_tool_calls([row], {(row[8], row[9]): result.output}, tx.codec)[0]


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
