"""Branches, undo and fork through the public API, on every database.

Edit-and-regenerate (`append(parent_seq=N)`) keeps the old branch listable and switchable; tool
lifecycles follow the active path; `pop` of a result reopens its call and `pop` of the calling
message removes its calls; `truncate` is repeated `pop`; a fork shares blobs (no bytes copied)
and keeps message ids; every refused operation raises a `ConvstoreError` and writes nothing.
"""

from __future__ import annotations

import os
import uuid

import pytest

from convstore import (
    ContentOutput,
    ConversationNotFoundError,
    ConversationStore,
    ConvstoreError,
    FilePart,
    InvalidInputError,
    JsonOutput,
    Message,
    TextPart,
    ToolCallConflictError,
    ToolCallNotFoundError,
    ToolCallPart,
    fsck,
)
from tests.store.snapshots import snapshot
from tests.support.storage import MemoryStorage

# Random bytes: content addressing must not find these in a database other tests share.
PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(512)
CHART = b"\x89PNG\r\n\x1a\n" + os.urandom(256)


def calling(*ids: str, mid: str | None = None) -> Message:
    return Message.assistant(
        *(ToolCallPart(id=i, name="lookup", arguments={"q": i}) for i in ids), id=mid
    )


def blob_keys(blobs_url: str) -> set[str]:
    """Every stored object under the store's blob root, staging excluded."""
    raw = MemoryStorage(blobs_url.removeprefix("memory://"))
    return {k for k in raw.keys() if not k.startswith("tmp/")}  # noqa: SIM118 (not a dict)


async def path_of(store: ConversationStore, cid: str) -> list[tuple[int | None, int | None]]:
    """``(seq, parent_seq)`` of each message on the active path."""
    return [(m.seq, m.parent_seq) for m in (await store.load(cid)).messages]


async def statuses(store: ConversationStore, cid: str) -> dict[str, str]:
    return {c.id: c.status for c in (await store.load(cid)).tool_calls}


async def branch_list(store: ConversationStore, cid: str) -> list[tuple[int, bool]]:
    return [(b.head_seq, b.active) for b in await store.branches(cid)]


