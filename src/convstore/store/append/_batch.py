"""An append's batch as rows: its messages walked in order, every call's lifecycle decided.

The batch walker is shared by every append path: the general one (`convstore.store.append.writes`)
walks a batch against the calls stored on its path; `plan_batch` walks it before any statement
runs (`convstore.store.append._lean_append`, `convstore.store.append._one_statement`), then
`Batch.placed` puts it after the conversation's last seq.

Invariants:

- The lifecycle of every call the batch touches is decided here, once, by
  `convstore.store.history.lifecycle.on_result`; calls created and answered in the same batch are
  inserted already in their final state. Only calls on the active path are answered: a result
  for a call on another branch (or none) is kept as history with no lifecycle (a completion
  refuses it: `ToolCallNotFoundError`).
- Walking writes nothing; `Batch.write` inserts each table with one ``executemany``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from convstore.db.search_queue import queue_messages
from convstore.db.statements.messages import MessageRowAt
from convstore.db.statements.tool_calls import ToolCallAt
from convstore.db.tx import Row, Tx
from convstore.errors import (
    ToolCallConflictError,
    ToolCallNotFoundError,
)
from convstore.model import (
    Message,
    Role,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
)
from convstore.store.history.lifecycle import Outcome, on_result, status_for
from convstore.store.load.reads import messages_at

__all__ = [
    "AppendPlan",
    "Batch",
    "DbCall",
    "NoChange",
    "OnConflict",
    "PlannedBatch",
    "call_as_stored",
    "plan_batch",
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
    expected_revision: str | None = None
    parent_seq: int | None = None
    """The message the batch follows; ``None``: the head."""
    namespace: str = ""
    """The blob namespace the batch's new blobs were stored in."""
    written: dict[str, datetime] = field(default_factory=dict)
    """When (storage clock) the batch's puts left each of its new blobs."""
    created_at: Sequence[datetime] | None = None
    """Each message's own creation time, in order (a tree write carrying an export's times);
    ``None``: every message was created ``now``."""


@dataclass(slots=True)
class DbCall:
    """A call stored by an earlier append, as this batch sees (and changes) it."""

    status: ToolCallStatus
    result_at: tuple[int, int] | None


