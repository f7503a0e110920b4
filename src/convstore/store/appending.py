"""The append pipeline: the one route every append of messages takes to the database.

Its callers: `ConversationStore.append` and the checkpoint writes (`append_batch`), and
`ConversationStore.complete_tool_call` (`complete_batch`), each after the store's argument and
message checks. The route:

1. **Planned** (`_planned`): a batch without files, idempotency key or extra work (``also``),
   which planning can decide, has its rows encoded and every call's lifecycle decided before
   any transaction (`convstore.store.batch.plan_batch`). A backend that runs one-statement
   operations (`convstore.db.backend.Backend.one_statement`: PostgreSQL) writes it in one
   round trip (`convstore.store.one_statement`); otherwise the planned rows go in one hop
   to the writer (`convstore.store.lean_append`, SQLite). Either declines what its
   assumptions do not cover (a branch, a call already answered, a designed refusal of the
   server) and the general step then runs as if it had not been tried.
2. **General** (`_write_batch`): the batch's file bytes into the blob store
   (`convstore.store.attachments`), then its rows in one transaction
   (`convstore.store.writes`), walked against the calls stored on its path.

Invariants:

- A batch whose transaction finds garbage collection deleting (or having deleted, after this
  batch's put) one of its blobs is rolled back; its bytes are stored again once the collection
  is over, and it is retried. It never commits a reference to deleted bytes.
- The fast steps are parameters of this one pipeline (the backend's capability), never a
  backend's type; what they write equals what the general step would (differential tests:
  tests/store/test_lean_append.py, tests/store/test_one_statement_append.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from convstore.db.backend import Backend
from convstore.db.tx import Tx
from convstore.errors import BlobStorageError, ConversationNotFoundError
from convstore.model import Message, ToolCall
from convstore.store import arguments, lean_append, one_statement, reads, writes
from convstore.store.attachments import (
    BlobContext,
    attachment_rows,
    namespace_of,
    needs_storing,
    store_files,
    written_times,
)
from convstore.store.released_blobs import release_after_failure
from convstore.store.results import AppendResult
from convstore.store.writes import AppendPlan, OnConflict

__all__ = ["append_batch", "complete_batch", "wait_for_collection"]

_T = TypeVar("_T")

_COLLECTED_RETRIES = 3
_STALE_TOMBSTONE = 60.0
"""Seconds after which a garbage collector's mark on a blob is taken for a dead collector's."""


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
    checkpoint). A replayed idempotency key raises `convstore.store.writes.NoChange`.
    """
    if idempotency_key is None and also is None:
        planned = await _planned(
            ctx.backend,
            conversation_id,
            batch,
            tenant=tenant,
            on_conflict=on_conflict,
            expected_revision=expected_revision,
            parent_seq=parent_seq,
        )
        if planned is not None:
            return planned

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
            now=arguments.now(),  # each attempt stamps its own
            tenant=tenant,
            idempotency_key=idempotency_key,
            on_conflict=on_conflict,
            expected_revision=expected_revision,
            parent_seq=parent_seq,
        ),
        write,
    )


async def _planned(
    backend: Backend,
    cid: str,
    batch: list[Message],
    *,
    tenant: str | None,
    on_conflict: OnConflict,
    expected_revision: str | None,
    parent_seq: int | None,
) -> AppendResult | None:
    """The batch written from rows planned before any transaction; ``None``: not taken."""
    now = arguments.now()
    if backend.one_statement is not None:
        plan = AppendPlan(
            conversation_id=cid,
            messages=batch,
            attachments=[],
            now=now,
            tenant=tenant,
            on_conflict=on_conflict,
            expected_revision=expected_revision,
            parent_seq=parent_seq,
        )
        if not one_statement.eligible(backend, plan):
            return None
        return await one_statement.append_in_one_statement(backend, plan)
    lean = lean_append.plan(
        cid,
        batch,
        now,
        tenant=tenant,
        expected_revision=expected_revision,
        parent_seq=parent_seq,
        on_conflict=on_conflict,
    )
    return None if lean is None else await backend.write(lean.run)


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
        now=arguments.now(),
        tenant=tenant,
        expected_revision=expected_revision,
    )
    return await _write_batch(ctx, plan, writes.complete_call)


async def _write_batch(
    ctx: BlobContext, given: AppendPlan, write: Callable[[Tx, AppendPlan], _T]
) -> _T:
    """``write`` the plan after storing its messages' files; retried if gc collects a blob."""
    backend, blobs = ctx.backend, ctx.blobs
    cid = given.conversation_id
    if any(needs_storing(f) for m in given.messages for f in m.files):
        tenant = given.tenant
        if tenant is None:
            tenant = await backend.read(lambda tx: reads.conversation_tenant(tx, cid))
        blobs = blobs.namespace(namespace_of(ctx.dedupe, tenant))
    for attempt in range(_COLLECTED_RETRIES):
        stored_messages, stored_blobs = await store_files(blobs, given.messages)
        plan = AppendPlan(
            conversation_id=cid,
            messages=stored_messages,
            attachments=attachment_rows(stored_blobs),
            now=arguments.now(),
            tenant=given.tenant,
            idempotency_key=given.idempotency_key,
            on_conflict=given.on_conflict,
            expected_revision=given.expected_revision,
            parent_seq=given.parent_seq,
            namespace=blobs.namespace_name,
            written=written_times(stored_blobs),
        )

        def run(tx: Tx, plan: AppendPlan = plan) -> _T:
            return write(tx, plan)

        try:
            return await backend.write(run)
        except writes.BlobBeingCollectedError as collected:
            if attempt == _COLLECTED_RETRIES - 1:
                break
            # Wait for the collection to end, then store the bytes again (above).
            await wait_for_collection(ctx, collected.blobs)
        except ConversationNotFoundError:
            # Erased or deleted while this batch's bytes went in: nothing will reference them.
            await release_after_failure(backend, plan.namespace, stored_blobs)
            raise
    raise BlobStorageError(
        "an attachment of this append was being garbage-collected and could not be stored "
        "again; nothing was written: retry the append"
    )


async def wait_for_collection(ctx: BlobContext, blobs: list[tuple[str, str]]) -> None:
    """Wait until garbage collection has finished with ``blobs`` (namespace, digest).

    A collector holds its mark for one stat and one delete; a mark older than
    `_STALE_TOMBSTONE` was left by a collector that died: whether it deleted the bytes is
    unknown, so they are taken as deleted now and the retry stores them again.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STALE_TOMBSTONE
    delay = 0.01
    while await ctx.backend.read(lambda tx: reads.tombstoned(tx, blobs)):
        if loop.time() > deadline:
            await _take_as_deleted(ctx, blobs)
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


async def _take_as_deleted(ctx: BlobContext, blobs: list[tuple[str, str]]) -> None:
    now = await ctx.blobs.storage_now()
    await ctx.backend.write(lambda tx: writes.finish_tombstones(tx, blobs, now))
