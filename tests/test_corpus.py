"""Ground truth: 71 requests providers accepted (tests/corpus, see its README).

For each: parse it from its own format, store it, render it back to the same provider and model
(every text, tool call and media item survives, calls in order) and render it to every other
target; every render must pass the target's rules and its SDK request types.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    parse,
)
from tests.providers.conversations import TARGET_MODELS
from tests.support.corpus import CORPUS_DIR
from tests.support.wire_rules import check_payload

CORPUS = CORPUS_DIR
RECORDS = sorted(CORPUS.glob("*.json"))
SOURCE = {"mistral": "openai-chat"}  # Mistral histories parse as Chat Completions
TARGET_PAYLOAD_KEYS = {"openai-responses": "input", "gemini": "contents"}


def test_the_corpus_is_there() -> None:
    assert len(RECORDS) == 71


@dataclass(frozen=True)
class Inventory:
    """What must survive a round trip: texts, calls in order, media by content."""

    texts: list[str]
    calls: list[tuple[str, str]]
    media: set[tuple[str, str]]


def _file_key(part: FilePart) -> tuple[str, str]:
    if part.data is not None:
        return part.media_type, hashlib.sha256(part.data).hexdigest()
    if part.attachment is not None:
        return part.media_type, part.attachment.sha256
    return part.media_type, part.uri or ""


def inventory(messages: list[Message]) -> Inventory:
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    media: set[tuple[str, str]] = set()

    def content(parts: list[Any]) -> None:
        for part in parts:
            if isinstance(part, TextPart) and part.text.strip():
                texts.append(part.text.strip())
            elif isinstance(part, FilePart):
                media.add(_file_key(part))

    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                arguments = part.raw_arguments or json.dumps(part.arguments, sort_keys=True)
                calls.append((part.name, arguments))
            elif isinstance(part, ToolResultPart):
                match part.output:
                    case JsonOutput(value=str() as value) if value.strip():
                        texts.append(value.strip())
                    case ErrorOutput(message=error) if error.strip():
                        texts.append(error.strip())
                    case ContentOutput(parts=parts):
                        content(parts)
            else:
                content([part])
    return Inventory(texts, calls, media)


def _unanswered(messages: list[Message]) -> set[str]:
    calls = {p.id for m in messages for p in m.tool_calls}
    return calls - {r.call_id for m in messages for r in m.tool_results}


def _record(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _target(api: str) -> str:
    return api  # every corpus api is also a render target


def _contains_in_order(haystack: str, needles: list[str]) -> None:
    position = 0
    for needle in needles:
        found = haystack.find(needle, position)
        assert found >= 0, f"text lost or out of order: {needle[:80]!r}"
        position = found + len(needle)


@pytest.fixture(scope="module")
def parsed() -> dict[str, list[Message]]:
    """Every corpus request, parsed once."""
    out = {}
    for path in RECORDS:
        record = _record(path)
        source = SOURCE.get(record["api"], record["api"])
        out[path.name] = parse(record["request"], source, model=record["model"])
    return out


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
async def test_corpus_request_survives_storage_and_renders_everywhere(
    path: Path, store: ConversationStore, parsed: dict[str, list[Message]]
) -> None:
    record = _record(path)
    api, model = record["api"], record["model"]
    messages = parsed[path.name]
    assert messages, "a corpus request parses to messages"
    conversation = await store.create_conversation(title=path.stem)
    await store.append(conversation.id, messages, on_conflict="keep-first")

    # Back to its own provider and model: everything survives.
    own = await store.render(conversation.id, _target(api), model=model)
    check_payload(api, model, own.payload)
    before = inventory(messages)
    after = inventory(parse(own.payload, SOURCE.get(api, api)))
    assert after.calls == before.calls
    _contains_in_order("\n".join(after.texts), before.texts)
    assert before.media <= after.media
    unanswered = _unanswered(messages)
    assert {s.call_id for s in own.diagnostics.synthetic_results} == unanswered

    # To every other target: valid, with calls and media kept where the target can take them.
    for target, other_model in TARGET_MODELS:
        if (target, other_model) == (api, model):
            continue
        rendered = await store.render(conversation.id, target, model=other_model)
        check_payload(target, other_model, rendered.payload)
        assert len(rendered.diagnostics.canonical_call_ids) == len(before.calls)
        placed = {m.label for m in rendered.diagnostics.media if m.placement != "text_note"}
        noted = {m.label for m in rendered.diagnostics.media if m.placement == "text_note"}
        assert len(placed | noted) == len({sha for _, sha in before.media})
