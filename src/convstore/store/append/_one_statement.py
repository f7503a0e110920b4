"""The common PostgreSQL append in one round trip (`convstore.db.postgres.append`).

Invariants:

- Taken only for a batch that follows the head (no ``parent_seq``), has no idempotency key, is
  not a ``complete_tool_call`` and references no attachment, on PostgreSQL. Everything else,
  and anything this path declines, goes down the general path (`writes.append_messages`).
- The rows are planned by the general path's own batch walker (`writes.plan_batch`), so they
  are the general path's rows, with one assumption: every earlier call the batch answers is
  pending or interrupted (or does not exist). The statement's guard checks that assumption and
  the rest of what the general path checks first (conversation, tenant, revision, no branches)
  and writes nothing when any fails.
- Declining is free of side effects: an error while planning, a guard that fails, or a
  statement the server refuses all leave the database untouched, and the general path then
  runs as if this one had not been tried (raising exactly what it always raises).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from pydantic_core import to_json
from typing_extensions import override

from convstore.db.backend import Backend
from convstore.db.postgres.append import DECLINES, SQL, OneStatementAppend
from convstore.db.tx import Codec
from convstore.errors import ConvstoreError
from convstore.store._results import AppendResult
from convstore.store.append import header_lock, writes
from convstore.store.append._planning import PlanningTx, planning_cannot_decide
from convstore.store.append.writes import AppendPlan

__all__ = ["append_in_one_statement", "eligible"]


class _DriverCodec(Codec):
    """Values as the statement binds them: JSON as compact text (cast to ``json`` inside)."""

    @override
    def dump_json(self, value: Any) -> Any:
        return None if value is None else to_json(value).decode()

    @override
    def load_json(self, raw: Any) -> Any:
        raise NotImplementedError  # planning never reads

    @override
    def dump_time(self, value: datetime) -> Any:
        return value

    @override
    def load_time(self, raw: Any) -> datetime:
        raise NotImplementedError


_CODEC: Final = _DriverCodec()


def eligible(backend: Backend, plan: AppendPlan) -> bool:
    """Whether ``plan`` may try the one-statement path on ``backend``."""
    return (
        backend.one_statement is not None
        and plan.parent_seq is None
        and plan.idempotency_key is None
        and not plan.attachments
        and not any(m.files for m in plan.messages)
        and not planning_cannot_decide(plan.messages)
    )


async def append_in_one_statement(backend: Backend, plan: AppendPlan) -> AppendResult | None:
    """The stored messages, or ``None``: the general path must take this append."""
    runner = backend.one_statement
    if runner is None:
        return None
    try:
        batch = writes.plan_batch(PlanningTx(backend.statements, _CODEC), plan)
    except ConvstoreError:
        return None  # the general path raises it, after the checks that come first
    revision = header_lock.new_revision()
    append = OneStatementAppend(
        cid=plan.conversation_id,
        tenant=plan.tenant,
        expected_revision=plan.expected_revision,
        revision=revision,
        now=plan.now,
        message_rows=batch.message_rows,
        call_rows=[tuple(row) for row in batch.new_calls.values()],
        completions=batch.completions,
        interrupt_before=batch.interrupt_before,
    )
    row = await runner.fetch_one_statement(SQL, append.arguments(), declines=DECLINES)
    if row is None:
        return None
    base, head = row
    return writes.stored_copies(
        plan.messages, plan.conversation_id, base + 1, head, plan.now, revision
    )
