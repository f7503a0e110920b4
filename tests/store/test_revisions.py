"""Revisions, state and conversation headers through the public API, on every database.

Every write changes `Conversation.revision` to a value never seen before for that conversation;
reads and refused writes leave it alone. A stale ``expected_revision`` raises
`RevisionConflictError` and writes nothing, for every write method. `update_state` is an RFC 7396
merge patch; `update_conversation` changes only what it is given; `get_or_create_conversation`
is race-free.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from convstore import (
    AppendResult,
    ConflictError,
    ConversationNotFoundError,
    ConversationStore,
    ConvstoreError,
    InvalidInputError,
    JsonOutput,
    Message,
    RevisionConflictError,
    ToolCallPart,
)
from tests.store.snapshots import snapshot

Write = Callable[[ConversationStore, str, str | None], Awaitable[object]]

# Each write method, called so that it succeeds on the conversation `seeded` builds.
WRITES: dict[str, Write] = {
    "append": lambda s, c, r: s.append(c, Message.user("more"), expected_revision=r),
    "append under a parent": lambda s, c, r: s.append(
        c, Message.user("edit"), parent_seq=1, expected_revision=r
    ),
    "complete_tool_call": lambda s, c, r: s.complete_tool_call(
        c, "k", JsonOutput(value=1), expected_revision=r
    ),
    "cancel_tool_calls": lambda s, c, r: s.cancel_tool_calls(c, expected_revision=r),
    "compact": lambda s, c, r: s.compact(c, through_seq=1, summary="s", expected_revision=r),
    "pop": lambda s, c, r: s.pop(c, expected_revision=r),
    "truncate": lambda s, c, r: s.truncate(c, after_seq=1, expected_revision=r),
    "switch_branch": lambda s, c, r: s.switch_branch(c, head_seq=1, expected_revision=r),
    "update_conversation": lambda s, c, r: s.update_conversation(
        c, title="renamed", expected_revision=r
    ),
    "update_state": lambda s, c, r: s.update_state(c, {"x": 1}, expected_revision=r),
}


async def seeded(store: ConversationStore) -> str:
    """A conversation with a user turn and a pending call: every write in WRITES applies."""
    conv = await store.create_conversation(title="t")
    await store.append(
        conv.id,
        [Message.user("q"), Message.assistant(ToolCallPart(id="k", name="lookup"))],
    )
    return conv.id


async def revision(store: ConversationStore, cid: str) -> str:
    return (await store.load(cid)).revision


class TestRevisions:
    @pytest.mark.parametrize("method", list(WRITES))
    async def test_a_stale_revision_writes_nothing(
        self, store: ConversationStore, method: str
    ) -> None:
        cid = await seeded(store)
        stale = await revision(store, cid)
        await store.update_state(cid, {"moved": "on"})
        before = await snapshot(store, cid)
        assert before["revision"] != stale
        with pytest.raises(RevisionConflictError) as info:
            await WRITES[method](store, cid, stale)
        assert isinstance(info.value, ConflictError)
        assert await snapshot(store, cid) == before

    @pytest.mark.parametrize("method", list(WRITES))
    async def test_the_current_revision_is_accepted_and_replaced(
        self, store: ConversationStore, method: str
    ) -> None:
        cid = await seeded(store)
        current = await revision(store, cid)
        await WRITES[method](store, cid, current)
        assert await revision(store, cid) != current

    async def test_every_write_gives_a_new_revision(self, store: ConversationStore) -> None:
        cid = await seeded(store)
        seen = [await revision(store, cid)]
        for write in WRITES.values():
            # Unconditional writes (expected_revision=None) change it just the same; the
            # conversation is re-seeded where a write used up what the next one needs.
            try:
                await write(store, cid, None)
            except ConvstoreError:
                cid = await seeded(store)
                seen = [await revision(store, cid)]
                await write(store, cid, None)
            now = await revision(store, cid)
            assert now not in seen
            seen.append(now)

    async def test_even_a_write_that_changes_nothing_else_is_a_write(
        self, store: ConversationStore
    ) -> None:
        cid = await seeded(store)
        await store.append(cid, Message.tool_result("k", 1))
        before = await revision(store, cid)
        assert await store.cancel_tool_calls(cid) == []
        after_cancel = await revision(store, cid)
        await store.switch_branch(cid, head_seq=3)  # the head already
        assert len({before, after_cancel, await revision(store, cid)}) == 3

    async def test_reads_and_refusals_leave_it(self, store: ConversationStore) -> None:
        cid = await seeded(store)
        current = await revision(store, cid)
        await store.load(cid, last=1)
        await store.branches(cid)
        await store.list_conversations()
        await store.get_or_create_conversation(cid, title="ignored")
        for refused in (
            store.append(cid, Message.user("x"), parent_seq=42),
            store.complete_tool_call(cid, "nope", JsonOutput(value=1)),
            store.update_state(cid, [1]),  # type: ignore[arg-type]
            store.switch_branch(cid, head_seq=42),
        ):
            with pytest.raises(ConvstoreError):
                await refused
        # An equal repeat of a completion stores nothing.
        await store.complete_tool_call(cid, "k", JsonOutput(value="done"))
        done = await revision(store, cid)
        assert done != current
        await store.complete_tool_call(cid, "k", JsonOutput(value="done"))
        assert await revision(store, cid) == done

    async def test_the_returned_header_carries_the_new_revision(
        self, store: ConversationStore
    ) -> None:
        cid = await seeded(store)
        updated = await store.update_state(cid, {"a": 1})
        assert updated.revision == await revision(store, cid)
        renamed = await store.update_conversation(cid, title="new")
        assert renamed.revision == await revision(store, cid) != updated.revision
        (summary,) = [c for c in await store.list_conversations(limit=1000) if c.id == cid]
        assert summary.revision == renamed.revision

    async def test_append_returns_the_new_revision(self, store: ConversationStore) -> None:
        cid = await seeded(store)
        before = await revision(store, cid)
        stored = await store.append(cid, Message.tool_result("k", {"temp": 21}))
        assert isinstance(stored, AppendResult) and isinstance(stored, list)
        assert [m.seq for m in stored] == [3]
        assert stored.revision == await revision(store, cid) != before
        # It is the token the next conditional write needs, without a reload ...
        turn = [Message.user("and tomorrow?"), Message.assistant("rain")]
        following = await store.append(cid, turn, expected_revision=stored.revision)
        assert following.revision == await revision(store, cid) != stored.revision
        branched = await store.append(
            cid, Message.user("edit"), parent_seq=4, expected_revision=following.revision
        )
        assert branched.revision == await revision(store, cid)
        # ... and a stale one is refused, as any other.
        with pytest.raises(RevisionConflictError):
            await store.append(cid, Message.user("late"), expected_revision=stored.revision)

    async def test_append_that_writes_nothing_returns_the_current_revision(
        self, store: ConversationStore
    ) -> None:
        cid = await seeded(store)
        current = await revision(store, cid)
        empty = await store.append(cid, [])
        assert empty == [] and empty.revision == current
        first = await store.append(cid, Message.user("once"), idempotency_key="turn-7")
        replay = await store.append(cid, Message.user("once"), idempotency_key="turn-7")
        assert replay == first and replay.revision == first.revision == await revision(store, cid)
        with pytest.raises(ConversationNotFoundError):
            await store.append(cid, [], tenant="someone-else")

    async def test_concurrent_writers_with_one_revision_one_wins(
        self, store: ConversationStore
    ) -> None:
        cid = await seeded(store)
        current = await revision(store, cid)
        outcomes = await asyncio.gather(
            *(
                store.update_state(cid, {f"writer{i}": i}, expected_revision=current)
                for i in range(8)
            ),
            return_exceptions=True,
        )
        won = [o for o in outcomes if not isinstance(o, BaseException)]
        lost = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(won) == 1
        assert all(isinstance(e, RevisionConflictError) for e in lost)
        assert len((await store.load(cid)).state) == 1


class TestState:
    async def test_a_new_conversation_has_an_empty_state(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        assert conv.state == {}
        assert (await store.load(conv.id)).state == {}

    async def test_merge_patch(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        steps: list[tuple[dict[str, Any], dict[str, Any]]] = [
            ({"user": {"name": "Ann", "tags": ["a"]}, "n": 1}, {}),
            ({"user": {"tags": ["b", "c"], "age": 3}}, {}),
            ({"n": None, "missing": None}, {}),
            ({"user": {"name": None}, "flag": False, "zero": 0, "text": ""}, {}),
            ({"user": "flat now"}, {}),
            ({"user": {"again": {"deep": None, "kept": [None]}}}, {}),
        ]
        expected: list[dict[str, Any]] = [
            {"user": {"name": "Ann", "tags": ["a"]}, "n": 1},
            {"user": {"name": "Ann", "tags": ["b", "c"], "age": 3}, "n": 1},
            {"user": {"name": "Ann", "tags": ["b", "c"], "age": 3}},
            {"user": {"tags": ["b", "c"], "age": 3}, "flag": False, "zero": 0, "text": ""},
            {"user": "flat now", "flag": False, "zero": 0, "text": ""},
            {"user": {"again": {"kept": [None]}}, "flag": False, "zero": 0, "text": ""},
        ]
        for (patch, _), state in zip(steps, expected, strict=True):
            header = await store.update_state(conv.id, patch)
            assert header.state == state
            assert header.messages == []
            assert (await store.load(conv.id)).state == state

    @pytest.mark.parametrize("patch", [[1, 2], "text", 3, 1.5, True, None, [{"a": 1}]])
    async def test_a_patch_that_is_not_an_object_writes_nothing(
        self, store: ConversationStore, patch: Any
    ) -> None:
        conv = await store.create_conversation()
        await store.update_state(conv.id, {"kept": 1})
        before = await snapshot(store, conv.id)
        with pytest.raises(InvalidInputError):
            await store.update_state(conv.id, patch)
        assert await snapshot(store, conv.id) == before

    async def test_unicode_and_numbers_round_trip(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        value = {"ключ": "värde ✓", "big": 2**53, "neg": -1, "f": 0.25, "e": [], "o": {}}
        await store.update_state(conv.id, value)
        assert (await store.load(conv.id)).state == value


class TestHeaders:
    async def test_update_conversation_changes_only_what_it_is_given(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation(title="first", metadata={"a": 1, "b": 2})
        renamed = await store.update_conversation(conv.id, title="second")
        assert (renamed.title, renamed.metadata, renamed.messages) == (
            "second", {"a": 1, "b": 2}, [],
        )  # fmt: skip
        replaced = await store.update_conversation(conv.id, metadata={"c": 3})
        assert (replaced.title, replaced.metadata) == ("second", {"c": 3})  # replaced whole
        cleared = await store.update_conversation(conv.id, title=None)
        assert (cleared.title, cleared.metadata) == (None, {"c": 3})
        loaded = await store.load(conv.id)
        assert (loaded.title, loaded.metadata) == (None, {"c": 3})

    async def test_get_or_create_returns_the_existing_one_unchanged(
        self, store: ConversationStore
    ) -> None:
        cid = f"app-{uuid.uuid4()}"
        made = await store.get_or_create_conversation(cid, title="a", metadata={"v": 1})
        assert (made.id, made.title, made.metadata, made.messages) == (cid, "a", {"v": 1}, [])
        await store.append(cid, Message.user("hello"))
        again = await store.get_or_create_conversation(cid, title="b", metadata={"v": 2})
        assert (again.id, again.title, again.metadata, again.messages) == (
            cid, "a", {"v": 1}, [],
        )  # fmt: skip
        assert again.revision == await revision(store, cid)
        assert [m.text for m in (await store.load(cid)).messages] == ["hello"]

    async def test_twenty_concurrent_get_or_create_give_one_conversation(
        self, store: ConversationStore, db_url: str, blobs_url: str
    ) -> None:
        cid = f"race-{uuid.uuid4()}"
        tenant = f"t-{uuid.uuid4()}"
        async with ConversationStore(db_url, blobs=blobs_url) as second:
            results = await asyncio.gather(
                *(
                    (store if i % 2 else second).get_or_create_conversation(
                        cid, title=f"title {i}", tenant=tenant
                    )
                    for i in range(20)
                )
            )
        assert {r.id for r in results} == {cid}
        assert len({r.created_at for r in results}) == 1
        assert len({r.title for r in results}) == 1  # the winner's title, whoever won
        assert len({r.revision for r in results}) == 1
        listed = await store.list_conversations(tenant=tenant)
        assert [c.id for c in listed] == [cid]
        await store.append(cid, Message.user("works"), tenant=tenant)
