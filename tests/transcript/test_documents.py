"""Text documents reach every target: natively where it has a slot, as text blocks elsewhere.

Files are stored as blobs first, so the store's render has to fetch them (text documents are
fetched for every target); a target that cannot take a type at all says so in the payload and
in the diagnostics.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    FilePart,
    Message,
    TextPart,
    ToolCallPart,
    capabilities_for,
    render,
)
from convstore.transcript.media_placement import MAX_TEXT_DOCUMENT_CHARS, document_text
from tests.providers.conversations import PDF, PNG, TARGET_MODELS
from tests.support.wire_rules import check_payload, media_in_payload

CSV = "city,temp_c\nOslo,-3\nLisbon,19\nZürich,4\n".encode()
MARKDOWN = "# Plan\n\n- day 1: **Alfama**\n- day 2: Belém\n".encode()
JSON_DOC = json.dumps({"rooms": [{"id": 7, "free": True}], "note": "café"}).encode()
RESULT_CSV = b"id,status\n1,ok\n2,late\n"

DOCUMENTS = [
    ("trips.csv", "text/csv", CSV),
    ("plan.md", "text/markdown", MARKDOWN),
    ("rooms.json", "application/json", JSON_DOC),
]


def _history() -> list[Message]:
    return [
        Message.user(
            "Here are my files.",
            *[FilePart.from_bytes(d, media_type=t, filename=n) for n, t, d in DOCUMENTS],
        ),
        Message.assistant(ToolCallPart(id="call_1", name="export", arguments={})),
        Message.tool_result(
            "call_1",
            ContentOutput(
                parts=[
                    TextPart(text="Export done."),
                    *[
                        FilePart.from_bytes(d, media_type=t, filename=f"result-{n}")
                        for n, t, d in [*DOCUMENTS, ("status.csv", "text/csv", RESULT_CSV)]
                    ],
                ]
            ),
        ),
        Message.assistant("Read them all."),
    ]


def _strings(value: object) -> Iterator[str]:
    """Every string in a payload (strings holding JSON text are searched too)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value
        if value[:1] in ("{", "["):
            with contextlib.suppress(ValueError):
                yield from _strings(json.loads(value))


def _reaches(payload: dict[str, object], data: bytes) -> bool:
    """The document's text is in the payload, or its bytes are (a native document slot)."""
    if any(data.decode() in text for text in _strings(payload)):
        return True
    encoded = base64.b64encode(data).decode()
    return any(encoded in chunk for chunk in media_in_payload(payload))


@pytest.mark.parametrize(("target", "model"), TARGET_MODELS)
async def test_csv_markdown_and_json_reach_every_target(
    target: str, model: str, store: ConversationStore
) -> None:
    conversation = await store.create_conversation()
    await store.append(conversation.id, _history())
    rendered = await store.render(conversation.id, target, model=model)
    check_payload(target, model, rendered.payload)
    for _, _, data in [*DOCUMENTS, ("status.csv", "text/csv", RESULT_CSV)]:
        assert _reaches(rendered.payload, data), f"{target}: a document did not arrive"
    placements = {note.placement for note in rendered.diagnostics.media}
    assert "text_note" not in placements
    labels = json.dumps(rendered.payload, ensure_ascii=False)
    assert "[file trips.csv (text/csv)]" in labels or target == "gemini"


def test_a_document_is_labelled_and_bounded() -> None:
    big = ("x" * 99 + "\n").encode() * (MAX_TEXT_DOCUMENT_CHARS // 50)
    text, shortened = document_text(big, media_type="text/plain", name="log.txt")
    assert shortened
    assert text.startswith("[file log.txt (text/plain)]\n")
    assert "continues: about" in text and len(text) < MAX_TEXT_DOCUMENT_CHARS + 200
    small, shortened = document_text("é\n".encode(), media_type="text/csv", name="a.csv")
    assert not shortened and small == "[file a.csv (text/csv)]\né\n\n[end of file a.csv]"


def test_a_document_cut_mid_character_is_not_garbled() -> None:
    data = "é".encode() * MAX_TEXT_DOCUMENT_CHARS * 2
    text, shortened = document_text(data, media_type="text/plain", name="e.txt")
    assert shortened and "\ufffd" not in text


def test_kimi_says_it_cannot_take_a_pdf() -> None:
    history = [Message.user("Read this", FilePart.from_bytes(PDF, filename="a.pdf"))]
    rendered = render(history, "kimi", model="kimi-k2.5")
    assert "kimi cannot take this type" in json.dumps(rendered.payload)
    (note,) = rendered.diagnostics.media
    assert note.placement == "text_note" and "cannot take application/pdf" in (note.reason or "")


@pytest.mark.parametrize(
    ("target", "model"),
    [
        ("kimi", "kimi-k2-thinking"),
        ("openai-chat", "gpt-3.5-turbo"),
        ("mistral", "codestral-latest"),
    ],
)
def test_a_text_only_model_gets_notes_for_images_and_text_for_documents(
    target: str, model: str
) -> None:
    assert capabilities_for(target, model).text_only
    history = [
        Message.user(
            "Look",
            FilePart.from_bytes(PNG, media_type="image/png"),
            FilePart.from_bytes(CSV, media_type="text/csv", filename="t.csv"),
        )
    ]
    rendered = render(history, target, model=model)
    check_payload(target, model, rendered.payload)
    text = json.dumps(rendered.payload, ensure_ascii=False)
    assert "this model reads text only" in text and "Oslo,-3" in text
    assert [n.placement for n in rendered.diagnostics.media] == ["text_note", "text"]
    assert not list(media_in_payload(rendered.payload))
