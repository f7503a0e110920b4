"""``show --json`` -> ``import --format convstore`` -> ``show --json`` is the identity, and the
import of provider requests keeps their tools and model (real ``convstore`` processes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    ErrorOutput,
    FilePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolDefinition,
)
from convstore.store.conversations.tools import tools_metadata
from tests.cli.test_cli import convstore
from tests.providers.conversations import PDF, PNG
from tests.support.corpus import CORPUS_DIR
from tests.support.wire_rules import check_payload


async def _seed(url: str, blobs: str) -> str:
    """A conversation with everything the document must carry."""
    tools = [ToolDefinition(name="web.search", parameters={"type": "object"}, strict=True)]
    async with ConversationStore(url, blobs=blobs) as store:
        conversation = await store.create_conversation(
            title="Round trip", tenant="acme", metadata={"team": "x", **tools_metadata(tools)}
        )
        cid = conversation.id
        await store.append(
            cid,
            [
                Message.system("Be brief."),
                Message.user("Look", FilePart.from_bytes(PNG, filename="a.png"), id="ui-1"),
                Message.assistant(
                    ToolCallPart(id="c1", name="web.search", arguments={"q": "a"}),
                    ToolCallPart(id="c2", name="fail", arguments={}),
                    provider="openai",
                    model="gpt-5",
                ),
                Message.tool_result("c1", ContentOutput(parts=[TextPart(text="r"),
                                                              FilePart.from_bytes(PDF)])),
                Message.tool_result("c2", ErrorOutput(message="boom")),
                Message.assistant(ToolCallPart(id="c3", name="slow", arguments={})),
            ],
            tenant="acme",
        )  # fmt: skip
        await store.cancel_tool_calls(cid, tenant="acme")
        await store.append(
            cid,
            [
                Message.user("Next"),
                Message.assistant(ToolCallPart(id="c4", name="later", arguments={})),
                Message.user("Still there?"),
                Message.assistant("Yes.", provider="openai", model="gpt-5"),
                Message.assistant(ToolCallPart(id="c5", name="open", arguments={})),
            ],
            tenant="acme",
        )
        await store.compact(cid, through_seq=5, summary="Searched; one tool failed.", tenant="acme")
    return cid


async def test_show_import_show_is_identical(tmp_path: Path) -> None:
    source_url = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    target_url = f"sqlite+aiosqlite:///{tmp_path / 'b.db'}"
    blobs = str(tmp_path / "blobs")
    cid = await _seed(source_url, blobs)
    store_args = ["--blobs", blobs, "--tenant", "acme"]

    shown = convstore("show", cid, "--json", "--url", source_url, *store_args, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    document: dict[str, Any] = json.loads(shown.stdout)
    statuses = {c["id"]: c["status"] for c in document["tool_calls"]}
    assert statuses == {
        "c1": "complete", "c2": "error", "c3": "cancelled", "c4": "interrupted", "c5": "pending",
    }  # fmt: skip
    assert document["tools"] == [
        {"name": "web.search", "parameters": {"type": "object"}, "strict": True}
    ]
    assert document["compactions"] == [{"through_seq": 5, "summary": "Searched; one tool failed."}]
    assert (document["title"], document["tenant"], document["metadata"]) == (
        "Round trip", "acme", {"team": "x"},
    )  # fmt: skip

    (tmp_path / "doc.json").write_text(shown.stdout)
    imported = convstore(
        "import", "doc.json", "--format", "convstore", "--url", target_url, "--blobs", blobs,
        cwd=tmp_path,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == cid  # the id was free in the new database
    again = convstore("show", cid, "--json", "--url", target_url, *store_args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == shown.stdout

    # Into the same database the id is taken: a new conversation, the same content.
    copy = convstore(
        "import", "doc.json", "--format", "convstore", "--url", source_url, "--blobs", blobs,
        cwd=tmp_path,
    )  # fmt: skip
    assert copy.returncode == 0, copy.stderr
    new_id = copy.stdout.strip()
    assert new_id != cid
    copied = json.loads(
        convstore("show", new_id, "--json", "--url", source_url, *store_args, cwd=tmp_path).stdout
    )
    assert {**copied, "id": cid} == document


def test_import_keeps_tools_and_model_and_renders_them(tmp_path: Path) -> None:
    record = json.loads((CORPUS_DIR / "test_mixed_content_ordering-mistral--1.json").read_text())
    (tmp_path / "request.json").write_text(json.dumps(record["request"]))
    imported = convstore("import", "request.json", "--format", "mistral", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    cid = imported.stdout.strip()
    document = json.loads(convstore("show", cid, "--json", cwd=tmp_path).stdout)
    assert [t["name"] for t in document["tools"]] == ["get_mixed_content"]
    assert document["metadata"]["convstore.model"] == record["model"]

    rendered = convstore("render", cid, "--to", "mistral", "--diagnostics", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    output = json.loads(rendered.stdout)
    check_payload("mistral", record["model"], output["payload"])
    assert output["payload"]["tools"][0]["function"]["name"] == "get_mixed_content"
    assert output["diagnostics"]["model"] == record["model"]  # the imported model, by default

    (tmp_path / "tools.json").write_text(
        json.dumps([{"name": "other.tool", "parameters": {"type": "object"}}])
    )
    windowed = convstore(
        "render", cid, "--to", "kimi", "--last", "1", "--tools", "tools.json", "--diagnostics",
        cwd=tmp_path,
    )  # fmt: skip
    assert windowed.returncode == 0, windowed.stderr
    output = json.loads(windowed.stdout)
    check_payload("kimi", None, output["payload"])
    assert [t["function"]["name"] for t in output["payload"]["tools"]] == ["other_tool"]
    assert output["diagnostics"]["window"]["last"] == 1


def test_bad_tools_file_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "request.json").write_text(
        json.dumps({"messages": [{"role": "user", "content": "x"}]})
    )
    cid = convstore("import", "request.json", "--format", "kimi", cwd=tmp_path).stdout.strip()
    (tmp_path / "tools.json").write_text(json.dumps([{"description": "no name"}]))
    result = convstore("render", cid, "--to", "kimi", "--tools", "tools.json", cwd=tmp_path)
    assert result.returncode == 1 and "InvalidInputError" in result.stderr
    (tmp_path / "doc.json").write_text(json.dumps({"format": "something else"}))
    result = convstore("import", "doc.json", "--format", "convstore", cwd=tmp_path)
    assert result.returncode == 1 and "InvalidInputError" in result.stderr


async def test_state_is_imported_or_refused(tmp_path: Path) -> None:
    """State travels with the document where the store can write it (``update_state``)."""
    from convstore import InvalidInputError
    from convstore.cli.transfer import import_document

    document = {
        "format": "convstore.conversation",
        "version": 1,
        "title": "s",
        "state": {"step": 2},
        "messages": [{"role": "user", "parts": [{"kind": "text", "text": "hi"}]}],
    }
    async with ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as store:
        if not hasattr(store, "update_state"):
            with pytest.raises(InvalidInputError):
                await import_document(store, document, title=None, tenant=None)
            assert await store.list_conversations() == []  # refused before anything is written
            return
        imported = await import_document(store, document, title=None, tenant=None)
        assert (await store.load(imported.id)).state == {"step": 2}
