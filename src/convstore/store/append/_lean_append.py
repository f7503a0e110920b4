"""The common append on SQLite, lean: rows encoded and lifecycles planned before the hop.

Most appends are the next turn of a conversation: at its head, no file, no idempotency key.
For those, `plan` walks the batch with the general path's own walker
(`convstore.store.append.writes.plan_batch`) in the caller's thread, and `LeanAppend.run` is a short
function in the writer's thread: lock the header (existence, tenant, revision), check
application message ids, look up the earlier calls the batch's results answer (one query),
then the planned rows with one ``executemany`` per table, the interrupt and the advance.

Invariants:

- Both paths write identical rows and return equal results (a property test holds them to
  it): the rows are the general path's own, planned with one assumption, that every earlier
  call the batch answers is pending or interrupted (or does not exist: its completion then
  changes no row). `run` checks that assumption and what the general path checks first.
- Anything else goes to the general path (`convstore.store.append.writes.append_messages`), as if
  this one had not been tried, so its errors are raised in its order: from the caller's
  thread, a batch with a file or one that planning refuses; from inside the transaction,
  before anything is written, a ``parent_seq`` other than the head (a new branch), results for
  earlier calls of a conversation with branches (which calls lie on the head's path is the
  general path's question), or for an earlier call that already has a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from convstore.db.mapping import holds_no_files
from convstore.db.sqlite.tx import CODEC
from convstore.db.statements import Statements
from convstore.db.statements.tool_calls import ToolCallAt
from convstore.db.tx import Tx
from convstore.errors import ConvstoreError
from convstore.model import ToolCallStatus
from convstore.store._results import AppendResult
from convstore.store.append import header_lock, writes
from convstore.store.append._planning import PlanningTx, planning_cannot_decide
from convstore.store.append.writes import AppendPlan

__all__ = ["LeanAppend", "plan"]

_PLANNING: Final = PlanningTx(Statements.for_dialect("sqlite"), CODEC)
"""Encodes before the hop exactly as the writer's own `SqliteCodec` would inside it."""

_OPEN: Final = (ToolCallStatus.PENDING.value, ToolCallStatus.INTERRUPTED.value)


@dataclass(frozen=True, slots=True)
class LeanAppend:
    """One planned append; `run` is the write (``fn(tx)``) for `Backend.write`."""

    plan: AppendPlan
    batch: writes.PlannedBatch

    def run(self, tx: Tx) -> AppendResult:
        """Write the batch in ``tx``; the stored messages with the new revision."""
        plan, batch = self.plan, self.batch
        cid = plan.conversation_id
        header = header_lock.lock(tx, cid, plan.tenant, plan.expected_revision)
        earlier = list(batch.db_calls)
        if plan.parent_seq not in (None, header.head_seq) or (header.branched and earlier):
            return self._general(tx)
        writes.check_message_ids(tx, cid, plan.messages)
        if earlier and not self._all_open(tx, earlier):
            return self._general(tx)
        first, parent = header.last_seq + 1, header.head_seq
        batch.placed(tx, header.last_seq, parent).write()
        header.last_seq = header.head_seq = header.last_seq + len(plan.messages)
        revision = header_lock.advance(tx, header, plan.now)
        return writes.stored_copies(plan.messages, cid, first, parent, plan.now, revision)

    def _all_open(self, tx: Tx, call_ids: list[str]) -> bool:
        """Whether each of these calls that exists is pending or interrupted."""
        found = tx.fetch(
            tx.statements.select_tool_calls_in,
            {"cid": self.plan.conversation_id, "ids": tx.codec.dump_json(call_ids)},
        )
        return all(row[ToolCallAt.status] in _OPEN for row in found)

    def _general(self, tx: Tx) -> AppendResult:
        return writes.append_messages(tx, self.plan)


def plan(append: AppendPlan) -> LeanAppend | None:
    """The lean write of a batch without idempotency key; ``None``: the general path's."""
    messages = append.messages
    if any(not holds_no_files(m.parts) and m.files for m in messages) or planning_cannot_decide(
        messages
    ):
        return None
    try:
        batch = writes.plan_batch(_PLANNING, append)
    except ConvstoreError:
        return None  # the general path raises it, after the checks that come first
    return LeanAppend(append, batch)
