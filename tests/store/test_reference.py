"""The reference model alone: it must say what the v2 semantics say before it judges a store."""

from __future__ import annotations

from typing import Any

import pytest

from convstore import (
    ErrorOutput,
    InvalidInputError,
    InvalidMessageError,
    JsonOutput,
    Message,
    MessageNotFoundError,
    RevisionConflictError,
    ThinkingPart,
    ToolCallConflictError,
    ToolCallNotFoundError,
    ToolCallPart,
)
from tests.store.reference import ModelError, ReferenceStore, merge_patch


def calling(*ids: str, mid: str | None = None) -> Message:
    return Message.assistant(*(ToolCallPart(id=i, name="t") for i in ids), id=mid)


def statuses(ref: ReferenceStore, cid: str) -> dict[str, str]:
    return {c["id"]: c["status"] for c in ref.load(cid).tool_calls}


def seqs(ref: ReferenceStore, cid: str) -> list[int]:
    return [m["seq"] for m in ref.load(cid).messages]


@pytest.fixture
def ref() -> ReferenceStore:
    model = ReferenceStore()
    model.get_or_create("c")
    return model


class TestMergePatch:
    @pytest.mark.parametrize(
        ("target", "patch", "merged"),
        [
            ({"x": 1}, {"x": 2}, {"x": 2}),
            ({"x": 1}, {"y": [1]}, {"x": 1, "y": [1]}),
            ({"x": 1, "y": 2}, {"x": None}, {"y": 2}),
            ({"x": {"p": 1, "q": 2}}, {"x": {"q": None, "r": 3}}, {"x": {"p": 1, "r": 3}}),
            ({"x": [1, 2]}, {"x": [3]}, {"x": [3]}),
            ({"x": "s"}, {"x": {"n": None, "m": 1}}, {"x": {"m": 1}}),
            ({"x": {"deep": 1}}, {"x": 5}, {"x": 5}),
            ({}, {"gone": None}, {}),
            ({"x": 1}, {}, {"x": 1}),
            ({"x": 1}, ["replace"], ["replace"]),
        ],
    )
    def test_rfc7396(self, target: object, patch: object, merged: object) -> None:
        assert merge_patch(target, patch) == merged  # type: ignore[arg-type]

    def test_does_not_alias_the_patch(self) -> None:
        patch: dict[str, object] = {"x": {"y": [1]}}
        merged: Any = merge_patch({}, patch)  # type: ignore[arg-type]
        merged["x"]["y"].append(2)
        assert patch == {"x": {"y": [1]}}

    def test_update_state_refuses_a_non_object_and_changes_nothing(
        self, ref: ReferenceStore
    ) -> None:
        ref.update_state("c", {"a": 1})
        for bad in ([1], 3, "x", None):
            with pytest.raises(ModelError) as info:
                ref.update_state("c", bad)
            assert info.value.kinds == (InvalidInputError,)
        assert ref.conv("c").state == {"a": 1} and ref.conv("c").revision == 1


