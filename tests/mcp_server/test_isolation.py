"""Tenant isolation (issue 34, acceptance 2): a client of tenant A, given B's conversation ids,
tool call ids, words and metadata, gets nothing of B's: the same answers as for ids that do not
exist. On SQLite and PostgreSQL, through the SDK's in-process client (the same server object
and middleware the transports serve).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from convstore import ConversationStore, Message
from convstore.mcp import create_server
from tests.mcp_server.seed import seed

SECRET = "Zanzibarmerger"
MISSING = "01MISSINGCONVERSATION0000"


def _text(result: CallToolResult) -> str:
    assert all(isinstance(item, TextContent) for item in result.content)
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


def _masked(result: CallToolResult, *ids: str) -> tuple[bool | None, str, Any]:
    text = _text(result)
    structured = json.dumps(result.structured_content)
    for number, value in enumerate(ids):
        text = text.replace(value, f"<id{number}>")
        structured = structured.replace(value, f"<id{number}>")
    return result.is_error, text, structured


async def test_another_tenants_ids_answer_as_missing_ones(store: ConversationStore) -> None:
    a, b = f"a-{uuid.uuid4().hex}", f"b-{uuid.uuid4().hex}"
    mine = await seed(store, a)
    theirs = await seed(store, b)
    secret = await store.create_conversation(
        title="Board only", tenant=b, metadata={"project": SECRET}
    )
    await store.append(secret.id, Message.user(f"The {SECRET} closes on Monday."), tenant=b)
    their_ids = {*theirs.corpus.values(), theirs.agent, theirs.long, secret.id}

    async with Client(create_server(store, tenant=a), cache=None) as client:

        async def call(name: str, **arguments: Any) -> CallToolResult:
            return await client.call_tool(name, arguments)

        for their_id in [theirs.agent, secret.id]:
            pairs = [
                ("read_conversation", {"conversation_id": their_id}, {"conversation_id": MISSING}),
                (
                    "read_conversation",
                    {"conversation_id": their_id, "head_seq": 3},
                    {"conversation_id": MISSING, "head_seq": 3},
                ),
                (
                    "get_tool_call",
                    {"conversation_id": their_id, "call_id": "call_sales"},
                    {"conversation_id": MISSING, "call_id": "call_sales"},
                ),
                (
                    "search_conversations",
                    {"query": "sales", "conversation_id": their_id},
                    {"query": "sales", "conversation_id": MISSING},
                ),
            ]
            for name, theirs_args, missing_args in pairs:
                got = await call(name, **theirs_args)
                expected = await call(name, **missing_args)
                assert _masked(got, their_id) == _masked(expected, MISSING), name
                assert got.is_error or got.structured_content == {"hits": []}

            with_id = _resource_error(await _read_resource(client, their_id))
            without = _resource_error(await _read_resource(client, MISSING))
            assert with_id.replace(their_id, "<id>") == without.replace(MISSING, "<id>")

        # Their words, and their metadata, find nothing: exactly like words nobody wrote.
        for words in [SECRET, f'"{SECRET} closes"']:
            got = await call("search_conversations", query=words)
            assert got.structured_content == {"hits": []}
            assert _masked(got) == _masked(await call("search_conversations", query="Qxqzyv"))
        listed = await call("list_conversations", metadata={"project": SECRET})
        assert listed.structured_content == {"conversations": [], "next_cursor": None}

        # Everything this tenant can list or search is its own.
        seen: set[str] = set()
        cursor = None
        while True:
            page = await call("list_conversations", limit=100, cursor=cursor)
            assert isinstance(page.structured_content, dict)
            seen.update(item["id"] for item in page.structured_content["conversations"])
            cursor = page.structured_content["next_cursor"]
            if cursor is None:
                break
        assert seen == {*mine.corpus.values(), mine.agent, mine.long}
        hits = await call("search_conversations", query="report", limit=50)
        assert isinstance(hits.structured_content, dict)
        assert {h["conversation_id"] for h in hits.structured_content["hits"]} == {
            mine.corpus["en"]
        }
        resources = (await client.list_resources()).resources
        assert not {str(r.uri).rsplit("/", 1)[1] for r in resources} & their_ids


async def _read_resource(client: Client, conversation_id: str) -> MCPError | None:
    try:
        await client.read_resource(f"convstore://conversations/{conversation_id}")
    except MCPError as exc:
        return exc
    return None


def _resource_error(error: MCPError | None) -> str:
    assert error is not None
    return f"{error.code} {error.message} {error.error.data}"
