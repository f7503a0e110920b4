"""Tool definitions kept with a conversation (metadata key ``convstore.tools``) and sent by
``store.render`` unless the caller passes its own."""

from __future__ import annotations

import pytest

from convstore import ConversationStore, InvalidInputError, Message, ToolDefinition
from convstore.store.conversations.tools import TOOLS_KEY, stored_tools, tools_metadata

TOOL = ToolDefinition(name="lookup", description="Find.", parameters={"type": "object"})


async def test_render_sends_the_stored_tools_by_default(store: ConversationStore) -> None:
    conversation = await store.create_conversation(metadata=tools_metadata([TOOL]))
    await store.append(conversation.id, Message.user("hi"))
    assert stored_tools(await store.load(conversation.id)) == [TOOL]
    rendered = await store.render(conversation.id, "anthropic")
    assert [t["name"] for t in rendered.payload["tools"]] == ["lookup"]
    other = ToolDefinition(name="other")
    explicit = await store.render(conversation.id, "anthropic", tools=[other])
    assert [t["name"] for t in explicit.payload["tools"]] == ["other"]
    assert "tools" not in (await store.render(conversation.id, "anthropic", tools=[])).payload


async def test_malformed_stored_tools_are_a_typed_error(store: ConversationStore) -> None:
    conversation = await store.create_conversation(metadata={TOOLS_KEY: [{"nope": 1}]})
    await store.append(conversation.id, Message.user("hi"))
    with pytest.raises(InvalidInputError, match=r"convstore\.tools"):
        await store.render(conversation.id, "openai-chat")


def test_no_tools_no_metadata() -> None:
    assert tools_metadata([]) == {}
