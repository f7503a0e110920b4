"""ChatGPT data export import: the tree node for node, content mapping, idempotence, bad files."""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from convstore import ConversationStore
from convstore.cli.main import main
from convstore.errors import ConversationNotFoundError, MalformedExportError
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

from .exports import ChatGPT, chatgpt_rich, png
from .trees import leaves, path_to, stored_tree


def _export_parents(c: ChatGPT) -> dict[str, str | None]:
    return {k: v["parent"] for k, v in c.mapping.items()}


def _zip_export(
    tmp_path: Path, documents: list[dict[str, object]], files: dict[str, bytes]
) -> Path:
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", json.dumps(documents))
        z.writestr("chat.html", "<html></html>")
        for name, data in files.items():
            z.writestr(name, data)
    return path


async def test_the_tree_is_stored_node_for_node_with_every_content_type(
    store: ConversationStore, tmp_path: Path
) -> None:
    c, n = chatgpt_rich()
    photo, tram = png(seed=1), png(4, 4, seed=2)
    export = _zip_export(
        tmp_path,
        [c.document()],
        {f"{n['image']}-porto.png": photo, f"dalle-generations/{n['dalle_image']}-tram.webp": tram},
    )
    report = await import_file(store, export, "chatgpt-export")

    cid = f"chatgpt-{c.id}"
    tree = await stored_tree(store, cid)
    parents = _export_parents(c)
    assert tree.parents == parents  # every node, under its parent
    assert tree.tips == leaves(parents)  # every regeneration and edit is a branch
    assert len(tree.tips) == 4
    assert tree.active == path_to(parents, n["answer"])  # current_node
    assert report.imported["conversation"] == 1
    assert report.imported["message"] == len(c.mapping)
    assert report.errors == []

    m = tree.messages
    assert m[c.root].role is Role.SYSTEM
    assert m[c.root].provider_details == {"hidden": True, "placeholder": "node without a message"}
    assert m[n["system"]].provider_details is not None
    assert m[n["system"]].provider_details["hidden"] is True
    assert m[n["context"]].role is Role.USER
    assert m[n["context"]].text == "I live in Lisbon.\nAnswer briefly."
    assert (m[n["a1_regen"]].model, m[n["a1_regen2"]].model) == ("gpt-4o", "gpt-4o-mini")
    assert m[n["a1"]].provider == "openai"
    created = c.mapping[n["q1"]]["message"]["create_time"]
    assert m[n["q1"]].provider_details == {
        "created_at": datetime.fromtimestamp(created, UTC).isoformat()
    }

    # The uploaded image, from the export's file; the missing one kept as a reference.
    image, text, missing = m[n["q2"]].parts
    assert isinstance(image, FilePart)
    assert image.attachment is not None
    assert image.media_type == "image/png"
    assert await store.read_attachment(image) == photo
    assert text == TextPart(text="What is in this photo?")
    assert isinstance(missing, FilePart)
    assert missing.uri == "sediment://file_0000missing"
    assert report.unmapped["file not in export (kept as a reference)"] == 1

    (thinking,) = m[n["thoughts"]].parts
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.text, thinking.summary) == ("It shows a bridge.", ["Looking at the photo"])
    (recap,) = m[n["recap"]].parts
    assert isinstance(recap, ThinkingPart)
    assert recap.summary == ["Thought for 4 seconds"]

    (code,) = m[n["code"]].parts
    assert code == ToolCallPart(
        id=n["code"],
        name="python",
        arguments={"code": "import math\nprint(math.pi * 2)"},
        raw_arguments="import math\nprint(math.pi * 2)",
    )
    (output,) = m[n["output"]].parts
    assert isinstance(output, ToolResultPart)
    assert (output.call_id, output.name) == (n["code"], "python")
    assert output.output == ContentOutput(parts=[TextPart(text="6.283185307179586")])
    for key in ("browse", "quote"):
        (result,) = m[n[key]].parts
        assert isinstance(result, ToolResultPart)
        assert result.call_id == n["search"]
    (dalle_call,) = m[n["dalle_call"]].parts
    assert isinstance(dalle_call, ToolCallPart)
    assert dalle_call.arguments == {"prompt": "a tram in Porto", "size": "1024x1024"}
    (dalle,) = m[n["dalle"]].parts
    assert isinstance(dalle, ToolResultPart)
    assert dalle.call_id == n["dalle_call"]
    assert isinstance(dalle.output, ContentOutput)
    (generated,) = dalle.output.parts
    assert isinstance(generated, FilePart)
    assert await store.read_attachment(generated) == tram

    # The odd node keeps its place in the tree, as a marked placeholder, and is counted.
    assert m[n["odd"]].parts == []
    assert m[n["odd"]].provider_details is not None
    assert m[n["odd"]].provider_details["placeholder"] == "content type 'sonic_webpage'"
    assert report.unmapped["content_type:sonic_webpage"] == 1


