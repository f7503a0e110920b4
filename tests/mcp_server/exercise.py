"""One walk through every tool and resource, run by each transport's test with the SDK's client.

It checks what the issue asks of any transport: the tools and resources listed, each tool's
input schema (the contract's argument names and defaults, a valid JSON Schema) and every result
(against the tool's own output schema, and the text item equal to the structured result),
the multilingual search, paging, a branch that is not active, an image, and a tool call with
its lifecycle.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from jsonschema import Draft202012Validator
from mcp import Client
from mcp_types import CallToolResult, ImageContent, TextContent

from tests.mcp_server.seed import CHART, LONG_MESSAGES, PHOTO, Seeded
from tests.store.test_search import EXPECTED

# CONTRACT.md v4: the argument names and their defaults (required arguments have none).
ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_conversations": {"query": ..., "conversation_id": None, "roles": None, "limit": 10},
    "list_conversations": {"limit": 20, "cursor": None, "metadata": None},
    "read_conversation": {
        "conversation_id": ...,
        "last": 20,
        "before_seq": None,
        "head_seq": None,
        "include_images": False,
    },
    "get_tool_call": {"conversation_id": ..., "call_id": ...},
}
MESSAGE_KEYS = {"seq", "message_id", "role", "text", "tool_calls", "tool_result", "files"}


class Checked:
    """Calls tools and checks every result against the tool's advertised output schema."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.output_schemas: dict[str, dict[str, Any]] = {}

    async def list_tools(self) -> None:
        tools = (await self.client.list_tools()).tools
        assert sorted(t.name for t in tools) == sorted(ARGUMENTS)
        for tool in tools:
            schema = tool.input_schema
            Draft202012Validator.check_schema(schema)
            properties = schema["properties"]
            assert list(properties) == list(ARGUMENTS[tool.name]), tool.name
            for name, default in ARGUMENTS[tool.name].items():
                if default is ...:
                    assert name in schema["required"]
                else:
                    assert properties[name]["default"] == default
            assert tool.annotations is not None and tool.annotations.read_only_hint
            assert tool.description
            assert tool.output_schema is not None
            Draft202012Validator.check_schema(tool.output_schema)
            self.output_schemas[tool.name] = tool.output_schema

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return await self.client.call_tool(name, arguments)

    async def ok(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.call(name, arguments)
        assert not result.is_error, result.content
        value = result.structured_content
        assert isinstance(value, dict)
        Draft202012Validator(self.output_schemas[name]).validate(value)
        first = result.content[0]
        assert isinstance(first, TextContent)
        assert json.loads(first.text) == value
        return value


async def exercise(client: Client, seeded: Seeded) -> None:
    """Every tool and resource, as a client of ``seeded``'s tenant sees them."""
    checked = Checked(client)
    await checked.list_tools()
    await _search(checked, seeded)
    await _listing(checked, seeded)
    await _paging(checked, seeded)
    await _branch(checked, seeded)
    await _images(checked, seeded)
    await _tool_calls(checked, seeded)
    await _resources(client, seeded)


async def _search(checked: Checked, seeded: Seeded) -> None:
    names = {cid: name for name, cid in seeded.corpus.items()}
    for query, expected in EXPECTED.items():
        value = await checked.ok("search_conversations", {"query": query, "limit": 50})
        found = [
            (names[hit["conversation_id"]], hit["seq"])
            for hit in value["hits"]
            if hit["conversation_id"] in names
        ]
        assert found == expected, query
    value = await checked.ok(
        "search_conversations",
        {"query": "report", "conversation_id": seeded.corpus["en"], "roles": ["user"]},
    )
    assert [(h["seq"], h["role"]) for h in value["hits"]] == [(1, "user")]
    assert value["hits"][0]["snippet"] == "The quarterly ⟦report⟧ is due on Friday."
    # The branch that is not active is found and said to be off the active path.
    value = await checked.ok("search_conversations", {"query": "archive instead"})
    [hit] = value["hits"]
    assert (hit["conversation_id"], hit["on_active_path"]) == (seeded.agent, False)


async def _listing(checked: Checked, seeded: Seeded) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        value = await checked.ok("list_conversations", {"limit": 3, "cursor": cursor})
        seen.extend(item["id"] for item in value["conversations"])
        cursor = value["next_cursor"]
        if cursor is None:
            break
    expected = {*seeded.corpus.values(), seeded.agent, seeded.long}
    assert set(seen) == expected
    assert len(seen) == len(expected)
    assert seen[0] == seeded.long  # newest first


async def _paging(checked: Checked, seeded: Seeded) -> None:
    pages = []
    before = None
    while True:
        arguments: dict[str, Any] = {"conversation_id": seeded.long, "last": 10}
        if before is not None:
            arguments["before_seq"] = before
        value = await checked.ok("read_conversation", arguments)
        if not value["messages"]:
            break
        assert value["conversation"] == {"id": seeded.long, "title": "A long chat"}
        pages.append([m["seq"] for m in value["messages"]])
        before = value["messages"][0]["seq"]
    assert [len(p) for p in pages] == [10, 10, 10, 10, 5]
    assert sorted(s for page in pages for s in page) == list(range(1, LONG_MESSAGES + 1))
    assert pages[0] == list(range(36, 46))
    value = await checked.ok("read_conversation", {"conversation_id": seeded.long, "last": 1})
    [newest] = value["messages"]
    assert set(newest) == MESSAGE_KEYS
    assert (newest["role"], newest["text"]) == ("user", f"question number {LONG_MESSAGES}")


async def _branch(checked: Checked, seeded: Seeded) -> None:
    active = await checked.ok("read_conversation", {"conversation_id": seeded.agent})
    assert active["messages"][-1]["seq"] == seeded.main_tip
    assert active["messages"][-1]["message_id"] == "a-final"
    branch = await checked.ok(
        "read_conversation", {"conversation_id": seeded.agent, "head_seq": seeded.branch_tip}
    )
    assert [m["seq"] for m in branch["messages"]] == [
        1,
        2,
        3,
        seeded.branch_tip - 1,
        seeded.branch_tip,
    ]
    call, result = branch["messages"][-2:]
    assert call["tool_calls"] == [
        {
            "id": "call_archive",
            "name": "search_archive",
            "arguments": {"q": "2024"},
            "status": "complete",
        }
    ]
    assert result["tool_result"] == {
        "call_id": "call_archive",
        "status": "complete",
        "kind": "json",
        "text": '{"archived_total":999}',
    }
    # Reading the branch did not move the head.
    again = await checked.ok("read_conversation", {"conversation_id": seeded.agent, "last": 1})
    assert again["messages"][-1]["seq"] == seeded.main_tip


async def _images(checked: Checked, seeded: Seeded) -> None:
    plain = await checked.call("read_conversation", {"conversation_id": seeded.agent})
    assert [type(item) for item in plain.content] == [TextContent]
    result = await checked.call(
        "read_conversation", {"conversation_id": seeded.agent, "include_images": True}
    )
    assert not result.is_error
    images = [item for item in result.content if isinstance(item, ImageContent)]
    assert [base64.b64decode(i.data) for i in images] == [PHOTO, CHART]
    assert {i.mime_type for i in images} == {"image/png"}
    notes = [i.text for i in result.content[1:] if isinstance(i, TextContent)]
    assert any("scan.png" in note and "cap per image" in note for note in notes), notes
    value = result.structured_content
    assert isinstance(value, dict)
    first = value["messages"][0]
    assert first["files"] == [
        {"name": "photo.png", "media_type": "image/png", "sha256": _sha(PHOTO)}
    ]


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


async def _tool_calls(checked: Checked, seeded: Seeded) -> None:
    statuses = {}
    for call_id in ("call_sales", "call_chart", "call_mail", "call_slow", "call_archive"):
        value = await checked.ok(
            "get_tool_call", {"conversation_id": seeded.agent, "call_id": call_id}
        )
        assert value["id"] == call_id
        statuses[call_id] = (value["status"], value["result_kind"], value["output_text"])
        if call_id == "call_chart":
            assert value["files"] == [
                {"name": "chart.png", "media_type": "image/png", "sha256": _sha(CHART)}
            ]
        if call_id == "call_sales":
            assert (value["name"], value["arguments"]) == ("get_sales", {"region": "EMEA"})
    assert statuses == {
        "call_sales": ("complete", "json", '{"total":1234.5,"currency":"EUR"}'),
        "call_chart": ("complete", "content", "chart rendered"),
        "call_mail": ("error", "error", "SMTP relay refused the message"),
        "call_slow": ("interrupted", None, None),
        "call_archive": ("complete", "json", '{"archived_total":999}'),
    }
    missing = await checked.call(
        "get_tool_call", {"conversation_id": seeded.agent, "call_id": "call_nope"}
    )
    assert missing.is_error
    [text] = missing.content
    assert isinstance(text, TextContent) and text.text.startswith("refused: ")


async def _resources(client: Client, seeded: Seeded) -> None:
    listed = (await client.list_resources()).resources
    uris = {str(r.uri) for r in listed}
    assert f"convstore://conversations/{seeded.agent}" in uris
    assert all(r.mime_type == "text/markdown" for r in listed)
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["convstore://conversations/{id}"]
    read = await client.read_resource(f"convstore://conversations/{seeded.agent}")
    [content] = read.contents
    text = getattr(content, "text", "")
    assert text.startswith("# Quarterly sales agent")
    assert "EMEA sales were 1,234.50 EUR." in text
    assert "Checking the archive" not in text  # the active path only
