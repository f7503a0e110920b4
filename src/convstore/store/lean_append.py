"""The common append on SQLite, lean: rows encoded and lifecycles planned before the hop.

Most appends are the next turn of a conversation: at its head, no attachment, no idempotency
key. For those, `plan` encodes every row and decides the lifecycle of every call the batch
creates in the caller's thread, and `LeanAppend.run` is a short function in the writer's
thread: lock the header (existence, tenant, revision), check application message ids, look up
the earlier calls the batch's results answer (one query), one ``executemany`` per table, the
interrupt and the advance. Every other append takes `convstore.store.writes.append_messages`.

Invariants:

- Both paths write identical rows and return equal results (a property test holds them to
  it): the lean path reuses the general path's row encoders, lifecycle rules
  (`convstore.store.lifecycle`) and checks, and anything it does not cover goes to the general
  path, untouched: a batch `plan` cannot plan (a file to store or reference, a call id twice,
  a conflicting result to refuse, a text the encoders refuse, two results for one earlier
  call) from the caller's thread; a ``parent_seq`` other than the head (a new branch),
  results for earlier calls in a conversation that has branches (which calls lie on the head's
  path is the general path's question), or a result for an earlier call that already has one
  from inside the transaction, before anything is written.
- Errors are therefore the general path's own, raised in its order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from convstore.db.mapping import (
    CALL_COMPLETED_AT,
    CALL_RESULT_IDX,
    CALL_RESULT_KIND,
    CALL_RESULT_SEQ,
    CALL_STATUS,
    CallRow,
    encode_message,
    encode_tool_call,
)
from convstore.db.tx import Codec, SqliteCodec, Tx
from convstore.errors import ConvstoreError
from convstore.model import (
    ContentOutput,
    FilePart,
    Message,
    Role,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
)
from convstore.store.lifecycle import Outcome, on_result, status_for
from convstore.store.results import AppendResult
from convstore.store.writes import (
    AppendPlan,
    OnConflict,
    advance,
    append_messages,
    check_message_ids,
    lock,
    stored_copies,
)

__all__ = ["LeanAppend", "plan"]

_CODEC: Final[Codec] = SqliteCodec()
"""Encodes before the hop exactly as the writer's own `SqliteCodec` would inside it."""

_PENDING: Final = ToolCallStatus.PENDING
_INTERRUPTED: Final = ToolCallStatus.INTERRUPTED
_OPEN: Final = (_PENDING.value, _INTERRUPTED.value)


class _UnplannableError(Exception):
    """The batch needs the general path."""


@dataclass(slots=True)
class _NewCall:
    row: CallRow
    """Its ``tool_calls`` row, with ``seq`` and ``result_seq`` still to be set."""
    offset: int
    """Its message's position in the batch."""
    status: ToolCallStatus = ToolCallStatus.PENDING
    """Its status so far (also in ``row``)."""
    result_at: tuple[int, int] | None = None
    """(offset, part index) of the result it took."""


@dataclass(frozen=True, slots=True)
class _EarlierResult:
    """A result for a call the batch did not create (stored earlier, or unknown)."""

    call_id: str
    offset: int
    idx: int
    output: ToolOutput


@dataclass(slots=True)
class LeanAppend:
    """One planned append; `run` is the write (``fn(tx)``) for `Backend.write`."""

    cid: str
    messages: list[Message]
    now: datetime
    tenant: str | None
    expected_revision: str | None
    parent_seq: int | None
    on_conflict: OnConflict
    message_rows: list[list[Any]]
    """``messages`` rows, with ``seq`` and ``parent_seq`` still to be set."""
    calls: list[_NewCall]
    earlier: list[_EarlierResult]
    interrupt_at: int | None
    """Offset of the batch's first user message: older pending calls become interrupted."""
    stamp: str
    """``now`` as the database binds it."""

    def run(self, tx: Tx) -> AppendResult:
        """Write the batch in ``tx``; the stored messages with the new revision."""
        header = lock(tx, self.cid, self.tenant, self.expected_revision)
        if self.parent_seq not in (None, header.head_seq) or (header.branched and self.earlier):
            # A new branch; or results whose calls may lie on another branch than the head's.
            return self._general(tx)
        cid, now, st = self.cid, self.now, tx.statements
        check_message_ids(tx, cid, self.messages)
        first = header.last_seq + 1
        completions = self._completions(tx, first) if self.earlier else []
        if completions is None:
            return self._general(tx)
        parent = header.head_seq
        rows = self.message_rows
        for offset, row in enumerate(rows):
            row[1] = first + offset
            row[7] = parent if offset == 0 else first + offset - 1
        tx.insert_rows(st.insert_message, rows)  # type: ignore[arg-type]
        if self.calls:
            for call in self.calls:
                call.row[2] = first + call.offset
                if call.result_at is not None:
                    call.row[CALL_RESULT_SEQ] = first + call.result_at[0]
            tx.insert_rows(st.insert_tool_call, [c.row for c in self.calls])  # type: ignore[misc]
        if completions:
            tx.execute_many(st.set_lifecycle, completions)
        if self.interrupt_at is not None:
            params = {"cid": cid, "before_seq": first + self.interrupt_at, "now": self.stamp}
            tx.execute(st.interrupt_pending, params)
        header.last_seq = header.head_seq = first + len(rows) - 1
        revision = advance(tx, header, now)
        return stored_copies(self.messages, cid, first, parent, now, revision)

    def _completions(self, tx: Tx, first: int) -> list[dict[str, Any]] | None:
        """The updates completing earlier calls; ``None`` when the general path must decide."""
        ids = [r.call_id for r in self.earlier]
        found = tx.fetch(
            tx.statements.select_tool_calls_in, {"cid": self.cid, "ids": tx.codec.dump_json(ids)}
        )
        status = {row[0]: row[6] for row in found}
        stamp = self.stamp
        completions = []
        for result in self.earlier:
            current = status.get(result.call_id)
            if current is None:
                continue  # a result without its call: kept as history, no lifecycle
            if current not in _OPEN:
                return None  # a duplicate or a conflict: compared with the stored result there
            completions.append(
                {
                    "cid": self.cid,
                    "call_id": result.call_id,
                    "status": status_for(result.output).value,
                    "result_kind": result.output.kind,
                    "result_seq": first + result.offset,
                    "result_idx": result.idx,
                    "completed_at": stamp,
                }
            )
        return completions

    def _general(self, tx: Tx) -> AppendResult:
        stored, _ = append_messages(
            tx,
            AppendPlan(
                conversation_id=self.cid,
                messages=self.messages,
                attachments=[],
                now=self.now,
                tenant=self.tenant,
                on_conflict=self.on_conflict,
                expected_revision=self.expected_revision,
                parent_seq=self.parent_seq,
            ),
        )
        return stored