class TestEditAndRegenerate:
    async def test_the_old_branch_stays_listable_and_switchable(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(
            conv.id,
            [
                Message.system("be brief"),
                Message.user("q1"),
                Message.assistant("a1"),
                Message.user("q2"),
                Message.assistant("a2"),
            ],
        )
        edited = await store.append(
            conv.id, [Message.user("q2, edited"), Message.assistant("a2'")], parent_seq=3
        )
        assert [m.seq for m in edited] == [6, 7]
        loaded = await store.load(conv.id)
        assert [(m.seq, m.parent_seq) for m in loaded.messages] == [
            (1, None), (2, 1), (3, 2), (6, 3), (7, 6),
        ]  # fmt: skip
        assert [m.text for m in loaded.messages][-2:] == ["q2, edited", "a2'"]
        assert loaded.head_seq == 7
        assert await branch_list(store, conv.id) == [(5, False), (7, True)]

        await store.switch_branch(conv.id, head_seq=5)
        old = await store.load(conv.id)
        assert [m.text for m in old.messages] == ["be brief", "q1", "a1", "q2", "a2"]
        assert old.head_seq == 5
        assert await branch_list(store, conv.id) == [(5, True), (7, False)]

        # An interior head: listed as the active branch beside the two tips.
        await store.switch_branch(conv.id, head_seq=3)
        assert await path_of(store, conv.id) == [(1, None), (2, 1), (3, 2)]
        assert await branch_list(store, conv.id) == [(3, True), (5, False), (7, False)]
        # A plain append now grows a third branch from there.
        (third,) = await store.append(conv.id, Message.user("q2, again"))
        assert (third.seq, (await store.load(conv.id)).messages[-1].parent_seq) == (8, 3)
        assert await branch_list(store, conv.id) == [(5, False), (7, False), (8, True)]

    async def test_parent_seq_of_the_head_is_a_plain_append(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
        await store.append(conv.id, Message.user("c"), parent_seq=2)
        assert await path_of(store, conv.id) == [(1, None), (2, 1), (3, 2)]
        assert await branch_list(store, conv.id) == [(3, True)]

    async def test_a_batch_is_chained_under_its_parent(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
        await store.append(
            conv.id, [Message.user("x"), Message.assistant("y"), Message.user("z")], parent_seq=1
        )
        assert await path_of(store, conv.id) == [(1, None), (3, 1), (4, 3), (5, 4)]

    async def test_a_new_root(self, store: ConversationStore) -> None:
        """After ``truncate(after_seq=0)`` the next append starts a second root."""
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
        await store.truncate(conv.id, after_seq=0)
        await store.append(conv.id, Message.user("fresh start"))
        assert await path_of(store, conv.id) == [(3, None)]

    async def test_tool_lifecycles_follow_the_path(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("go"), calling("k")])
        await store.append(conv.id, Message.tool_result("k", "first"))  # seq 3
        # Another result on another branch: not a conflict, it answers the call there.
        await store.append(conv.id, Message.tool_result("k", "second"), parent_seq=2)  # seq 4
        there = (await store.load(conv.id)).get_tool_call("k")
        assert (there.status, there.output, there.result_seq) == (
            "complete", JsonOutput(value="second"), 4,
        )  # fmt: skip
        await store.switch_branch(conv.id, head_seq=3)
        back = (await store.load(conv.id)).get_tool_call("k")
        assert (back.status, back.output, back.result_seq) == (
            "complete", JsonOutput(value="first"), 3,
        )  # fmt: skip
        # On the path that stops at the call, it is unanswered.
        await store.switch_branch(conv.id, head_seq=2)
        assert await statuses(store, conv.id) == {"k": "pending"}
        done = await store.complete_tool_call(conv.id, "k", JsonOutput(value="third"))
        assert (done.status, done.result_seq) == ("complete", 5)
        assert await path_of(store, conv.id) == [(1, None), (2, 1), (5, 2)]
        # A user message on one branch interrupts the call there only.
        await store.append(conv.id, Message.user("never mind"), parent_seq=2)
        assert await statuses(store, conv.id) == {"k": "interrupted"}
        await store.switch_branch(conv.id, head_seq=4)
        assert await statuses(store, conv.id) == {"k": "complete"}

    async def test_a_result_on_the_path_outranks_a_cancellation_made_elsewhere(
        self, store: ConversationStore
    ) -> None:
        """v2 semantics: the first result on the path decides; a cancellation only counts for
        a call that has none there."""
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("k"), Message.tool_result("k", 1)])
        await store.switch_branch(conv.id, head_seq=2)  # the path without the result
        assert await store.cancel_tool_calls(conv.id) == ["k"]
        assert await statuses(store, conv.id) == {"k": "cancelled"}
        await store.switch_branch(conv.id, head_seq=3)
        answered = (await store.load(conv.id)).get_tool_call("k")
        assert (answered.status, answered.output) == ("complete", JsonOutput(value=1))
        fork = await store.fork(conv.id, at_seq=3)
        assert await statuses(store, fork.id) == {"k": "complete"}
        await store.switch_branch(conv.id, head_seq=2)
        assert await statuses(store, conv.id) == {"k": "cancelled"}

    async def test_complete_needs_the_call_on_the_active_path(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("k")])
        await store.switch_branch(conv.id, head_seq=1)
        before = await snapshot(store, conv.id)
        with pytest.raises(ToolCallNotFoundError):
            await store.complete_tool_call(conv.id, "k", JsonOutput(value=1))
        assert await snapshot(store, conv.id) == before

    async def test_call_ids_are_unique_across_branches(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("k")])
        before = await snapshot(store, conv.id)
        with pytest.raises(ToolCallConflictError):
            await store.append(conv.id, calling("k"), parent_seq=1)
        assert await snapshot(store, conv.id) == before

    async def test_a_conversation_that_never_branched_loads_as_before(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        stored = await store.append(conv.id, [Message.user(str(i)) for i in range(4)])
        loaded = await store.load(conv.id)
        assert [m.seq for m in loaded.messages] == [1, 2, 3, 4]
        assert [m.parent_seq for m in loaded.messages] == [None, 1, 2, 3]
        assert {m.conversation_id for m in loaded.messages} == {conv.id}
        assert [m.parts for m in loaded.messages] == [m.parts for m in stored]
        assert await branch_list(store, conv.id) == [(4, True)]


class TestUndo:
    async def test_pop_of_a_result_reopens_its_call(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [calling("k"), Message.tool_result("k", {"rows": 3})])
        popped = await store.pop(conv.id)
        assert popped is not None
        assert (popped.seq, popped.parent_seq, popped.role) == (2, 1, "tool")
        assert popped.tool_results[0].output == JsonOutput(value={"rows": 3})
        call = (await store.load(conv.id)).get_tool_call("k")
        assert (call.status, call.result_kind, call.output, call.result_seq) == (
            "pending", None, None, None,
        )  # fmt: skip
        # The old result is gone: a different one is not a conflict.
        done = await store.complete_tool_call(conv.id, "k", JsonOutput(value="other"))
        assert (done.status, done.output) == ("complete", JsonOutput(value="other"))

    async def test_pop_of_a_result_after_a_user_turn_leaves_the_call_interrupted(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(
            conv.id, [calling("k"), Message.user("still there?"), Message.tool_result("k", 1)]
        )
        assert await statuses(store, conv.id) == {"k": "complete"}
        await store.pop(conv.id)
        assert await statuses(store, conv.id) == {"k": "interrupted"}

    @pytest.mark.parametrize("undo", ["pop", "truncate", "switch_branch"])
    async def test_undoing_the_interrupting_user_turn_leaves_the_call_pending(
        self, store: ConversationStore, undo: str
    ) -> None:
        """``interrupted`` means "a user message follows it on the path": take that away and
        the call is pending again (and `cancel_tool_calls` cancels it)."""
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("k"), Message.user("hello?")])
        assert await statuses(store, conv.id) == {"k": "interrupted"}
        if undo == "pop":
            await store.pop(conv.id)
        elif undo == "truncate":
            await store.truncate(conv.id, after_seq=2)
        else:
            await store.switch_branch(conv.id, head_seq=2)
        assert await statuses(store, conv.id) == {"k": "pending"}
        assert await store.cancel_tool_calls(conv.id) == ["k"]
        assert await statuses(store, conv.id) == {"k": "cancelled"}

    async def test_pop_of_the_calling_message_removes_its_calls(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("a", "b")])
        popped = await store.pop(conv.id)
        assert popped is not None and [p.id for p in popped.tool_calls] == ["a", "b"]
        loaded = await store.load(conv.id)
        assert [m.seq for m in loaded.messages] == [1]
        assert loaded.tool_calls == []
        assert await store.cancel_tool_calls(conv.id) == []
        with pytest.raises(ToolCallNotFoundError):
            await store.complete_tool_call(conv.id, "a", JsonOutput(value=1))

    async def test_pop_returns_the_message_as_stored(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("q"))
        (stored,) = await store.append(
            conv.id, Message.assistant("answer", provider="openai", model="gpt-5", id="ui-7")
        )
        popped = await store.pop(conv.id)
        assert popped is not None
        assert (popped.seq, popped.parent_seq, popped.id) == (2, 1, "ui-7")
        assert (popped.parts, popped.provider, popped.model) == (
            stored.parts, "openai", "gpt-5",
        )  # fmt: skip
        assert await path_of(store, conv.id) == [(1, None)]

    async def test_popped_seqs_are_never_reused(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.user("b")])
        await store.pop(conv.id)
        (again,) = await store.append(conv.id, Message.user("c"))
        assert again.seq == 3
        assert await path_of(store, conv.id) == [(1, None), (3, 1)]

    async def test_pop_of_a_message_other_branches_run_through_keeps_it(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("1"), Message.user("2"), Message.user("3")])
        await store.append(conv.id, Message.user("4"), parent_seq=1)
        await store.pop(conv.id)  # 4: a leaf, deleted
        assert await path_of(store, conv.id) == [(1, None)]
        popped = await store.pop(conv.id)  # 1: 2 and 3 hang under it, so it stays
        assert popped is not None and popped.seq == 1
        loaded = await store.load(conv.id)
        assert (loaded.messages, loaded.head_seq) == ([], None)
        assert await branch_list(store, conv.id) == [(3, False)]
        await store.switch_branch(conv.id, head_seq=3)
        assert await path_of(store, conv.id) == [(1, None), (2, 1), (3, 2)]

    async def test_truncate_is_repeated_pop(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [calling("k"), Message.tool_result("k", 1)])
        await store.append(conv.id, [Message.user(str(i)) for i in range(3)])
        await store.truncate(conv.id, after_seq=1)
        loaded = await store.load(conv.id)
        assert ([m.seq for m in loaded.messages], loaded.head_seq) == ([1], 1)
        assert await statuses(store, conv.id) == {"k": "pending"}
        assert await branch_list(store, conv.id) == [(1, True)]
        await store.truncate(conv.id, after_seq=0)
        loaded = await store.load(conv.id)
        assert (loaded.messages, loaded.tool_calls, loaded.head_seq) == ([], [], None)

    async def test_truncate_at_the_head_removes_nothing(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.user("b")])
        await store.truncate(conv.id, after_seq=2)
        assert await path_of(store, conv.id) == [(1, None), (2, 1)]

    async def test_removed_blobs_become_collectable(
        self, store: ConversationStore, blobs_url: str
    ) -> None:
        conv = await store.create_conversation()
        image = FilePart.from_bytes(PNG, media_type="image/png")
        await store.append(conv.id, [Message.user("look", image)])
        sha = image.sha256
        assert sha is not None
        assert sha not in (await fsck(store)).unreferenced
        await store.pop(conv.id)
        assert sha in (await fsck(store)).unreferenced


