"""``append(..., state_patches=)``: messages and other conversations' state in one transaction.

Issue 20 point 11: a framework event that changes app- or user-scoped state (kept in
conversations of their own) is stored with that state, or not at all.
"""

from __future__ import annotations

import uuid

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    InvalidInputError,
    Message,
)


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def test_the_messages_and_the_patches_are_written_together(store: ConversationStore) -> None:
    tenant = _id("t")
    session = await store.create_conversation(id=_id("s"), tenant=tenant)
    app = await store.create_conversation(id=_id("app"), tenant=tenant)
    user = await store.create_conversation(id=_id("user"), tenant=tenant)
    await store.update_state(app.id, {"theme": "dark", "keep": 1})
    stored = await store.append(
        session.id,
        Message.user("hi"),
        state_patches={app.id: {"theme": "light"}, user.id: {"visits": [1]}},
    )
    assert [m.text for m in (await store.load(session.id)).messages] == ["hi"]
    app_after = await store.load(app.id, last=0)
    assert app_after.state == {"theme": "light", "keep": 1}
    user_after = await store.load(user.id, last=0)
    assert user_after.state == {"visits": [1]} and user_after.revision != user.revision
    assert stored.revision == (await store.load(session.id, last=0)).revision


@pytest.mark.parametrize("target", ["missing", "another tenant's"])
async def test_a_patch_that_cannot_apply_writes_nothing(
    store: ConversationStore, target: str
) -> None:
    tenant = _id("t")
    session = await store.create_conversation(id=_id("s"), tenant=tenant)
    await store.append(session.id, Message.user("first"))
    app = await store.create_conversation(id=_id("app"), tenant=tenant)
    other = (
        _id("gone")
        if target == "missing"
        else (await store.create_conversation(id=_id("x"), tenant=_id("t2"))).id
    )
    before = await store.load(session.id)
    with pytest.raises(ConversationNotFoundError):
        await store.append(
            session.id,
            Message.user("second"),
            state_patches={app.id: {"a": 1}, other: {"b": 2}},
        )
    assert await store.load(session.id) == before
    assert (await store.load(app.id, last=0)).state == {}


async def test_bad_state_patches_are_refused_before_anything_is_written(
    store: ConversationStore,
) -> None:
    session = await store.create_conversation()
    app = await store.create_conversation()
    cases: list[tuple[object, str]] = [
        ({session.id: {"a": 1}}, "use update_state"),
        ({app.id: {"a": float("nan")}}, "nan is not a JSON number"),
        ({app.id: [1]}, "a state patch is a JSON object"),
        ([app.id], "state_patches maps conversation ids"),
    ]
    for patches, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            await store.append(session.id, Message.user("x"), state_patches=patches)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="applied with an append of messages"):
        await store.append(session.id, [], state_patches={app.id: {"a": 1}})
    assert (await store.load(session.id)).messages == []
    assert (await store.load(app.id, last=0)).state == {}