class TestTree:
    def test_plain_appends_chain_after_the_head(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("a"), Message.assistant("b")])
        stored = ref.append("c", [Message.user("c")])
        assert [(m.seq, m.parent_seq) for m in stored] == [(3, 2)]
        assert [(m["seq"], m["parent_seq"]) for m in ref.load("c").messages] == [
            (1, None), (2, 1), (3, 2),
        ]  # fmt: skip
        assert ref.load("c").messages[0]["conversation_id"] == "c"

    def test_edit_and_regenerate_keeps_the_old_branch(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("q"), Message.assistant("a1")])
        ref.append("c", [Message.assistant("a2")], parent_seq=1)
        assert seqs(ref, "c") == [1, 3]
        assert ref.branches("c") == [(2, False), (3, True)]
        ref.switch_branch("c", head_seq=2)
        assert seqs(ref, "c") == [1, 2]
        ref.switch_branch("c", head_seq=1)  # an interior head is listed as the active branch
        assert ref.branches("c") == [(1, True), (2, False), (3, False)]

    def test_pop_deletes_a_leaf_and_seqs_are_never_reused(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("a"), Message.user("b")])
        popped = ref.pop("c")
        assert (popped.seq, popped.parent_seq) == (2, 1)
        assert ref.branches("c") == [(1, True)]
        assert [m.seq for m in ref.append("c", [Message.user("c")])] == [3]

    def test_pop_of_a_message_with_children_only_moves_the_head(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("a"), Message.user("b")])
        ref.append("c", [Message.user("c")], parent_seq=1)
        ref.switch_branch("c", head_seq=2)
        ref.pop("c")
        ref.pop("c")  # seq 1 has children: kept
        assert ref.conv("c").head is None and sorted(ref.conv("c").nodes) == [1, 3]
        assert ref.branches("c") == [(3, False)]
        with pytest.raises(ModelError) as info:
            ref.pop("c")
        assert info.value.kinds == (InvalidInputError,)

    def test_truncate_and_its_bounds(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user(str(i)) for i in range(4)])
        ref.append("c", [Message.user("side")], parent_seq=2)
        for off_path in (3, 4, 99):
            with pytest.raises(ModelError):
                ref.truncate("c", after_seq=off_path)
        ref.truncate("c", after_seq=1)
        assert seqs(ref, "c") == [1]
        assert sorted(ref.conv("c").nodes) == [1, 2, 3, 4]  # 2 still has children
        ref.truncate("c", after_seq=0)
        assert seqs(ref, "c") == [] and ref.conv("c").head is None

    def test_unknown_parent(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("a")])
        for parent in (0, 2):
            with pytest.raises(ModelError) as info:
                ref.append("c", [Message.user("b")], parent_seq=parent)
            assert info.value.kinds == (InvalidInputError,)
        assert ref.conv("c").revision == 1

    def test_fork_copies_the_path_and_lets_the_store_choose_the_next_seq(
        self, ref: ReferenceStore
    ) -> None:
        ref.append("c", [Message.user("a", id="m1"), calling("k1"), Message.user("b")])
        ref.update_state("c", {"s": 1})
        ref.fork("c", at_seq=2, new_id="f", title="copy")
        fork = ref.load("f")
        assert [(m["seq"], m["id"], m["conversation_id"]) for m in fork.messages] == [
            (1, "m1", "f"), (2, None, "f"),
        ]  # fmt: skip
        assert statuses(ref, "f") == {"k1": "pending"}
        assert statuses(ref, "c") == {"k1": "interrupted"}
        assert (fork.title, fork.state) == ("copy", {"s": 1})
        with pytest.raises(AssertionError):
            ref.append("f", [Message.user("x")], first_seq=2)
        assert [m.seq for m in ref.append("f", [Message.user("x")], first_seq=4)] == [4]
        with pytest.raises(ModelError):
            ref.fork("c", at_seq=4, new_id="g")


