"""Bad input (issue 34, acceptance 4): unknown tools, wrong types, huge limits, unknown
arguments, lone surrogates. Each is a tool error saying ``refused: <why>``, and the server answers
the next call as if nothing happened. In process, through the same middleware the transports use.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from mcp import Client
from mcp_types import TextContent

from convstore import ConversationStore, Message
from convstore.mcp import create_server

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("delete_everything", {}, 'unknown tool "delete_everything"'),
    ("search_conversations", {}, "argument arguments: 'query' is a required property"),
    ("search_conversations", {"query": 5}, "argument query: 5 is not of type 'string'"),
    ("search_conversations", {"query": "x", "limit": "5"}, "argument limit: '5' is not of type"),
    ("search_conversations", {"query": "x", "limit": 10**12}, "greater than the maximum of 50"),
    ("search_conversations", {"query": "x", "limit": 0}, "less than the minimum of 1"),
    ("search_conversations", {"query": "x", "limit": True}, "True is not of type 'integer'"),
    ("search_conversations", {"query": "x", "roles": "user"}, "argument roles: 'user' is not"),
    ("search_conversations", {"query": "x", "roles": ["robot"]}, "argument roles.0: 'robot'"),
    ("search_conversations", {"query": "x", "tenant": "other"}, 'unknown argument "tenant"'),
    ("search_conversations", {"query": "\ud800"}, 'argument "query" is not valid Unicode'),
    ("search_conversations", {"query": "ok", "roles": ["user", "\udcff"]}, "not valid Unicode"),
    ("list_conversations", {"limit": 101}, "greater than the maximum of 100"),
    ("list_conversations", {"metadata": []}, "argument metadata: [] is not valid"),
    ("list_conversations", {"cursor": "not-a-cursor"}, "not a list_conversations cursor"),
    ("read_conversation", {"conversation_id": "x", "last": 10**9}, "maximum of 200"),
    ("read_conversation", {"conversation_id": "x", "head_seq": -1}, "less than the minimum"),
    ("read_conversation", {"conversation_id": "x", "include_images": "yes"}, "not of type"),
    ("read_conversation", {"conversation_id": ["x"]}, "is not of type 'string'"),
    ("get_tool_call", {"conversation_id": "x"}, "'call_id' is a required property"),
]


@pytest.mark.parametrize(("tool", "arguments", "why"), BAD_CALLS)
async def test_bad_calls_are_refused_and_the_server_keeps_serving(
    store: ConversationStore, tool: str, arguments: dict[str, Any], why: str
) -> None:
    tenant = f"t-{uuid.uuid4().hex}"
    conv = await store.create_conversation(title="Still here", tenant=tenant)
    await store.append(conv.id, Message.user("still serving"), tenant=tenant)
    async with Client(create_server(store, tenant=tenant), cache=None) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        [item] = result.content
        assert isinstance(item, TextContent)
        assert item.text.startswith("refused: "), item.text
        assert why in item.text
        assert item.text.isascii() or "\ud800" not in item.text
        after = await client.call_tool("search_conversations", {"query": "serving"})
        assert not after.is_error
        assert isinstance(after.structured_content, dict)
        assert [h["seq"] for h in after.structured_content["hits"]] == [1]


async def test_a_huge_argument_is_not_echoed_back(store: ConversationStore) -> None:
    async with Client(create_server(store, tenant="huge"), cache=None) as client:
        result = await client.call_tool(
            "search_conversations", {"query": "x", "limit": "9" * 10**6}
        )
        [item] = result.content
        assert isinstance(item, TextContent)
        assert result.is_error and item.text.startswith("refused: argument limit:")
        assert len(item.text) < 500