async def test_reimport_adds_nothing_and_a_newer_export_adds_only_what_is_new(
    store: ConversationStore, tmp_path: Path
) -> None:
    c, n = chatgpt_rich()
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations.json").write_text(json.dumps([c.document()]))
    await import_file(store, folder, "chatgpt-export", tenant="acme")
    cid = f"chatgpt-{c.id}"
    before = await stored_tree(store, cid, tenant="acme")

    again = await import_file(store, folder, "chatgpt-export", tenant="acme")
    assert again.imported["message"] == 0
    assert again.present == {"conversation": 1, "message": len(c.mapping)}
    after = await stored_tree(store, cid, tenant="acme")
    assert after.revision == before.revision
    assert after.parents == before.parents

    # A later export of the same conversation: one more regeneration, now the active node.
    newer = c.text(n["q2"], "assistant", "A bridge over the Douro.", model="gpt-4o")
    (folder / "conversations.json").write_text(json.dumps([c.document()]))
    grown = await import_file(store, folder, "chatgpt-export", tenant="acme")
    assert (grown.imported["message"], grown.present["message"]) == (1, len(c.mapping) - 1)
    tree = await stored_tree(store, cid, tenant="acme")
    assert tree.parents == _export_parents(c)
    assert tree.active == path_to(tree.parents, newer)
    with pytest.raises(ConversationNotFoundError):
        await store.load(cid, tenant="other")
    # The same export for another tenant: its ids are taken, which is reported, not fatal.
    elsewhere = await import_file(store, folder, "chatgpt-export", tenant="other")
    assert elsewhere.imported["message"] == 0
    (error,) = elsewhere.errors
    assert error == (
        f"conversations.json, conversation 0 (character 1), id {c.id!r}: "
        f"conversation id {cid!r} is not available to this tenant"
    )


async def test_split_files_and_a_conversation_that_cannot_be_a_tree(
    store: ConversationStore, tmp_path: Path
) -> None:
    first, second, broken = ChatGPT("one"), ChatGPT("two"), ChatGPT("cycle")
    for c in (first, second, broken):
        c.current = c.text(c.text(c.root, "user", "hi"), "assistant", "hello", model="gpt-4o")
    a, b = (broken.mapping[k] for k in list(broken.mapping)[1:3])
    a["parent"], b["parent"] = b["id"], a["id"]  # a cycle below the root
    (tmp_path / "conversations-000.json").write_text(json.dumps([first.document()]))
    (tmp_path / "conversations-001.json").write_text(
        json.dumps([broken.document(), second.document()])
    )

    report = await import_file(store, tmp_path, "chatgpt-export")
    assert report.imported["conversation"] == 2
    (error,) = report.errors
    assert error.startswith("conversations-001.json, conversation 0 (character 1)")
    assert "cycle" in error
    assert (await store.load(f"chatgpt-{second.id}")).title == "two"
    with pytest.raises(ConversationNotFoundError):
        await store.load(f"chatgpt-{broken.id}")


async def test_a_truncated_file_names_the_position_and_writes_nothing_of_that_conversation(
    store: ConversationStore, tmp_path: Path
) -> None:
    whole, cut = chatgpt_rich()[0], chatgpt_rich()[0]
    text = json.dumps([whole.document(), cut.document()])
    second_starts = text.index(f'{{"title": "{cut.title}", "create_time"', 2)
    (tmp_path / "conversations.json").write_text(text[: second_starts + 2000])

    with pytest.raises(MalformedExportError) as raised:
        await import_file(store, tmp_path / "conversations.json", "chatgpt-export")
    assert raised.value.position.startswith("conversations.json, character ")
    assert raised.value.position.endswith(", conversation 1")
    assert "truncated" in raised.value.problem
    assert len((await stored_tree(store, f"chatgpt-{whole.id}")).parents) == len(whole.mapping)
    with pytest.raises(ConversationNotFoundError):
        await store.load(f"chatgpt-{cut.id}")


async def test_a_malformed_file_names_the_exact_character(
    store: ConversationStore, tmp_path: Path
) -> None:
    c = chatgpt_rich()[0]
    text = json.dumps([c.document()])
    bad = text.index('"Start at Ribeira."')
    broken = text[:bad] + "'Start at Ribeira.'" + text[bad + len('"Start at Ribeira."') :]
    (tmp_path / "conversations.json").write_text("  \n" + broken)

    with pytest.raises(MalformedExportError) as raised:
        await import_file(store, tmp_path, "chatgpt-export")
    assert raised.value.position == f"conversations.json, character {bad + 3}, conversation 0"
    assert raised.value.problem == "Expecting value"
    with pytest.raises(ConversationNotFoundError):
        await store.load(f"chatgpt-{c.id}")


def test_the_cli_imports_an_export_and_prints_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = ChatGPT()
    c.text(c.text(c.root, "user", "hi"), "assistant", "hello", model="gpt-4o")
    export = _zip_export(tmp_path, [c.document()], {})
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    assert main(["migrate", "--url", url]) == 0
    capsys.readouterr()
    assert main(["import", str(export), "--format", "chatgpt-export", "--url", url]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == ["imported 1 conversation and 3 messages"]
    assert "importing (bytes of the export read): " in out.err
    assert main(["import", str(export), "--format", "chatgpt-export", "--url", url]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "already present (left as they were): 1 conversation and 3 messages"
    ]
    (tmp_path / "bad.json").write_text('[{"mapping": {}')
    assert (
        main(["import", str(tmp_path / "bad.json"), "--format", "chatgpt-export", "--url", url])
        == 1
    )
    assert "MalformedExportError: bad.json, character 15, conversation 0" in capsys.readouterr().err
