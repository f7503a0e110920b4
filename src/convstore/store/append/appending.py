"""The append pipeline: the one route every append of messages takes to the database.

Its callers: `ConversationStore.append` and the checkpoint writes (`append_batch`), and
`ConversationStore.complete_tool_call` (`complete_batch`), each after the store's argument and
message checks. The route:

1. **Planned** (`_planned`): a batch without files, idempotency key or extra work (``also``),
   which planning can decide, has its rows encoded and every call's lifecycle decided before
   any transaction (`convstore.store.append._batch.plan_batch`). A backend that runs one-statement
   operations (`convstore.db.backend.Backend.one_statement`: PostgreSQL) writes it in one
   round trip (`convstore.store.append._one_statement`); otherwise the planned rows go in one hop
   to the writer (`convstore.store.append._lean_append`, SQLite). Either declines what its
   assumptions do not cover (a branch, a call already answered, a designed refusal of the
   server) and the general step then runs as if it had not been tried.
2. **General** (`_write_batch`): the batch's file bytes into the blob store
   (`convstore.store.attachments`), then its rows in one transaction
   (`convstore.store.append.writes`), walked against the calls stored on its path.

Invariants:

- A batch whose transaction finds garbage collection deleting (or having deleted, after this
  batch's put) one of its blobs is rolled back; its bytes are stored again once the collection
  is over, and it is retried. It never commits a reference to deleted bytes.
- The fast steps are parameters of this one pipeline (the backend's capability), never a
  backend's type; what they write equals what the general step would (differential tests:
  tests/store/test_lean_append.py, tests/store/test_one_statement_append.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from convstore.blobs import StoredBlob
from convstore.db.backend import Backend
from convstore.db.tx import Tx
from convstore.model import Message, ToolCall
from convstore.store import _arguments
from convstore.store._results import AppendResult
from convstore.store.append import _lean_append, _one_statement, writes
from convstore.store.append._gc_retry import stored_then_written
from convstore.store.append.writes import AppendPlan, OnConflict
from convstore.store.attachments import (
    BlobContext,
    attachment_rows,
    namespace_of,
    needs_storing,
    store_files,
    written_times,
)
from convstore.store.load import reads

__all__ = ["append_batch", "complete_batch"]

_T = TypeVar("_T")


async def append_batch(
    ctx: BlobContext,
    conversation_id: str,
    batch: list[Message],
    *,
    tenant: str | None,
    idempotency_key: str | None = None,
    on_conflict: OnConflict = "raise",
    expected_revision: str | None = None,
    parent_seq: int | None = None,
    also: Callable[[Tx], None] | None = None,
) -> AppendResult:
    """Store the batch (files, then rows); its stored copies.

    ``also(tx)`` runs after the rows in the same transaction (`append`'s ``state_patches``, a
    checkpoint). A replayed idempotency key raises `convstore.store.append.writes.NoChange`.
    """
    if idempotency_key is None and also is None:
        planned = _planned(
            ctx.backend,
            conversation_id,
            batch,
            tenant=tenant,
            on_conflict=on_conflict,
            expected_revision=expected_revision,
            parent_seq=parent_seq,
        )
        if planned is not None and (stored := await planned) is not None:
            return stored

    def write(tx: Tx, plan: AppendPlan) -> AppendResult:
        stored = writes.append_messages(tx, plan)
        if also is not None:
            also(tx)
        return stored

    return await _write_batch(
        ctx,
        AppendPlan(
            conversation_id=conversation_id,
            messages=batch,
            attachments=[],
            now=_arguments.now(),  # each attempt stamps its own
            tenant=tenant,
            idempotency_key=idempotency_key,
            on_conflict=on_conflict,
            expected_revision=expected_revision,
            parent_seq=parent_seq,
        ),
        write,
    )


def _planned(
    backend: Backend,
    cid: str,
    batch: list[Message],
    *,
    tenant: str | None,
    on_conflict: OnConflict,
    expected_revision: str | None,
    parent_seq: int | None,
) -> Awaitable[AppendResult | None] | None:
    """The write of the batch from rows planned before any transaction; ``None``: not taken.

    The write's result is ``None`` when it declined (the general step follows).
    """
    plan = AppendPlan(
        conversation_id=cid,
        messages=batch,
        attachments=[],
        now=_arguments.now(),
        tenant=tenant,
        on_conflict=on_conflict,
        expected_revision=expected_revision,
        parent_seq=parent_seq,
    )
    if backend.one_statement is not None:
        if not _one_statement.eligible(backend, plan):
            return None
        return _one_statement.append_in_one_statement(backend, plan)
    lean = _lean_append.plan(plan)
    return None if lean is None else backend.write(lean.run)


async def complete_batch(
    ctx: BlobContext,
    conversation_id: str,
    result: Message,
    *,
    tenant: str | None,
    expected_revision: str | None,
) -> ToolCall:
    """Store a tool-result message and complete its call (`writes.complete_call`); the call."""
    plan = AppendPlan(
        conversation_id=conversation_id,
        messages=[result],
        attachments=[],
        now=_arguments.now(),
        tenant=tenant,
        expected_revision=expected_revision,
    )
    return await _write_batch(ctx, plan, writes.complete_call)


async def _write_batch(
    ctx: BlobContext, given: AppendPlan, write: Callable[[Tx, AppendPlan], _T]
) -> _T:
    """``write`` the plan after storing its messages' files; retried if gc collects a blob.

    The retry is `convstore.store.append._gc_retry`'s, the one loop restores and imports share.
    """
    backend, blobs = ctx.backend, ctx.blobs
    cid = given.conversation_id
    if any(needs_storing(f) for m in given.messages for f in m.files):
        tenant = given.tenant
        if tenant is None:
            tenant = await backend.read(lambda tx: reads.conversation_tenant(tx, cid))
        blobs = blobs.namespace(namespace_of(ctx.dedupe, tenant))

    async def store() -> tuple[AppendPlan, list[StoredBlob]]:
        stored_messages, stored_blobs = await store_files(blobs, given.messages)
        plan = AppendPlan(
            conversation_id=cid,
            messages=stored_messages,
            attachments=attachment_rows(stored_blobs),
            now=_arguments.now(),  # each attempt stamps its own
            tenant=given.tenant,
            idempotency_key=given.idempotency_key,
            on_conflict=given.on_conflict,
            expected_revision=given.expected_revision,
            parent_seq=given.parent_seq,
            namespace=blobs.namespace_name,
            written=written_times(stored_blobs),
        )
        return plan, stored_blobs

    return await stored_then_written(
        ctx,
        blobs.namespace_name,
        store,
        lambda plan: backend.write(lambda tx: write(tx, plan)),
        refusal="an attachment of this append was being garbage-collected and could not be "
        "stored again; nothing was written: retry the append",
    )
