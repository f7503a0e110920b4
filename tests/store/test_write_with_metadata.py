"""``append(..., metadata=)`` and ``switch_branch(..., metadata=)``: one transaction.

A framework that keeps its own record of a conversation in the conversation's metadata (the
pydantic-ai integration: revision, head entry, usage) stores that record with the messages or
the head move it describes: both, or neither.
"""

from __future__ import annotations

import uuid

import pytest

from convstore import (
    ConversationStore,
    InvalidInputError,
    Message,
    RevisionConflictError,
    ToolCallConflictError,
    ToolCallPart,
)


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def test_an_append_replaces_the_metadata_with_its_messages(store: ConversationStore) -> None:
    tag = _id("tag")
    conv = await store.create_conversation(metadata={"old": True, "kind": "x"})
    stored = await store.append(
        conv.id,
        [Message.user("hi"), Message.assistant("hello")],
        expected_revision=conv.revision,
        metadata={"record": {"head": "m2", "n": [1, 2]}, "kind": tag},
    )
    after = await store.load(conv.id)
    assert [m.text for m in after.messages] == ["hi", "hello"]
    assert after.metadata == {"record": {"head": "m2", "n": [1, 2]}, "kind": tag}
    assert stored.revision == after.revision != conv.revision
    # The metadata index follows: listing by the new value finds it, by the old one does not.
    assert [c.id for c in await store.list_conversations(metadata={"kind": tag})] == [conv.id]
    assert conv.id not in [c.id for c in await store.list_conversations(metadata={"kind": "x"})]
    # The lean path is still taken when no metadata is given, and leaves the metadata alone.
    again = await store.append(conv.id, Message.user("more"))
    assert (await store.load(conv.id, last=0)).metadata == after.metadata
    assert again.revision == (await store.load(conv.id, last=0)).revision


async def test_a_refused_append_leaves_the_metadata_as_it_was(store: ConversationStore) -> None:
    conv = await store.create_conversation(metadata={"record": 1})
    first = await store.append(
        conv.id,
        [
            Message.assistant(ToolCallPart(id="c1", name="lookup", arguments={})),
            Message.tool_result("c1", {"a": 1}),
        ],
    )
    before = await store.load(conv.id)
    with pytest.raises(ToolCallConflictError):
        await store.append(conv.id, Message.tool_result("c1", {"a": 2}), metadata={"record": 2})
    with pytest.raises(RevisionConflictError):
        await store.append(
            conv.id, Message.user("x"), expected_revision=conv.revision, metadata={"record": 3}
        )
    assert await store.load(conv.id) == before
    assert before.revision == first.revision and before.metadata == {"record": 1}


async def test_a_branch_switch_replaces_the_metadata_with_the_head(
    store: ConversationStore,
) -> None:
    conv = await store.create_conversation()
    stored = await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
    await store.switch_branch(conv.id, head_seq=stored[0].seq, metadata={"head": "a"})
    after = await store.load(conv.id)
    assert [m.text for m in after.messages] == ["a"] and after.metadata == {"head": "a"}
    with pytest.raises(InvalidInputError):  # not a message: nothing moves, nothing is replaced
        await store.switch_branch(conv.id, head_seq=99, metadata={"head": "?"})
    assert await store.load(conv.id) == after


async def test_bad_metadata_is_refused_before_anything_is_written(
    store: ConversationStore,
) -> None:
    conv = await store.create_conversation()
    with pytest.raises(InvalidInputError, match="nan is not a JSON number"):
        await store.append(conv.id, Message.user("x"), metadata={"a": float("nan")})
    with pytest.raises(InvalidInputError, match="applied with an append of messages"):
        await store.append(conv.id, [], metadata={"a": 1})
    assert (await store.load(conv.id)).messages == []
