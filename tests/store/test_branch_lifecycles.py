"""Tool-call lifecycles after the head moves, behind a history of earlier turns.

`pop`, `truncate`, `switch_branch` and `append(parent_seq=...)` rederive only the lifecycles a
move can change, reading the path back only as far as it needs (the turn the move hangs from).
These cases put earlier turns (answered, interrupted and cancelled calls) behind each move, so
a walk that stopped too early or went too far shows as a wrong status somewhere, and every
case checks every call of the path, old ones included. Each also runs on a conversation that
branched long before (``branched``), where nothing can be assumed to be on the path.
"""

from __future__ import annotations

import pytest

from convstore import (
    ConversationStore,
    ErrorOutput,
    JsonOutput,
    Message,
    ToolCallConflictError,
    ToolCallPart,
)


def calling(*ids: str) -> Message:
    return Message.assistant(*(ToolCallPart(id=i, name="lookup", arguments={"q": i}) for i in ids))


async def statuses(store: ConversationStore, cid: str) -> dict[str, str]:
    return {c.id: c.status for c in (await store.load(cid)).tool_calls}


async def head(store: ConversationStore, cid: str) -> int:
    seq = (await store.load(cid, last=1)).head_seq
    assert seq is not None
    return seq


HISTORY = {"h0": "complete", "h1": "interrupted", "h2": "cancelled", "h3": "complete"}
"""The statuses of the calls `with_history` leaves on the path."""


async def with_history(store: ConversationStore, *, branched: bool) -> str:
    """A conversation whose path holds four earlier turns, one call each (`HISTORY`)."""
    conv = await store.create_conversation()
    await store.append(conv.id, [Message.user("q0"), calling("h0"), Message.tool_result("h0", 0)])
    await store.append(conv.id, [Message.user("q1"), calling("h1")])
    if branched:  # an abandoned edit of the second question, long before the moves under test
        await store.append(conv.id, [Message.user("q1, edited"), calling("x1")], parent_seq=3)
        await store.switch_branch(conv.id, head_seq=5)
    await store.append(conv.id, [Message.user("q2"), calling("h2")])
    await store.cancel_tool_calls(conv.id)
    await store.append(conv.id, [Message.user("q3"), calling("h3"), Message.tool_result("h3", 3)])
    assert await statuses(store, conv.id) == HISTORY
    return conv.id


