"""`convstore.search_tool`: the store's search as a tool an agent may call."""

from __future__ import annotations

import inspect
import json
import uuid

from convstore import SEARCH_TOOL_PARAMETERS, ConversationStore, Message, search_tool


async def test_the_tool_searches_only_its_tenant(store: ConversationStore) -> None:
    mine, theirs = f"t-{uuid.uuid4().hex}", f"t-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=mine, title="Packing list")
    await store.append(conv.id, [Message.user("pack the tent"), Message.assistant("tent packed")],
                       tenant=mine)  # fmt: skip
    other = await store.create_conversation(tenant=theirs)
    await store.append(other.id, Message.user("their tent"), tenant=theirs)

    tool = search_tool(store, tenant=mine)
    hits = await tool("tent")
    assert isinstance(hits, list)
    assert {h["conversation_id"] for h in hits} == {conv.id}
    assert sorted(h["seq"] or 0 for h in hits) == [1, 2]
    json.dumps(hits)  # JSON-ready as returned
    assert await tool("tent", conversation_id=other.id) == []  # another tenant's: nothing
    assert [h["role"] for h in await tool("tent", roles=["user"])] == ["user"]
    assert len(await tool("tent", limit=1000)) == 2  # clamped, not refused
    refused = await tool("tent", roles=["wizard"])
    assert isinstance(refused, str) and refused.startswith("search refused")


def test_the_schema_describes_the_signature() -> None:
    params = inspect.signature(search_tool(None)).parameters  # type: ignore[arg-type]
    assert list(params) == list(SEARCH_TOOL_PARAMETERS["properties"])
    for name, param in params.items():
        schema = SEARCH_TOOL_PARAMETERS["properties"][name]
        if param.default is inspect.Parameter.empty:
            assert name in SEARCH_TOOL_PARAMETERS["required"]
        else:
            assert schema["default"] == param.default


async def test_arguments_it_cannot_search_with_are_refused_not_raised(
    store: ConversationStore,
) -> None:
    tenant = f"t-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    await store.append(conv.id, Message.user("pack the tent"), tenant=tenant)
    tool = search_tool(store, tenant=tenant)
    cases = {
        "lone surrogate": {"query": "tent \ud800"},
        "query not text": {"query": 5},
        "conversation id with a surrogate": {"query": "tent", "conversation_id": "\udfff"},
        "limit not a number": {"query": "tent", "limit": "abc"},
        "limit null": {"query": "tent", "limit": None},
        "limit infinite": {"query": "tent", "limit": float("inf")},
        "limit not a number (nan)": {"query": "tent", "limit": float("nan")},
        "limit a bool": {"query": "tent", "limit": True},
        "limit fractional": {"query": "tent", "limit": 2.5},
        "unknown role": {"query": "tent", "roles": ["wizard"]},
    }
    for case, arguments in cases.items():
        result = await tool(**arguments)
        assert isinstance(result, str), case
        assert result.startswith("search refused: "), (case, result)
    assert "limit must be a whole number from 1 to 50, not 'abc'" in await tool("t", limit="abc")
    assert len(await tool("tent", limit=3.0)) == 1  # a whole number, as JSON may spell it