class TestFork:
    async def test_a_fork_shares_blobs_and_keeps_message_ids(
        self, store: ConversationStore, blobs_url: str
    ) -> None:
        conv = await store.create_conversation(title="trip", metadata={"app": "x"})
        await store.update_state(conv.id, {"step": 2})
        chart = ContentOutput(parts=[TextPart(text="chart"), FilePart.from_bytes(CHART)])
        await store.append(
            conv.id,
            [
                Message.user("see", FilePart.from_bytes(PNG), id="u1"),
                calling("k", mid="a1"),
                Message.tool_result("k", chart, id="t1"),
                Message.user("more", id="u2"),
                Message.assistant("done", id="a2"),
            ],
        )
        source_before = await snapshot(store, conv.id)
        blobs_before = blob_keys(blobs_url)
        assert len(blobs_before) == 2

        fork = await store.fork(conv.id, at_seq=3)
        assert fork.id != conv.id
        assert blob_keys(blobs_url) == blobs_before  # nothing copied
        forked = await store.load(fork.id)
        source = await store.load(conv.id)
        assert [(m.seq, m.parent_seq, m.id) for m in forked.messages] == [
            (1, None, "u1"), (2, 1, "a1"), (3, 2, "t1"),
        ]  # fmt: skip
        assert {m.conversation_id for m in forked.messages} == {fork.id}
        assert [m.parts for m in forked.messages] == [m.parts for m in source.messages[:3]]
        image = forked.messages[0].files[0]
        assert image.attachment is not None
        assert image.attachment == source.messages[0].files[0].attachment
        assert await store.read_attachment(image) == PNG
        assert forked.get_tool_call("k").status == "complete"
        assert forked.get_tool_call("k").output == source.get_tool_call("k").output
        assert (forked.title, forked.metadata, forked.state) == ("trip", {"app": "x"}, {"step": 2})
        assert forked.head_seq == 3
        assert await branch_list(store, fork.id) == [(3, True)]
        assert (await store.get_message("u1", conversation_id=fork.id)).seq == 1

        # The two evolve independently.
        await store.append(fork.id, Message.user("fork only", id="u2"))  # u2 is free in the fork
        await store.pop(fork.id)
        await store.pop(fork.id)  # the fork's result: its call reopens there only
        assert await statuses(store, fork.id) == {"k": "pending"}
        await store.update_state(fork.id, {"step": None})
        after = await snapshot(store, conv.id)
        assert {k: v for k, v in after.items() if k != "revision"} == {
            k: v for k, v in source_before.items() if k != "revision"
        }
        assert (await store.load(fork.id)).state == {}

    async def test_a_fork_takes_the_lifecycles_of_its_path(self, store: ConversationStore) -> None:
        conv = await store.create_conversation(title="source")
        await store.append(
            conv.id, [calling("k", "c"), Message.tool_result("k", 1), Message.user("next")]
        )
        await store.cancel_tool_calls(conv.id)  # nothing pending: c is interrupted
        fork = await store.fork(conv.id, at_seq=1, title="copy")
        forked = await store.load(fork.id)
        assert forked.title == "copy"
        assert {c.id: c.status for c in forked.tool_calls} == {"k": "pending", "c": "pending"}
        assert await statuses(store, conv.id) == {"k": "complete", "c": "interrupted"}

    async def test_a_fork_keeps_cancellations_on_its_path(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("k")])
        assert await store.cancel_tool_calls(conv.id) == ["k"]
        fork = await store.fork(conv.id, at_seq=2)
        assert await statuses(store, fork.id) == {"k": "cancelled"}

    async def test_cancel_in_a_fork_lists_the_calls_in_call_order(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), calling("zeta", "alpha", "mid")])
        fork = await store.fork(conv.id, at_seq=2)
        assert [c.id for c in (await store.load(fork.id)).tool_calls] == ["zeta", "alpha", "mid"]
        assert await store.cancel_tool_calls(fork.id) == ["zeta", "alpha", "mid"]
        assert await store.cancel_tool_calls(conv.id) == ["zeta", "alpha", "mid"]

    async def test_a_fork_of_a_branchy_conversation_is_linear(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("1"), Message.user("2"), Message.user("3")])
        await store.append(conv.id, [Message.user("4"), Message.user("5")], parent_seq=2)
        fork = await store.fork(conv.id, at_seq=4)
        assert await path_of(store, fork.id) == [(1, None), (2, 1), (4, 2)]
        assert await branch_list(store, fork.id) == [(4, True)]
        (next_,) = await store.append(fork.id, Message.user("6"))
        assert next_.seq is not None and next_.seq > 4

    async def test_a_fork_stays_in_its_tenant(self, store: ConversationStore) -> None:
        tenant = f"t-{uuid.uuid4()}"
        conv = await store.create_conversation(tenant=tenant)
        await store.append(conv.id, Message.user("q"), tenant=tenant)
        with pytest.raises(ConversationNotFoundError):
            await store.fork(conv.id, at_seq=1, tenant="someone-else")
        fork = await store.fork(conv.id, at_seq=1, tenant=tenant)
        assert (await store.load(fork.id, tenant=tenant)).tenant == tenant
        assert {c.id for c in await store.list_conversations(tenant=tenant)} == {conv.id, fork.id}

    @pytest.mark.parametrize("where", ["beyond the end", "off the active path", "zero"])
    async def test_a_bad_fork_point_writes_nothing(
        self, store: ConversationStore, where: str
    ) -> None:
        tenant = f"t-{uuid.uuid4()}"
        conv = await store.create_conversation(tenant=tenant)
        await store.append(conv.id, [Message.user("1"), Message.user("2")])
        await store.append(conv.id, Message.user("3"), parent_seq=1)
        at_seq = {"beyond the end": 4, "off the active path": 2, "zero": 0}[where]
        before = await snapshot(store, conv.id)
        with pytest.raises(InvalidInputError):
            await store.fork(conv.id, at_seq=at_seq)
        assert await snapshot(store, conv.id) == before
        assert [c.id for c in await store.list_conversations(tenant=tenant)] == [conv.id]

    async def test_forking_an_unknown_conversation(self, store: ConversationStore) -> None:
        with pytest.raises(ConversationNotFoundError):
            await store.fork(f"missing-{uuid.uuid4()}", at_seq=1)