@pytest.fixture(params=[False, True], ids=["chain", "branched"])
def branched(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


async def test_popping_results_reopens_their_calls_one_by_one(
    store: ConversationStore, branched: bool
) -> None:
    cid = await with_history(store, branched=branched)
    failed = Message.tool_result("j", ErrorOutput(message="no"))
    await store.append(
        cid, [Message.user("q"), calling("k", "j"), Message.tool_result("k", 1), failed]
    )
    assert await statuses(store, cid) == {**HISTORY, "k": "complete", "j": "error"}
    await store.pop(cid)
    assert await statuses(store, cid) == {**HISTORY, "k": "complete", "j": "pending"}
    await store.pop(cid)
    assert await statuses(store, cid) == {**HISTORY, "k": "pending", "j": "pending"}
    done = await store.complete_tool_call(cid, "j", JsonOutput(value="again"))
    assert done.status == "complete"


@pytest.mark.parametrize("undo", ["pop", "truncate", "switch_branch"])
async def test_undoing_an_interrupting_user_turn_reopens_only_the_calls_after_the_turn_before(
    store: ConversationStore, branched: bool, undo: str
) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k"), calling("j")])
    tip = await head(store, cid)
    await store.append(cid, Message.user("hello?"))
    assert await statuses(store, cid) == {**HISTORY, "k": "interrupted", "j": "interrupted"}
    if undo == "pop":
        await store.pop(cid)
    elif undo == "truncate":
        await store.truncate(cid, after_seq=tip)
    else:
        await store.switch_branch(cid, head_seq=tip)
    # h1 stays interrupted: the user turn that interrupts it ("q2") is still on the path.
    assert await statuses(store, cid) == {**HISTORY, "k": "pending", "j": "pending"}
    assert await store.cancel_tool_calls(cid) == ["k", "j"]


async def test_truncate_over_several_turns(store: ConversationStore, branched: bool) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k")])
    tip = await head(store, cid)
    await store.append(cid, [Message.tool_result("k", 1), Message.user("next"), calling("m")])
    await store.append(cid, [Message.user("and?"), Message.tool_result("m", 2)])
    assert await statuses(store, cid) == {**HISTORY, "k": "complete", "m": "complete"}
    popped = await store.truncate(cid, after_seq=tip)
    assert [m.role for m in popped] == ["tool", "user", "assistant", "user", "tool"]
    assert await statuses(store, cid) == {**HISTORY, "k": "pending"}


async def test_switching_between_branches_answered_differently(
    store: ConversationStore, branched: bool
) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k", "j")])
    fork_point = await head(store, cid)
    # One branch answers k, then the user moves on (j interrupted) ...
    await store.append(cid, [Message.tool_result("k", 1), Message.user("next")])
    first = await head(store, cid)
    # ... the other answers only j, with an error.
    await store.append(
        cid, Message.tool_result("j", ErrorOutput(message="down")), parent_seq=fork_point
    )
    second = await head(store, cid)
    on_first = {**HISTORY, "k": "complete", "j": "interrupted"}
    on_second = {**HISTORY, "k": "pending", "j": "error"}
    assert await statuses(store, cid) == on_second
    for _ in range(2):
        await store.switch_branch(cid, head_seq=first)
        assert await statuses(store, cid) == on_first
        await store.switch_branch(cid, head_seq=second)
        assert await statuses(store, cid) == on_second
    await store.switch_branch(cid, head_seq=fork_point)
    assert await statuses(store, cid) == {**HISTORY, "k": "pending", "j": "pending"}


async def test_switching_to_a_branch_of_an_earlier_turn(
    store: ConversationStore, branched: bool
) -> None:
    """The two paths part several turns back: everything after the parting point swaps."""
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k")])
    fork_point = await head(store, cid)
    await store.append(cid, [Message.tool_result("k", 1), Message.user("q'"), calling("m")])
    await store.append(cid, [Message.tool_result("m", 2), Message.user("q''"), calling("n")])
    long_tip = await head(store, cid)
    await store.append(cid, Message.user("skip it"), parent_seq=fork_point)
    short_tip = await head(store, cid)
    assert await statuses(store, cid) == {**HISTORY, "k": "interrupted"}
    await store.switch_branch(cid, head_seq=long_tip)
    assert await statuses(store, cid) == {
        **HISTORY, "k": "complete", "m": "complete", "n": "pending",
    }  # fmt: skip
    await store.switch_branch(cid, head_seq=short_tip)
    assert await statuses(store, cid) == {**HISTORY, "k": "interrupted"}


async def test_a_new_branch_from_the_middle_of_a_path_with_pending_calls(
    store: ConversationStore, branched: bool
) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k", "j")])
    calls_at = await head(store, cid)
    await store.append(cid, [Message.tool_result("k", 1), Message.user("more"), calling("m")])
    old_tip = await head(store, cid)
    assert await statuses(store, cid) == {
        **HISTORY, "k": "complete", "j": "interrupted", "m": "pending",
    }  # fmt: skip
    # Regenerate after the calls: k's result and the user turn are not on the new path.
    await store.append(cid, Message.assistant("let me think"), parent_seq=calls_at)
    assert await statuses(store, cid) == {**HISTORY, "k": "pending", "j": "pending"}
    await store.append(cid, Message.tool_result("j", 2))
    assert await statuses(store, cid) == {**HISTORY, "k": "pending", "j": "complete"}
    await store.append(cid, Message.user("well?"))
    assert await statuses(store, cid) == {**HISTORY, "k": "interrupted", "j": "complete"}
    await store.switch_branch(cid, head_seq=old_tip)
    assert await statuses(store, cid) == {
        **HISTORY, "k": "complete", "j": "interrupted", "m": "pending",
    }  # fmt: skip


async def test_cancelled_calls_stay_cancelled(store: ConversationStore, branched: bool) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k")])
    calls_at = await head(store, cid)
    assert await store.cancel_tool_calls(cid) == ["k"]
    await store.append(cid, Message.user("never mind"))
    assert await statuses(store, cid) == {**HISTORY, "k": "cancelled"}
    await store.pop(cid)
    assert await statuses(store, cid) == {**HISTORY, "k": "cancelled"}
    await store.append(cid, [Message.assistant("other"), Message.user("x")], parent_seq=calls_at)
    assert await statuses(store, cid) == {**HISTORY, "k": "cancelled"}
    await store.truncate(cid, after_seq=calls_at)
    await store.switch_branch(cid, head_seq=calls_at - 1)
    await store.switch_branch(cid, head_seq=calls_at)
    assert await statuses(store, cid) == {**HISTORY, "k": "cancelled"}
    # A result now is refused on every path: the cancellation belongs to the call.
    with pytest.raises(ToolCallConflictError):
        await store.append(cid, Message.tool_result("k", 1))


async def test_a_result_stored_before_the_cancellation_still_answers_on_its_branch(
    store: ConversationStore, branched: bool
) -> None:
    cid = await with_history(store, branched=branched)
    await store.append(cid, [Message.user("q"), calling("k")])
    calls_at = await head(store, cid)
    await store.append(cid, [Message.tool_result("k", 1), Message.user("next")])
    answered_tip = await head(store, cid)
    await store.append(cid, Message.user("skip"), parent_seq=calls_at)
    await store.switch_branch(cid, head_seq=calls_at)  # k is pending here ...
    assert await store.cancel_tool_calls(cid) == ["k"]  # ... and cancelled on every path
    await store.switch_branch(cid, head_seq=answered_tip)
    assert await statuses(store, cid) == {**HISTORY, "k": "complete"}
    await store.pop(cid)
    await store.pop(cid)  # the result: no other answer on the path, so the cancellation holds
    assert await statuses(store, cid) == {**HISTORY, "k": "cancelled"}
