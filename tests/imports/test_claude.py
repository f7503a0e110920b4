"""Claude.ai export import: order, branches by parent, blocks as parts, attachments."""

from __future__ import annotations

import json
from pathlib import Path

from convstore import ConversationStore
from convstore.imports import import_file
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

from .exports import claude_conversation, claude_message
from .trees import leaves, path_to, stored_tree

_README = "# parser\n\nA small recursive-descent parser. Café ☕ and naïve quotes.\n"


async def test_messages_out_of_order_are_stored_in_created_at_order_with_every_block(
    store: ConversationStore, tmp_path: Path
) -> None:
    question = claude_message(
        "human",
        [{"type": "text", "text": "Why does the tokenizer loop?"}],
        "2025-03-02T10:00:01.000000+00:00",
        attachments=[
            {
                "file_name": "README.md",
                "file_size": 70,
                "file_type": "text/markdown",
                "extracted_content": _README,
            }
        ],
        files=[{"file_name": "screenshot.png"}],
    )
    answer = claude_message(
        "assistant",
        [
            {
                "type": "thinking",
                "thinking": "The loop never advances.",
                "summaries": [{"summary": "Checking the loop"}],
            },
            {"type": "text", "text": "Let me run it."},
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "repl",
                "input": {"code": "tokenize('a')"},
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01A",
                "name": "repl",
                "content": [{"type": "text", "text": "Timeout after 5s"}],
                "is_error": True,
            },
            {"type": "tool_use", "name": "repl", "input": {"code": "tokenize('')"}},
            {"type": "tool_result", "name": "repl", "content": [{"type": "text", "text": "[]"}]},
            {"type": "text", "text": "The index is never incremented."},
            {"type": "voice_note", "title": "?"},
        ],
        "2025-03-02T10:00:09.000000+00:00",
    )
    thanks = claude_message(
        "human", [{"type": "text", "text": "Thanks!"}], "2025-03-02T10:01:00.000000+00:00"
    )
    conversation = claude_conversation([thanks, answer, question])  # listed out of order
    (tmp_path / "conversations.json").write_text(json.dumps([conversation]))
    (tmp_path / "users.json").write_text("[]")

    report = await import_file(store, tmp_path, "claude-export")
    tree = await stored_tree(store, f"claude-{conversation['uuid']}")
    a = answer["uuid"]
    expected = [question["uuid"], a, f"{a}.1", f"{a}.2", f"{a}.3", f"{a}.4", thanks["uuid"]]
    assert tree.active == expected
    assert tree.tips == {thanks["uuid"]}
    m = tree.messages

    text, readme, screenshot = m[question["uuid"]].parts
    assert text == TextPart(text="Why does the tokenizer loop?")
    assert isinstance(readme, FilePart)
    assert (readme.media_type, readme.filename) == ("text/plain", "README.md")
    assert await store.read_attachment(readme) == _README.encode()
    assert isinstance(screenshot, FilePart)
    assert screenshot.uri == "claude-file:screenshot.png"

    thinking, intro, call = m[a].parts
    assert m[a].role is Role.ASSISTANT
    assert m[a].provider == "anthropic"
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.text, thinking.summary) == ("The loop never advances.", ["Checking the loop"])
    assert intro == TextPart(text="Let me run it.")
    assert call == ToolCallPart(id="toolu_01A", name="repl", arguments={"code": "tokenize('a')"})
    (failed,) = m[f"{a}.1"].parts
    assert m[f"{a}.1"].role is Role.TOOL
    assert failed == ToolResultPart(
        call_id="toolu_01A", name="repl", output=ErrorOutput(message="Timeout after 5s")
    )
    (second_call,) = m[f"{a}.2"].parts
    assert isinstance(second_call, ToolCallPart)
    (second_result,) = m[f"{a}.3"].parts
    assert second_result == ToolResultPart(
        call_id=second_call.id, name="repl", output=ContentOutput(parts=[TextPart(text="[]")])
    )
    assert m[f"{a}.4"].parts == [TextPart(text="The index is never incremented.")]
    assert report.unmapped == {"block:voice_note": 1, "file not in export (kept as a reference)": 1}

    again = await import_file(store, tmp_path / "conversations.json", "claude-export")
    assert (again.imported["message"], again.present["message"]) == (0, 7)


async def test_parent_message_uuids_make_branches_and_the_current_leaf_the_head(
    store: ConversationStore, tmp_path: Path
) -> None:
    root = "00000000-0000-4000-8000-000000000000"
    q = claude_message(
        "human", [{"type": "text", "text": "Name a prime."}], "2025-03-02T10:00:00Z", parent=root
    )
    a1 = claude_message(
        "assistant", [{"type": "text", "text": "7"}], "2025-03-02T10:00:02Z", parent=q["uuid"]
    )
    a2 = claude_message(
        "assistant", [{"type": "text", "text": "11"}], "2025-03-02T10:00:30Z", parent=q["uuid"]
    )
    q_edit = claude_message(
        "human", [{"type": "text", "text": "Name two primes."}], "2025-03-02T10:01:00Z", parent=root
    )
    a3 = claude_message(
        "assistant",
        [{"type": "text", "text": "2 and 3"}],
        "2025-03-02T10:01:02Z",
        parent=q_edit["uuid"],
    )
    conversation = claude_conversation(
        [q, a1, a2, q_edit, a3], current_leaf_message_uuid=a2["uuid"]
    )
    (tmp_path / "conversations.json").write_text(json.dumps([conversation]))

    await import_file(store, tmp_path / "conversations.json", "claude-export")
    tree = await stored_tree(store, f"claude-{conversation['uuid']}")
    parents = {
        q["uuid"]: None,
        a1["uuid"]: q["uuid"],
        a2["uuid"]: q["uuid"],
        q_edit["uuid"]: None,
        a3["uuid"]: q_edit["uuid"],
    }
    assert tree.parents == parents
    assert tree.tips == leaves(parents)
    assert tree.active == path_to(parents, a2["uuid"])


async def test_a_conversation_over_the_store_limits_is_reported_and_the_rest_imported(
    store: ConversationStore, tmp_path: Path
) -> None:
    hi = claude_message("human", [{"type": "text", "text": "hi"}], "2025-03-02T10:00:00Z")
    bad = claude_conversation([hi], name="a\x00b")  # NUL is refused in stored text
    good = claude_conversation(
        [claude_message("human", [{"type": "text", "text": "hello"}], "2025-03-02T10:00:00Z")]
    )
    (tmp_path / "conversations.json").write_text(json.dumps([bad, good]))

    report = await import_file(store, tmp_path, "claude-export")
    assert report.imported == {"conversation": 1, "message": 1, "attachment": 0}
    (error,) = report.errors
    assert error.startswith(
        f"conversations.json, conversation 0 (character 1), id {bad['uuid']!r}: title "
    )
    assert (await store.load(f"claude-{good['uuid']}")).messages[0].text == "hello"
