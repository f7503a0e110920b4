"""Open WebUI chat export import: the history tree, models per message, files, inline blocks."""

from __future__ import annotations

import html
import json
from pathlib import Path

from convstore import ConversationStore
from convstore.imports import import_file
from convstore.model import (
    ContentOutput,
    FilePart,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

from .exports import OpenWebUI, data_url, png
from .trees import leaves, path_to, stored_tree


def _tool_block(call_id: str, name: str, arguments: dict[str, object], result: str) -> str:
    args = html.escape(json.dumps(json.dumps(arguments)))
    return (
        f'<details type="tool_calls" done="true" id="{call_id}" name="{name}" '
        f'arguments="{args}" result="{html.escape(json.dumps(result))}" files="" embeds="">\n'
        "<summary>Tool Executed</summary>\n</details>\n"
    )


async def test_the_history_tree_models_files_and_inline_blocks(
    store: ConversationStore, tmp_path: Path
) -> None:
    chat = OpenWebUI()
    # Bytes whose base64 has '+' and '/' in the standard alphabet ('-' and '_' in the URL one).
    photo, crumb = png(seed=251), png(5, 3, seed=190)
    q = chat.add(
        None,
        "user",
        "How do I feed a starter?",
        files=[
            {"type": "image", "url": data_url(photo, "image/png")},
            {
                "type": "file",
                "id": "5f0c7e2a",
                "name": "notes.pdf",
                "url": "/api/v1/files/5f0c7e2a",
            },
        ],
    )
    a1 = chat.add(
        q,
        "assistant",
        "Equal weights of flour and water.",
        model="llama3.1:8b",
        modelName="Llama 3.1",
    )
    reasoning = (
        '<details type="reasoning" done="true" duration="3">\n'
        "<summary>Thought for 3 seconds</summary>\n"
        "> The user keeps a starter.\n> Ratios matter.\n</details>\n"
    )
    a2 = chat.add(
        q,
        "assistant",
        reasoning
        + "Let me check the ratio.\n"
        + _tool_block("call_7", "calculator", {"expr": "50/50"}, "1.0")
        + "A 1:1:1 feed, daily.",
        model="qwen2.5:14b",
    )
    q2 = chat.add(
        a2,
        "user",
        "And the crumb?",
        files=[{"type": "image", "url": data_url(crumb, "image/png", urlsafe=True)}],
    )
    a3 = chat.add(q2, "assistant", "An open crumb needs high hydration.", model="qwen2.5:14b")
    q_edit = chat.add(None, "user", "How do I start a starter?")  # an edit of the first message
    a4 = chat.add(q_edit, "assistant", "Mix flour and water; wait.", model="llama3.1:8b")
    chat.current = a3
    (tmp_path / "chat-export-1730000000.json").write_text(json.dumps([chat.record()]))

    report = await import_file(store, tmp_path / "chat-export-1730000000.json", "openwebui-export")
    tree = await stored_tree(store, f"openwebui-{chat.id}")
    parents = {k: v["parentId"] for k, v in chat.messages.items()}
    # a2 is stored as a chain: assistant (thinking, text, call) -> tool (result) -> assistant.
    parents[f"{a2}.1"], parents[f"{a2}.2"], parents[q2] = a2, f"{a2}.1", f"{a2}.2"
    assert tree.parents == parents
    assert tree.tips == leaves(parents) == {a1, a3, a4}
    assert tree.active == path_to(parents, a3)
    m = tree.messages
    assert (m[a1].model, m[a3].model, m[a4].model) == ("llama3.1:8b", "qwen2.5:14b", "llama3.1:8b")
    assert m[a1].provider_details is not None
    assert m[a1].provider_details["model_name"] == "Llama 3.1"

    text, image, pdf = m[q].parts
    assert text == TextPart(text="How do I feed a starter?")
    assert isinstance(image, FilePart)
    assert await store.read_attachment(image) == photo
    assert isinstance(pdf, FilePart)
    assert (pdf.uri, pdf.filename) == ("/api/v1/files/5f0c7e2a", "notes.pdf")
    (_, crumb_part) = m[q2].parts
    assert isinstance(crumb_part, FilePart)
    assert await store.read_attachment(crumb_part) == crumb

    thinking, said, call = m[a2].parts
    assert thinking == ThinkingPart(
        text="The user keeps a starter.\nRatios matter.", model="qwen2.5:14b"
    )
    assert said == TextPart(text="Let me check the ratio.")
    assert call == ToolCallPart(id="call_7", name="calculator", arguments={"expr": "50/50"})
    assert m[f"{a2}.1"].role is Role.TOOL
    assert m[f"{a2}.1"].parts == [
        ToolResultPart(
            call_id="call_7", name="calculator", output=ContentOutput(parts=[TextPart(text="1.0")])
        )
    ]
    assert m[f"{a2}.2"].parts == [TextPart(text="A 1:1:1 feed, daily.")]
    assert report.unmapped == {"file not in export (kept as a reference)": 1}

    again = await import_file(store, tmp_path, "openwebui-export")
    assert again.imported["message"] == 0
    assert again.present == {"conversation": 1, "message": len(parents)}


async def test_a_single_chat_object_is_an_export_of_one(
    store: ConversationStore, tmp_path: Path
) -> None:
    chat = OpenWebUI()
    chat.add(chat.add(None, "user", "hi"), "assistant", "hello", model="llama3.1:8b")
    (tmp_path / "chat.json").write_text(json.dumps(chat.record()))
    report = await import_file(store, tmp_path / "chat.json", "openwebui-export")
    assert report.imported == {"conversation": 1, "message": 2, "attachment": 0}
    assert (await store.load(f"openwebui-{chat.id}")).title == "Sourdough"


async def test_a_current_id_inside_the_tree_is_the_head(
    store: ConversationStore, tmp_path: Path
) -> None:
    chat = OpenWebUI()
    answer = chat.add(chat.add(None, "user", "hi"), "assistant", "hello", model="llama3.1:8b")
    chat.add(chat.add(answer, "user", "and?"), "assistant", "more", model="llama3.1:8b")
    chat.current = answer  # the chat was left showing an earlier message
    (tmp_path / "chat.json").write_text(json.dumps([chat.record()]))
    await import_file(store, tmp_path, "openwebui-export")
    tree = await stored_tree(store, f"openwebui-{chat.id}")
    assert tree.active == path_to(tree.parents, answer)
    assert len(tree.parents) == 4