class TestBadInputWritesNothing:
    """Issue 11, acceptance 5: a `ConvstoreError`, and the conversation exactly as before."""

    async def test_unknown_parent(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("a"), Message.user("b")])
        await store.pop(conv.id)  # seq 2 is gone for good
        before = await snapshot(store, conv.id)
        for parent in (0, 2, 99):
            with pytest.raises(InvalidInputError):
                await store.append(conv.id, Message.user("x"), parent_seq=parent)
        assert await snapshot(store, conv.id) == before

    async def test_pop_on_an_empty_conversation(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        before = await snapshot(store, conv.id)
        with pytest.raises(InvalidInputError):
            await store.pop(conv.id)
        assert await snapshot(store, conv.id) == before
        await store.append(conv.id, Message.user("a"))
        await store.truncate(conv.id, after_seq=0)
        before = await snapshot(store, conv.id)
        with pytest.raises(InvalidInputError):
            await store.pop(conv.id)
        assert await snapshot(store, conv.id) == before

    async def test_switch_to_an_unknown_message(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("a"))
        before = await snapshot(store, conv.id)
        for seq in (0, 2):
            with pytest.raises(InvalidInputError):
                await store.switch_branch(conv.id, head_seq=seq)
        assert await snapshot(store, conv.id) == before

    async def test_truncate_off_the_active_path(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("1"), Message.user("2")])
        await store.append(conv.id, Message.user("3"), parent_seq=1)
        before = await snapshot(store, conv.id)
        for seq in (2, 4):
            with pytest.raises(InvalidInputError):
                await store.truncate(conv.id, after_seq=seq)
        assert await snapshot(store, conv.id) == before

    async def test_every_refusal_is_a_convstore_error(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        for action in (
            store.pop(conv.id),
            store.append(conv.id, Message.user("x"), parent_seq=5),
            store.fork(conv.id, at_seq=1),
            store.switch_branch(conv.id, head_seq=1),
            store.truncate(conv.id, after_seq=3),
            store.update_state(conv.id, ["not", "an", "object"]),  # type: ignore[arg-type]
        ):
            with pytest.raises(ConvstoreError):
                await action
        assert (await store.load(conv.id)).messages == []
