"""Stored lifecycles and derived ones agree, on random branch trees.

The active path's ``tool_calls`` rows are kept up to date by
`convstore.store.history.branches.settle` as the head moves; any other path's lifecycles are derived
from its messages alone (`convstore.store.history.lifecycle.path_lifecycles`). Both follow the one
rule in `lifecycle`. After every random operation (turns at the head or hanging from any earlier
message, results, cancellations, pops, truncations, branch switches) the head's path is read three
ways and must agree: as stored; derived, while the stored head is elsewhere; and as stored again
once the head has moved away and back (which settles every call the two moves touch).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import (
    ConversationStore,
    ConvstoreError,
    ErrorOutput,
    JsonOutput,
    Message,
    ToolCallPart,
)
from convstore.model import Conversation

Op = tuple[Any, ...]

OPS = st.one_of(
    # A turn: where it hangs (0: the head, k: the k-th message of the tree), how many calls,
    # which of them are answered in the same batch, whether a user message opens it.
    st.tuples(
        st.just("turn"),
        st.integers(0, 12),
        st.integers(0, 2),
        st.lists(st.booleans(), min_size=2, max_size=2),
        st.booleans(),
    ),
    st.tuples(st.just("result"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("pop")),
    st.tuples(st.just("truncate"), st.integers(0, 12)),
    st.tuples(st.just("switch"), st.integers(0, 12)),
)


def lifecycles(conv: Conversation) -> dict[str, tuple[str, int | None]]:
    return {call.id: (call.status, call.result_seq) for call in conv.tool_calls}


async def seqs_of(store: ConversationStore, cid: str) -> list[int]:
    return sorted(node.seq for node in (await store.tree(cid)).nodes)


async def apply(store: ConversationStore, cid: str, op: Op, counter: list[int]) -> None:
    seqs = await seqs_of(store, cid)
    match op:
        case ("turn", where, n_calls, answered, with_user):
            parent = seqs[(where - 1) % len(seqs)] if where and seqs else None
            ids = [f"c{counter[0] + i}" for i in range(n_calls)]
            counter[0] += n_calls
            batch = [Message.user(f"question {counter[0]}")] if with_user else []
            if ids:
                batch.append(
                    Message.assistant(*(ToolCallPart(id=i, name="f", arguments={}) for i in ids))
                )
                batch += [
                    Message.tool_result(i, {"n": 1})
                    for i, a in zip(ids, answered[:n_calls], strict=True)
                    if a
                ]
            else:
                batch.append(Message.assistant("an answer"))
            await store.append(cid, batch, parent_seq=parent)
        case ("result", which, failed):
            pending = [c.id for c in (await store.load(cid)).tool_calls if c.status != "complete"]
            if pending:
                output = ErrorOutput(message="no") if failed else JsonOutput(value=which)
                await store.complete_tool_call(cid, pending[which % len(pending)], output)
        case ("cancel",):
            await store.cancel_tool_calls(cid)
        case ("pop",):
            await store.pop(cid)
        case ("truncate", k):
            path = [m.seq or 0 for m in (await store.load(cid)).messages]
            await store.truncate(cid, after_seq=path[k % len(path)] if path else 0)
        case ("switch", k):
            if seqs:
                await store.switch_branch(cid, head_seq=seqs[k % len(seqs)])


async def check_agreement(store: ConversationStore, cid: str) -> None:
    stored = await store.load(cid)
    head = stored.head_seq
    if head is None:
        return
    elsewhere = next((s for s in await seqs_of(store, cid) if s != head), None)
    if elsewhere is None:
        return
    await store.switch_branch(cid, head_seq=elsewhere)
    derived = await store.load(cid, head_seq=head)
    await store.switch_branch(cid, head_seq=head)
    settled = await store.load(cid)
    assert lifecycles(derived) == lifecycles(stored), (head, elsewhere)
    assert lifecycles(settled) == lifecycles(stored), (head, elsewhere)


async def run(db_url: str, ops: list[Op]) -> None:
    blobs = f"memory://lc-{uuid.uuid4().hex}"
    async with ConversationStore(db_url, blobs=blobs, auto_migrate=True) as store:
        cid = (await store.create_conversation()).id
        counter = [0]
        for op in ops:
            try:
                await apply(store, cid, op, counter)
            except ConvstoreError:
                continue  # a refused operation (a result for a cancelled call, say) changes nothing
            await check_agreement(store, cid)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=14))
def test_settled_and_derived_lifecycles_agree_on_random_trees(db_url: str, ops: list[Op]) -> None:
    asyncio.run(run(db_url, ops))
