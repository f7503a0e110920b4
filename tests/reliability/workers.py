"""Writer processes for the cross-process concurrency tests (started with the spawn context).

Each worker opens its own `ConversationStore` on the shared database (all at once, after a
barrier: on a new SQLite file they race to create the schema), creates the
conversations assigned to it, waits for every other worker at a barrier, then runs its writers
as concurrent tasks and reports, through a queue, what the store told each writer and every
error that reached it.
"""

from __future__ import annotations

import asyncio
import traceback
from dataclasses import dataclass
from typing import Any

from convstore import ConversationStore
from tests.reliability.workload import write_stream

BARRIER_TIMEOUT = 60.0


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker process does."""

    index: int
    url: str
    tenant: str
    create: tuple[str, ...]
    """Conversation ids this worker creates before the start barrier."""
    writers: tuple[tuple[str, str], ...]
    """(writer name, conversation id) of each writer task it runs."""
    appends: int
    synchronous: str = "normal"
    auto_migrate: bool | None = None


def run_worker(plan: WorkerPlan, barriers: tuple[Any, Any, Any], results: Any) -> None:
    """Process entry point: ``barriers`` are passed before opening the store, after opening
    it and after creating the conversations; ``results`` is a queue."""
    try:
        barriers[0].wait(BARRIER_TIMEOUT)  # imports done: open the store all at once
        outcome = asyncio.run(_work(plan, *barriers[1:]))
    except BaseException:  # reported to the parent, which fails the test with it
        for barrier in barriers:
            barrier.abort()  # the other workers stop waiting for this one
        outcome = {"index": plan.index, "errors": [traceback.format_exc()], "written": {}}
    results.put(outcome)


async def _work(plan: WorkerPlan, opened: Any, created: Any) -> dict[str, Any]:
    async with ConversationStore(
        plan.url,
        blobs=f"memory://worker-{plan.index}",
        sqlite_synchronous=plan.synchronous,  # type: ignore[arg-type]
        auto_migrate=plan.auto_migrate,
    ) as store:
        # Every worker has opened the database (on SQLite, a new file: they race to migrate it).
        await asyncio.to_thread(opened.wait, BARRIER_TIMEOUT)
        for conversation_id in plan.create:
            await store.create_conversation(id=conversation_id, tenant=plan.tenant)
        await asyncio.to_thread(created.wait, BARRIER_TIMEOUT)
        outcomes = await asyncio.gather(
            *(write_stream(store, cid, writer, plan.appends) for writer, cid in plan.writers),
            return_exceptions=True,
        )
    errors = [
        "".join(traceback.format_exception(o)) for o in outcomes if isinstance(o, BaseException)
    ]
    written = {
        writer: [(w.k, w.seqs, w.completion_seq) for w in outcome]
        for (writer, _), outcome in zip(plan.writers, outcomes, strict=True)
        if not isinstance(outcome, BaseException)
    }
    return {"index": plan.index, "errors": errors, "written": written}