@dataclass(slots=True)
class Batch:
    """Rows and lifecycle changes accumulated while walking the batch in order."""

    tx: Tx
    plan: AppendPlan
    find_call: Callable[[str], DbCall | None]
    """A call stored on the path the batch extends, by id (``None``: no such call)."""
    namespaces: dict[str, str]
    """The blob namespace of every blob the batch references, by digest."""
    completion: bool = False
    """`complete_call`'s batch: its result must answer a known call, and an equal repeat of a
    stored result changes nothing (`NoChange` carries the call)."""
    message_rows: list[Row] = field(default_factory=list)
    blob_rows: list[Row] = field(default_factory=list)
    new_calls: dict[str, CallRow] = field(default_factory=dict)
    outputs: dict[tuple[int, int], ToolOutput] = field(default_factory=dict)
    db_calls: dict[str, DbCall | None] = field(default_factory=dict)
    completions: list[dict[str, Any]] = field(default_factory=list)
    interrupt_before: int | None = None

    def walk(self, first_seq: int, parent_seq: int | None) -> None:
        """Add the plan's messages as ``first_seq`` onwards, the first following ``parent_seq``."""
        previous_seq = parent_seq
        times = self.plan.created_at
        for offset, message in enumerate(self.plan.messages):
            created = times[offset] if times is not None else None
            self.add(message, first_seq + offset, previous_seq, created)
            previous_seq = first_seq + offset

    def add(
        self, message: Message, seq: int, parent_seq: int | None, created: datetime | None = None
    ) -> None:
        """Add ``message`` as ``seq``, following ``parent_seq``: its rows and lifecycle effects.

        ``created``: the message's creation time (default: the plan's ``now``).
        """
        codec, cid, now = self.tx.codec, self.plan.conversation_id, self.plan.now
        when = created if created is not None else now
        self.message_rows.append(encode_message(cid, message, seq, parent_seq, when, codec))
        if self.namespaces:  # the batch references blobs (most reference none)
            for sha256 in {f.attachment.sha256 for f in message.files if f.attachment is not None}:
                self.blob_rows.append((cid, seq, sha256, self.namespaces[sha256]))
        fields = message.__dict__  # (model attribute lookups cost ten dict lookups)
        if fields["role"] is Role.USER:
            self._interrupt_pending(seq)
        for idx, part in enumerate(fields["parts"]):
            if type(part) is TextPart:
                continue  # most parts: no lifecycle, and no isinstance walk
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
                if self.completion:
                    raise ToolCallNotFoundError(self.plan.conversation_id, part.call_id)
                return  # a result without its call: kept as history, no lifecycle
            status = db_call.status
            stored = self._stored_output(db_call)
        match on_result(status, stored, part.output):
            case Outcome.COMPLETES:
                self._complete(part, seq, idx, row)
            case Outcome.DUPLICATE if self.completion:
                raise NoChange(call_as_stored(self.tx, self.plan.conversation_id, part))
            case Outcome.DUPLICATE:
                pass  # an equal repeat stays in the history; the renderer de-duplicates it
            case Outcome.CONFLICT if self.completion or self.plan.on_conflict == "raise":
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

    def _db_call(self, call_id: str) -> DbCall | None:
        if call_id not in self.db_calls:
            self.db_calls[call_id] = self.find_call(call_id)
        return self.db_calls[call_id]

    def _stored_output(self, db_call: DbCall) -> ToolOutput | None:
        if db_call.result_at is None:
            return None
        if db_call.result_at in self.outputs:  # answered earlier in this batch
            return self.outputs[db_call.result_at]
        seq, _ = db_call.result_at
        stored = messages_at(self.tx, self.plan.conversation_id, [seq])
        return outputs_of(stored).get(db_call.result_at)

    def placed(self, tx: Tx, last_seq: int, head_seq: int | None) -> Batch:
        """This batch, planned by `plan_batch`, as ``tx`` writes it after ``last_seq``.

        Its first message follows ``head_seq``. A new batch: the planned one is unchanged (a
        write retried after lock contention places it again).
        """
        rows = []
        for row in self.message_rows:
            placed_row = list(row)
            placed_row[MessageRowAt.seq] += last_seq
            parent = row[MessageRowAt.parent_seq]
            placed_row[MessageRowAt.parent_seq] = head_seq if parent is None else parent + last_seq
            rows.append(tuple(placed_row))
        calls = {}
        for call_id, call in self.new_calls.items():
            placed = list(call)
            placed[CALL_SEQ] += last_seq
            if placed[CALL_RESULT_SEQ] is not None:
                placed[CALL_RESULT_SEQ] += last_seq
            calls[call_id] = placed
        return Batch(
            tx,
            self.plan,
            self.find_call,
            self.namespaces,
            self.completion,
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
        """Insert the batch's rows and apply its lifecycle changes, in ``tx``."""
        tx, st, plan = self.tx, self.tx.statements, self.plan
        tx.insert_rows(st.insert_message, self.message_rows)
        if st.queue_for_search is not None:
            seqs = [row[MessageRowAt.seq] for row in self.message_rows]
            queue_messages(tx, plan.conversation_id, seqs)
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


def plan_batch(tx: Tx, plan: AppendPlan) -> PlannedBatch:
    """The rows and lifecycle changes of ``plan``, planned without reading the database.

    Sequence numbers start at 1 (relative to the conversation's ``last_seq``), the first
    message follows no parent, and every earlier call the batch answers is taken as pending:
    the caller must make those assumptions hold (see `convstore.store.append._one_statement`).
    ``tx`` supplies only the codec; planning runs no statement.
    """
    batch = Batch(tx, plan, lambda _call_id: DbCall(ToolCallStatus.PENDING, None), {})
    batch.walk(1, None)
    return batch


PlannedBatch = Batch
"""What `plan_batch` returns: the rows of a batch, to be `placed` and written."""


def call_as_stored(tx: Tx, cid: str, result: ToolResultPart) -> ToolCall:
    """The call ``result`` answers, as the database now holds it, with ``result``'s output."""
    row = tx.fetch(tx.statements.select_tool_call, {"cid": cid, "call_id": result.call_id})[0]
    at = (row[ToolCallAt.result_seq], row[ToolCallAt.result_idx])
    return decode_tool_calls([row], {at: result.output}, tx.codec)[0]