class TestLifecycles:
    def test_result_on_one_branch_does_not_answer_another(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k")])
        ref.append("c", [Message.tool_result("k", 1)])
        ref.append("c", [Message.tool_result("k", 2)], parent_seq=1)  # no conflict there
        assert ref.load("c").tool_calls[0]["output"] == {"kind": "json", "value": 2}
        ref.switch_branch("c", head_seq=2)
        assert ref.load("c").tool_calls[0]["output"] == {"kind": "json", "value": 1}
        ref.switch_branch("c", head_seq=1)
        assert statuses(ref, "c") == {"k": "pending"}

    def test_pop_of_a_result_reopens_and_pop_of_the_call_removes(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k"), Message.tool_result("k", 1)])
        ref.pop("c")
        assert statuses(ref, "c") == {"k": "pending"}
        ref.pop("c")
        assert statuses(ref, "c") == {}
        ref.append("c", [calling("k")])  # the id went with its message

    def test_conflicts_duplicates_and_cancellation(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("a", "b", "x"), Message.tool_result("a", 1)])
        ref.append("c", [Message.tool_result("a", 1)])  # equal: history
        with pytest.raises(ModelError) as info:
            ref.append("c", [Message.tool_result("a", 2)])
        assert info.value.kinds == (ToolCallConflictError,)
        assert ref.cancel_tool_calls("c") == ["b", "x"]
        assert ref.cancel_tool_calls("c") == []
        with pytest.raises(ModelError):
            ref.complete_tool_call("c", "b", JsonOutput(value=1))
        with pytest.raises(ModelError) as info:
            ref.append("c", [calling("a")])
        assert info.value.kinds == (ToolCallConflictError,)
        assert statuses(ref, "c") == {"a": "complete", "b": "cancelled", "x": "cancelled"}

    def test_interrupted_then_late_completion(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k"), Message.user("never mind")])
        assert statuses(ref, "c") == {"k": "interrupted"}
        view = ref.complete_tool_call("c", "k", ErrorOutput(message="late"))
        assert (view.status, view.result_seq) == ("error", 3)
        revision = ref.conv("c").revision
        ref.complete_tool_call("c", "k", ErrorOutput(message="late"))  # equal: a no-op
        assert ref.conv("c").revision == revision
        with pytest.raises(ModelError) as info:
            ref.complete_tool_call("c", "nope", JsonOutput(value=1))
        assert info.value.kinds == (ToolCallNotFoundError,)

    def test_complete_needs_the_call_on_the_active_path(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("q")])
        ref.append("c", [calling("k")])
        ref.switch_branch("c", head_seq=1)
        with pytest.raises(ModelError) as info:
            ref.complete_tool_call("c", "k", JsonOutput(value=1))
        assert info.value.kinds == (ToolCallNotFoundError,)

    def test_window_keeps_the_calls_its_results_answer(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k", "j"), Message.user("u"), Message.tool_result("k", 1)])
        window = ref.load("c", last=1)
        assert [c["id"] for c in window.tool_calls] == ["k"]
        assert window.tool_calls[0]["status"] == "complete"
        assert [m["seq"] for m in ref.load("c", last=10).messages] == [1, 2, 3]
        assert ref.load("c", last=0).messages == []
        older = ref.load("c", last=1, before_seq=3)
        assert [m["seq"] for m in older.messages] == [2] and older.tool_calls == []


class TestIdsAndErrors:
    def test_duplicate_message_ids(self, ref: ReferenceStore) -> None:
        ref.append("c", [Message.user("a", id="m")])
        ref.append("c", [Message.user("b", id="side")], parent_seq=1)
        ref.switch_branch("c", head_seq=1)
        for batch in (
            [Message.user("x", id="m")],
            [Message.user("x", id="side")],  # on another branch: still stored
            [Message.user("x", id="n"), Message.user("y", id="n")],
        ):
            with pytest.raises(ModelError) as info:
                ref.append("c", batch)
            assert info.value.kinds == (InvalidMessageError,)
        assert ref.get_message("side", "c").seq == 2
        with pytest.raises(ModelError) as info:
            ref.get_message("none", "c")
        assert info.value.kinds == (MessageNotFoundError,)

    def test_every_broken_rule_is_acceptable(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k", mid="m")])
        with pytest.raises(ModelError) as info:
            ref.append("c", [calling("k", mid="m")], parent_seq=7, expected_revision=0)
        assert set(info.value.kinds) == {
            InvalidInputError, InvalidMessageError, ToolCallConflictError, RevisionConflictError,
        }  # fmt: skip
        assert ref.conv("c").revision == 1 and len(ref.conv("c").nodes) == 1

    def test_stale_revision_for_every_write(self, ref: ReferenceStore) -> None:
        ref.append("c", [calling("k"), Message.user("u")])
        stale: dict[str, Any] = {"expected_revision": 0}
        for write in (
            lambda: ref.append("c", [Message.user("x")], **stale),
            lambda: ref.pop("c", **stale),
            lambda: ref.truncate("c", after_seq=1, **stale),
            lambda: ref.switch_branch("c", head_seq=1, **stale),
            lambda: ref.complete_tool_call("c", "k", JsonOutput(value=1), **stale),
            lambda: ref.cancel_tool_calls("c", **stale),
            lambda: ref.update_state("c", {"a": 1}, **stale),
            lambda: ref.update_conversation("c", title="t", **stale),
        ):
            with pytest.raises(ModelError) as info:
                write()
            assert info.value.kinds == (RevisionConflictError,)
        assert ref.conv("c").revision == 1 and seqs(ref, "c") == [1, 2]

    def test_thinking_takes_its_messages_provenance(self, ref: ReferenceStore) -> None:
        message = Message.assistant(
            ThinkingPart(text="hm", signature="sig"),
            ThinkingPart(text="own", provider="openai", model="gpt-5"),
            "answer",
            provider="anthropic",
            model="claude-sonnet-4-5",
        )
        (stored,) = ref.append("c", [message])
        first, second, _ = stored.parts
        assert isinstance(first, ThinkingPart) and isinstance(second, ThinkingPart)
        assert (first.provider, first.model) == ("anthropic", "claude-sonnet-4-5")
        assert (second.provider, second.model) == ("openai", "gpt-5")

    def test_update_conversation_sentinels(self, ref: ReferenceStore) -> None:
        ref.update_conversation("c", title="t", metadata={"k": 1})
        ref.update_conversation("c", metadata={"j": 2})
        assert (ref.conv("c").title, ref.conv("c").metadata) == ("t", {"j": 2})
        ref.update_conversation("c", title=None)
        assert (ref.conv("c").title, ref.conv("c").metadata) == (None, {"j": 2})
        assert ref.conv("c").revision == 3