def plan(
    cid: str,
    messages: list[Message],
    now: datetime,
    *,
    tenant: str | None,
    expected_revision: str | None,
    parent_seq: int | None,
    on_conflict: OnConflict,
) -> LeanAppend | None:
    """The lean write of a batch without idempotency key; ``None``: the general path's."""
    planner = _Planner(cid, now, on_conflict)
    try:
        for offset, message in enumerate(messages):
            planner.add(offset, message)
    except (_UnplannableError, ConvstoreError):
        return None
    if len({r.call_id for r in planner.earlier}) != len(planner.earlier):
        return None  # a second result for an earlier call compares with the first
    return LeanAppend(
        cid=cid,
        messages=messages,
        now=now,
        tenant=tenant,
        expected_revision=expected_revision,
        parent_seq=parent_seq,
        on_conflict=on_conflict,
        message_rows=planner.rows,
        calls=list(planner.calls.values()),
        earlier=planner.earlier,
        interrupt_at=planner.interrupt_at,
        stamp=planner.stamp,
    )


class _Planner:
    """Rows and lifecycles of a batch, walked in order as `convstore.store.writes` walks it."""

    def __init__(self, cid: str, now: datetime, on_conflict: OnConflict) -> None:
        self.cid, self.now, self.on_conflict = cid, now, on_conflict
        self.stamp = _CODEC.dump_time(now)
        self.rows: list[list[Any]] = []
        self.calls: dict[str, _NewCall] = {}
        self.outputs: dict[tuple[int, int], ToolOutput] = {}
        self.earlier: list[_EarlierResult] = []
        self.interrupt_at: int | None = None

    def add(self, offset: int, message: Message) -> None:
        if message.role is Role.USER:
            for call in self.calls.values():
                if call.status is _PENDING:
                    call.status = _INTERRUPTED
                    call.row[CALL_STATUS] = _INTERRUPTED.value
                    call.row[CALL_COMPLETED_AT] = self.stamp
            if self.interrupt_at is None:
                self.interrupt_at = offset
        for idx, part in enumerate(message.parts):
            if isinstance(part, ToolCallPart):
                if part.id in self.calls:
                    raise _UnplannableError  # the general path refuses it
                row = encode_tool_call(self.cid, 0, idx, part, self.now, _CODEC)
                self.calls[part.id] = _NewCall(row, offset)
            elif isinstance(part, ToolResultPart):
                if isinstance(part.output, ContentOutput) and part.output.files:
                    raise _UnplannableError  # files are stored or checked by the general path
                self.outputs[(offset, idx)] = part.output
                self._answer(part, offset, idx)
            elif isinstance(part, FilePart):
                raise _UnplannableError
        self.rows.append(list(encode_message(self.cid, message, 0, None, self.now, _CODEC)))

    def _answer(self, part: ToolResultPart, offset: int, idx: int) -> None:
        """What a result does to the call it answers (as `convstore.store.writes` decides)."""
        call = self.calls.get(part.call_id)
        if call is None:
            self.earlier.append(_EarlierResult(part.call_id, offset, idx, part.output))
            return
        row = call.row
        stored = None if call.result_at is None else self.outputs[call.result_at]
        match on_result(call.status, stored, part.output):
            case Outcome.COMPLETES:
                call.status = status_for(part.output)
                row[CALL_STATUS] = call.status.value
                row[CALL_RESULT_KIND] = part.output.kind
                row[CALL_RESULT_IDX] = idx
                row[CALL_COMPLETED_AT] = self.stamp
                call.result_at = (offset, idx)
            case Outcome.DUPLICATE:
                pass  # an equal repeat stays in the history; the renderer de-duplicates it
            case Outcome.CONFLICT if self.on_conflict == "raise":
                raise _UnplannableError  # the general path refuses the batch
            case Outcome.CONFLICT:
                pass  # keep-first: the later result stays as history only
