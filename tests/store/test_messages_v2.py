"""Message ids, `get_message`, native records, usage and thinking provenance, on every database.

`Message.id` is the application's own id: kept exactly, unique within a conversation across all
branches (a duplicate in a batch or against a stored message raises `InvalidMessageError` and
writes nothing), found by `get_message` within a conversation or across a tenant's, never
across tenants. `native` and `usage` come back exactly as appended (JSON equality). A
`ThinkingPart` without its own provider/model takes its message's.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    InvalidMessageError,
    JsonOutput,
    Message,
    MessageNotFoundError,
    NativeRecord,
    ThinkingPart,
    ToolCallPart,
    Usage,
)
from tests.store.snapshots import snapshot


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class TestMessageIds:
    async def test_ids_are_kept_exactly(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        ids = ["msg_01HZX", "ui-Ünïcødé ✓", "a" * 255, "with space and / slash", "0"]
        await store.append(conv.id, [Message.user(str(i), id=mid) for i, mid in enumerate(ids)])
        await store.append(conv.id, Message.user("no id"))
        loaded = await store.load(conv.id)
        assert [m.id for m in loaded.messages] == [*ids, None]

    @pytest.mark.parametrize("where", ["within the batch", "stored", "stored on another branch"])
    async def test_a_duplicate_id_writes_nothing(
        self, store: ConversationStore, where: str
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q", id="u1"), Message.assistant("a", id="a1")])
        await store.append(conv.id, Message.assistant("other", id="side"), parent_seq=1)
        await store.switch_branch(conv.id, head_seq=2)
        batch = {
            "within the batch": [Message.user("x", id="n"), Message.user("y", id="n")],
            "stored": [Message.user("x", id="fresh"), Message.user("y", id="a1")],
            "stored on another branch": [Message.user("x", id="side")],
        }[where]
        before = await snapshot(store, conv.id)
        with pytest.raises(InvalidMessageError):
            await store.append(conv.id, batch)
        assert await snapshot(store, conv.id) == before
        with pytest.raises(MessageNotFoundError):
            await store.get_message("fresh", conversation_id=conv.id)

    async def test_the_same_id_in_two_conversations_is_fine(self, store: ConversationStore) -> None:
        first = await store.create_conversation()
        second = await store.create_conversation()
        await store.append(first.id, Message.user("one", id="shared"))
        await store.append(second.id, Message.user("two", id="shared"))
        found = await store.get_message("shared", conversation_id=second.id)
        assert (found.text, found.conversation_id) == ("two", second.id)

    async def test_a_popped_message_is_not_found(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q"), Message.assistant("a", id="gone")])
        await store.pop(conv.id)
        with pytest.raises(MessageNotFoundError):
            await store.get_message("gone", conversation_id=conv.id)


class TestGetMessage:
    async def test_within_a_conversation(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user("q", id="u1"), Message.assistant("a", id="a1")])
        await store.append(conv.id, Message.assistant("regenerated", id="a2"), parent_seq=1)
        found = await store.get_message("a1", conversation_id=conv.id)  # off the active path
        assert (found.seq, found.parent_seq, found.conversation_id, found.text) == (
            2, 1, conv.id, "a",
        )  # fmt: skip
        assert found.created_at is not None
        root = await store.get_message("u1", conversation_id=conv.id)
        assert (root.seq, root.parent_seq) == (1, None)
        loaded = await store.load(conv.id)
        assert await store.get_message("a2", conversation_id=conv.id) == loaded.messages[-1]
        with pytest.raises(MessageNotFoundError):
            await store.get_message("nope", conversation_id=conv.id)

    async def test_across_a_tenants_conversations_and_not_across_tenants(
        self, store: ConversationStore
    ) -> None:
        mine, theirs = f"t-{uuid.uuid4()}", f"t-{uuid.uuid4()}"
        mid = f"m-{uuid.uuid4()}"
        other_mid = f"m-{uuid.uuid4()}"
        a = await store.create_conversation(tenant=mine)
        b = await store.create_conversation(tenant=mine)
        c = await store.create_conversation(tenant=theirs)
        await store.append(a.id, Message.user("a"), tenant=mine)
        await store.append(b.id, [Message.user("b"), Message.user("b2", id=mid)], tenant=mine)
        await store.append(c.id, Message.user("c", id=other_mid), tenant=theirs)

        found = await store.get_message(mid, tenant=mine)
        assert (found.conversation_id, found.seq, found.text) == (b.id, 2, "b2")
        assert (await store.get_message(mid)).conversation_id == b.id  # no tenant: all of them
        with pytest.raises(MessageNotFoundError):
            await store.get_message(mid, tenant=theirs)
        with pytest.raises(MessageNotFoundError):
            await store.get_message(other_mid, tenant=mine)
        # Naming another tenant's conversation reveals nothing either.
        with pytest.raises((MessageNotFoundError, ConversationNotFoundError)):
            await store.get_message(other_mid, conversation_id=c.id, tenant=mine)

    async def test_the_newest_conversation_wins(self, store: ConversationStore) -> None:
        tenant = f"t-{uuid.uuid4()}"
        conv = await store.create_conversation(tenant=tenant)
        await store.append(conv.id, Message.user("q", id="shared"), tenant=tenant)
        fork = await store.fork(conv.id, at_seq=1, tenant=tenant)  # keeps the id, created later
        assert (await store.get_message("shared", tenant=tenant)).conversation_id == fork.id
        found = await store.get_message("shared", conversation_id=conv.id, tenant=tenant)
        assert found.conversation_id == conv.id


NATIVE_DATA: list[Any] = [
    {
        "type": "message",
        "id": "item_1",
        "content": [{"type": "output_text", "text": "hi ✓", "annotations": []}],
        "nested": {"null": None, "false": False, "zero": 0, "empty": {}, "list": [[], [{}]]},
        "numbers": [1, -2, 0.5, 1e-7, 2**53, 2**63 - 1, -(2**63), 3.141592653589793],
        "keys in order": {"z": 1, "a": 2, "m": 3},
        "unicode": "Ω≈ç√∫ 😀 \u2028",
    },
    ["a", "list", "root"],
    "a bare string",
    42,
    None,
]


class TestNativeAndUsage:
    @pytest.mark.parametrize("data", NATIVE_DATA, ids=["object", "list", "string", "int", "null"])
    async def test_native_records_round_trip_exactly(
        self, store: ConversationStore, data: Any
    ) -> None:
        conv = await store.create_conversation()
        native = NativeRecord(format="openai-agents", data=data)
        await store.append(conv.id, Message.user("hi", native=native, id="n1"))
        for message in (
            (await store.load(conv.id)).messages[0],
            await store.get_message("n1", conversation_id=conv.id),
        ):
            assert message.native is not None
            assert message.native.format == "openai-agents"
            assert as_json(message.native.data) == as_json(data)
        fork = await store.fork(conv.id, at_seq=1)
        forked = (await store.load(fork.id)).messages[0].native
        assert forked is not None and as_json(forked.data) == as_json(data)

    async def test_an_integer_json_cannot_hold_is_refused(self, store: ConversationStore) -> None:
        """Past 64 bits the databases' JSON would not give it back exactly: refused, not bent."""
        conv = await store.create_conversation()
        before = await snapshot(store, conv.id)
        native = NativeRecord(format="x", data={"n": 2**64})
        with pytest.raises(InvalidMessageError):
            await store.append(conv.id, [Message.user("ok"), Message.user("big", native=native)])
        assert await snapshot(store, conv.id) == before

    async def test_usage_round_trips(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        usage = Usage(input_tokens=1200, output_tokens=345, cached_tokens=1000, reasoning_tokens=7)
        huge = Usage(input_tokens=2**62, output_tokens=0)
        await store.append(
            conv.id,
            [
                Message.user("q"),
                Message.assistant("a", usage=usage),
                Message.assistant("b", usage=huge),
                Message.assistant(
                    ToolCallPart(id="k", name="t"),
                    usage=Usage(),
                    native=NativeRecord(format="x", data={"k": 1}),
                ),
                Message.tool_result("k", JsonOutput(value=1), usage=Usage(output_tokens=1)),
            ],
        )
        loaded = (await store.load(conv.id)).messages
        assert [m.usage for m in loaded] == [None, usage, huge, Usage(), Usage(output_tokens=1)]
        assert loaded[3].native == NativeRecord(format="x", data={"k": 1})
        assert loaded[0].native is None


class TestThinkingProvenance:
    async def test_thinking_without_provenance_takes_its_messages(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(
            conv.id,
            [
                Message.user("q"),
                Message.assistant(
                    ThinkingPart(text="let me think", signature="sig-abc"),
                    ThinkingPart(text="from elsewhere", provider="openai", model="gpt-5"),
                    "answer",
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                ),
                Message.assistant(ThinkingPart(text="no origin at all"), "plain"),
            ],
        )
        messages = (await store.load(conv.id)).messages
        inherited, own, _ = messages[1].parts
        assert isinstance(inherited, ThinkingPart) and isinstance(own, ThinkingPart)
        assert (inherited.provider, inherited.model, inherited.signature) == (
            "anthropic", "claude-sonnet-4-5", "sig-abc",
        )  # fmt: skip
        assert (own.provider, own.model) == ("openai", "gpt-5")
        orphan = messages[2].parts[0]
        assert isinstance(orphan, ThinkingPart)
        assert (orphan.provider, orphan.model) == (None, None)

    async def test_signed_thinking_renders_back_to_its_own_provider(
        self, store: ConversationStore
    ) -> None:
        """The bug the rule fixes: a signed block built without part provenance was dropped."""
        conv = await store.create_conversation()
        await store.append(
            conv.id,
            [
                Message.user("q"),
                Message.assistant(
                    ThinkingPart(text="step by step", signature="sig-abc"),
                    "answer",
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                ),
                Message.user("and?"),
            ],
        )
        rendered = await store.render(conv.id, "anthropic", model="claude-sonnet-4-5")
        assistant = rendered.payload["messages"][1]
        kinds = [block["type"] for block in assistant["content"]]
        assert "thinking" in kinds
        thinking = next(b for b in assistant["content"] if b["type"] == "thinking")
        assert thinking["signature"] == "sig-abc"
