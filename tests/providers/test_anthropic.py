"""The Anthropic Messages provider: parse, parse_response and encode.

Ground truth is the accepted corpus (requests Anthropic answered with HTTP 200); encoded payloads
are also checked against the official SDK's request types, forced to validate completely (its
``Iterable`` fields validate lazily) and, because its TypedDicts ignore unknown keys, against the
exact key sets of every block.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import MessageParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from hypothesis import HealthCheck, given, settings
from pydantic import TypeAdapter

import convstore
from convstore.capabilities import capabilities_for
from convstore.errors import ConvstoreError, MalformedPayloadError
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from convstore.providers import anthropic
from convstore.transcript.diagnostics import Diagnostics
from convstore.transcript.plan import (
    AssistantTurn,
    Call,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    Plan,
    Reasoning,
    Result,
    Text,
    ToolTurn,
    Turn,
    UserTurn,
)
from convstore.transcript.planner import plan_messages
from tests.fuzz import Mutant, mutants, seeds
from tests.support.corpus import corpus_guard
from tests.support.corpus import corpus_records as load_records
from tests.support.wire_rules import check_payload

from .conversations import CASES, TARGET_MODELS

CORPUS = load_records("anthropic")
pytestmark = corpus_guard(CORPUS, "anthropic")


def corpus(name: str) -> dict[str, Any]:
    return next(r for r in CORPUS if r["name"] == name)


corpus_records = pytest.mark.parametrize("record", CORPUS, ids=[r["name"] for r in CORPUS])

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"
MODEL = "claude-sonnet-4-5"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# --------------------------------------------------------------------------------------------
# Validation of encoded payloads
# --------------------------------------------------------------------------------------------

_MESSAGE = TypeAdapter(MessageParam)
_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)

_BLOCK_KEYS: dict[str, tuple[set[str], set[str]]] = {
    # type: (required keys, optional keys) of what encode may emit
    "text": ({"type", "text"}, set()),
    "image": ({"type", "source"}, set()),
    "document": ({"type", "source"}, {"title"}),
    "thinking": ({"type", "thinking", "signature"}, set()),
    "redacted_thinking": ({"type", "data"}, set()),
    "tool_use": ({"type", "id", "name", "input"}, set()),
    "tool_result": ({"type", "tool_use_id", "is_error"}, {"content"}),
}
_SOURCE_KEYS = {
    "base64": {"type", "media_type", "data"},
    "url": {"type", "url"},
    "text": {"type", "media_type", "data"},
}


def _force(value: Any) -> Any:
    """Walk a validated value so that lazily validated iterables are validated too."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_force(v) for v in value]
    return value


def _check_block(block: dict[str, Any], *, role: str, in_result: bool = False) -> None:
    kind = block["type"]
    required, optional = _BLOCK_KEYS[kind]
    assert required <= block.keys() <= required | optional, block.keys()
    if kind == "text":
        assert block["text"], "empty text block"
    if kind in ("image", "document"):
        assert role == "user", f"{kind} block in an {role} message"
        source = block["source"]
        assert source.keys() == _SOURCE_KEYS[source["type"]]
        if source["type"] == "base64":
            base64.b64decode(source["data"], validate=True)
    if kind in ("thinking", "redacted_thinking", "tool_use"):
        assert role == "assistant"
        assert not in_result
    if kind == "tool_result":
        assert role == "user"
        assert not in_result
        content = block.get("content")
        assert content is None or isinstance(content, str | list)
        assert content != []
        assert content != ""
        if isinstance(content, list):
            for inner in content:
                assert inner["type"] in ("text", "image", "document")
                _check_block(inner, role=role, in_result=True)


def assert_valid(payload: dict[str, Any]) -> None:
    """The payload is a request Anthropic accepts, as far as its shape can tell."""
    assert set(payload) <= {"messages", "system"}
    _force(_REQUEST.validate_python({"model": MODEL, "max_tokens": 1024, **payload}))
    system = payload.get("system")
    if system is not None:
        assert system
        assert isinstance(system, str) or all(b["text"] for b in system)
    messages = payload["messages"]
    assert messages
    assert messages[0]["role"] == "user"
    for index, message in enumerate(messages):
        _force(_MESSAGE.validate_python(message))
        assert message.keys() == {"role", "content"}
        assert message["role"] in ("user", "assistant")
        if index:
            assert message["role"] != messages[index - 1]["role"], "roles must alternate"
        blocks = message["content"]
        assert isinstance(blocks, list)
        assert blocks
        for block in blocks:
            _check_block(block, role=message["role"])
        kinds = [b["type"] for b in blocks]
        if "tool_result" in kinds:
            first_other = next((i for i, k in enumerate(kinds) if k != "tool_result"), len(kinds))
            assert "tool_result" not in kinds[first_other:], "tool results come first"
        if any(k in ("thinking", "redacted_thinking") for k in kinds):
            assert kinds[0] in ("thinking", "redacted_thinking"), "thinking comes first"
            assert kinds[-1] not in ("thinking", "redacted_thinking")


def test_the_validator_rejects_what_anthropic_rejects() -> None:
    good = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert_valid(good)
    bad_payloads = [
        # media type the image block does not take (caught only when iterables are forced)
        [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/bmp", "data": "aGk="},
            }
        ],
        [{"type": "text", "text": ""}],
        [{"type": "text", "text": "hi", "unknown": 1}],
    ]
    for content in bad_payloads:
        with pytest.raises(Exception):  # noqa: PT011 - pydantic or assertion, either is a refusal
            assert_valid({"messages": [{"role": "user", "content": content}]})


# --------------------------------------------------------------------------------------------
# parse: every corpus request and response
# --------------------------------------------------------------------------------------------


def _expected_roles(request: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Roles and part kinds parse must produce, derived from the wire independently."""
    kinds = {
        "text": "text",
        "image": "file",
        "document": "file",
        "thinking": "thinking",
        "redacted_thinking": "thinking",
        "tool_use": "tool_call",
    }
    expected: list[tuple[str, list[str]]] = []
    if request.get("system"):
        expected.append(("system", ["text"]))
    for message in request["messages"]:
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        results = [b for b in blocks if b["type"] == "tool_result"]
        rest = [kinds[b["type"]] for b in blocks if b["type"] != "tool_result"]
        if results:
            expected.append(("tool", ["tool_result"] * len(results)))
        if rest or not results:
            expected.append((message["role"], rest))
    return expected


def _wire_blocks(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for message in request["messages"]:
        if isinstance(message["content"], list):
            for block in message["content"]:
                yield block
                if block["type"] == "tool_result" and isinstance(block.get("content"), list):
                    yield from block["content"]


def _parts(messages: Sequence[Message]) -> Iterator[Any]:
    for message in messages:
        for part in message.parts:
            yield part
            if isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
                yield from part.output.parts


@corpus_records
def test_parse_every_corpus_request(record: dict[str, Any]) -> None:
    request = record["request"]
    messages = anthropic.parse(request)

    assert [(m.role.value, [p.kind for p in m.parts]) for m in messages] == _expected_roles(request)
    if request.get("system"):
        assert messages[0].text == request["system"]
    for message in messages:
        if message.role is Role.ASSISTANT:
            assert (message.provider, message.model) == ("anthropic", record["model"])

    wire = list(_wire_blocks(request))
    parts = list(_parts(messages))
    # calls: ids kept as canonical and provider ids, arguments verbatim
    wire_calls = [b for b in wire if b["type"] == "tool_use"]
    calls = [p for p in parts if isinstance(p, ToolCallPart)]
    assert [(c.id, c.provider_id, c.name, c.arguments) for c in calls] == [
        (b["id"], b["id"], b["name"], b["input"]) for b in wire_calls
    ]
    # results answer their calls, with their tool's name
    wire_results = [b for b in wire if b["type"] == "tool_result"]
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    names = {c.id: c.name for c in calls}
    assert [(r.call_id, r.name, r.is_error) for r in results] == [
        (b["tool_use_id"], names[b["tool_use_id"]], b["is_error"]) for b in wire_results
    ]
    # media: same bytes (by length and hash) and types, or the same URL
    wire_media = [b for b in wire if b["type"] in ("image", "document")]
    files = [p for p in parts if isinstance(p, FilePart)]
    assert len(files) == len(wire_media)
    for block, file in zip(wire_media, files, strict=True):
        source = block["source"]
        if source["type"] == "base64":
            data = base64.b64decode(source["data"])
            assert (file.media_type, file.data) == (source["media_type"], data)
        else:
            assert (file.uri, file.data) == (source["url"], None)
    # reasoning artefacts kept verbatim
    wire_thinking = [b for b in wire if b["type"] in ("thinking", "redacted_thinking")]
    thinking = [p for p in parts if isinstance(p, ThinkingPart)]
    assert [(t.text, t.signature, t.redacted_data) for t in thinking] == [
        (b.get("thinking", ""), b.get("signature"), b.get("data")) for b in wire_thinking
    ]
    assert all((t.provider, t.model) == ("anthropic", record["model"]) for t in thinking)


@corpus_records
def test_parse_every_corpus_response(record: dict[str, Any]) -> None:
    body = record["response"]
    message = anthropic.parse_response(body)

    assert message.role is Role.ASSISTANT
    assert (message.provider, message.model) == ("anthropic", body["model"])
    assert message.provider_details == {
        "response_id": body["id"],
        "stop_reason": body["stop_reason"],
    }
    kinds = {"text": "text", "thinking": "thinking", "redacted_thinking": "thinking"}
    kinds["tool_use"] = "tool_call"
    assert [p.kind for p in message.parts] == [kinds[b["type"]] for b in body["content"]]
    for block, part in zip(body["content"], message.parts, strict=True):
        match part:
            case TextPart():
                assert part.text == block["text"]
            case ThinkingPart():
                assert part.text == block.get("thinking", "")
                assert part.signature == block.get("signature")
                assert part.redacted_data == block.get("data")
                assert (part.provider, part.model) == ("anthropic", body["model"])
            case ToolCallPart():
                assert (part.id, part.provider_id) == (block["id"], block["id"])
                assert (part.name, part.arguments) == (block["name"], block["input"])
                caller = block.get("caller")
                assert part.provider_details == ({"caller": caller} if caller else None)
            case _:
                pytest.fail(f"unexpected {part.kind}")


def test_parallel_calls_become_one_tool_message_in_call_order() -> None:
    messages = anthropic.parse(corpus("test_multiple_parallel_tool_calls--1")["request"])
    system, _, assistant, tool = messages
    assert system.role is Role.SYSTEM
    assert "retrieve_entity_info" in system.text
    assert [c.arguments["name"] for c in assistant.tool_calls] == [
        "Alice",
        "Bob",
        "Charlie",
        "Daisy",
    ]
    assert [r.call_id for r in tool.tool_results] == [c.id for c in assistant.tool_calls]
    assert tool.tool_results[0].output == JsonOutput(value="alice is bob's wife")


def test_image_only_tool_result_is_content_output() -> None:
    record = corpus("test_multimodal_tool_return_matrix-direct-binary-image-anthropic--1")
    *_, tool = anthropic.parse(record["request"])
    (result,) = tool.tool_results
    assert isinstance(result.output, ContentOutput)
    (image,) = result.output.parts
    assert isinstance(image, FilePart)
    assert image.media_type == "image/jpeg"
    assert image.data is not None
    assert len(image.data) == 98_572
    assert image.data.startswith(b"\xff\xd8\xff")


def test_pdf_tool_result_keeps_bytes_and_type() -> None:
    record = corpus("test_multimodal_tool_return_matrix-direct-binary-document-anthropic--1")
    *_, tool = anthropic.parse(record["request"])
    (pdf,) = tool.tool_results[0].output.files  # type: ignore[union-attr]
    assert pdf.media_type == "application/pdf"
    assert pdf.data is not None
    assert pdf.data.startswith(b"%PDF-1.4")
    assert len(pdf.data) == 13_264


def test_mixed_result_keeps_text_and_image_order() -> None:
    *_, tool = anthropic.parse(corpus("test_mixed_content_ordering-anthropic--1")["request"])
    output = tool.tool_results[0].output
    assert isinstance(output, ContentOutput)
    assert [p.kind for p in output.parts] == ["text", "file", "text"]
    assert output.parts[2] == TextPart(text='{"pydantic_ai_marker":"test_42"}')  # JSON stays text


def test_several_images_base64_and_url() -> None:
    *_, tool = anthropic.parse(corpus("test_model_sees_multiple_images-anthropic--1")["request"])
    inline, url = tool.tool_results[0].output.files  # type: ignore[union-attr]
    assert inline.media_type == "image/jpeg"
    assert inline.data is not None
    assert url.uri == "https://www.gstatic.com/webp/gallery3/1.png"
    assert url.media_type == "image/png"


def test_signed_and_redacted_thinking_are_kept() -> None:
    record = corpus("test_anthropic_tool_with_thinking--1")
    _, assistant, _ = anthropic.parse(record["request"])
    thinking = assistant.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signed
    assert thinking.signature == record["request"]["messages"][1]["content"][0]["signature"]

    record = corpus("test_anthropic_model_thinking_part_redacted--1")
    _, assistant, _ = anthropic.parse(record["request"])
    redacted = assistant.parts[0]
    assert isinstance(redacted, ThinkingPart)
    assert redacted.text == ""
    assert redacted.signed
    assert redacted.redacted_data == record["request"]["messages"][1]["content"][0]["data"]


def test_converted_reasoning_from_another_model_stays_text() -> None:
    record = corpus("test_anthropic_model_thinking_part_from_other_model--1")
    _, _, assistant, _ = anthropic.parse(record["request"])
    assert all(isinstance(p, TextPart) for p in assistant.parts)
    assert assistant.parts[0].text.startswith("<thinking>")  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# parse: shapes beyond the corpus
# --------------------------------------------------------------------------------------------


def _user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def _assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def _text(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **extra}


def _tool_use(id_: str, name: str = "lookup", **input_: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": input_}


def _tool_result(id_: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": id_, **extra}
    if content is not None:
        block["content"] = content
    return block


def _image(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": b64(data)},
    }


def test_string_content_and_system_blocks() -> None:
    messages = anthropic.parse(
        {
            "model": "claude-x",
            "system": [_text("one", cache_control={"type": "ephemeral"}), _text("two")],
            "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
            ],
        }
    )
    system, user, assistant = messages
    assert system == Message(role=Role.SYSTEM, parts=[TextPart(text="one"), TextPart(text="two")])
    assert user == Message.user("hello")
    assert assistant == Message.assistant("hi", provider="anthropic", model="claude-x")


def test_system_role_message_and_empty_system_prompt() -> None:
    messages = anthropic.parse(
        {"system": "", "messages": [{"role": "system", "content": "be brief"}, _user(_text("x"))]}
    )
    assert [m.role for m in messages] == [Role.SYSTEM, Role.USER]
    assert messages[0].text == "be brief"


def test_tool_results_go_before_the_rest_of_the_user_message() -> None:
    messages = anthropic.parse(
        {
            "messages": [
                _user(_text("go")),
                _assistant(_tool_use("toolu_a"), _tool_use("toolu_b")),
                # text first on the wire: invalid for Anthropic, but stored histories have it
                _user(_text("and then?"), _tool_result("toolu_a"), _tool_result("toolu_b", "2")),
            ]
        }
    )
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]
    assert [r.call_id for r in messages[2].tool_results] == ["toolu_a", "toolu_b"]
    assert messages[3].text == "and then?"


def test_citations_and_cache_control_are_ignored() -> None:
    (message,) = anthropic.parse(
        {
            "messages": [
                _assistant(
                    _text("cited", citations=[{"type": "char_location", "cited_text": "x"}]),
                    {**_tool_use("toolu_1"), "cache_control": {"type": "ephemeral"}},
                )
            ]
        }
    )
    assert message.text == "cited"
    assert message.tool_calls[0].id == "toolu_1"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, JsonOutput(value="")),
        ("plain", JsonOutput(value="plain")),
        ('{"a": 1}', JsonOutput(value='{"a": 1}')),  # JSON text stays a string: no guessing
        ([_text("a"), _text("b")], JsonOutput(value="a\nb")),
    ],
)
def test_text_only_results_are_json_strings(content: Any, expected: JsonOutput) -> None:
    messages = anthropic.parse(
        {"messages": [_assistant(_tool_use("t1")), _user(_tool_result("t1", content))]}
    )
    assert messages[1].tool_results[0].output == expected


def test_error_results() -> None:
    messages = anthropic.parse(
        {
            "messages": [
                _assistant(_tool_use("t1"), _tool_use("t2"), _tool_use("t3")),
                _user(
                    _tool_result("t1", "boom", is_error=True),
                    _tool_result("t2", [_text("bad"), _image(PNG)], is_error=True),
                    _tool_result("t3", None, is_error=True),
                ),
            ]
        }
    )
    outputs = [r.output for r in messages[1].tool_results]
    assert outputs == [
        ErrorOutput(message="boom"),
        ErrorOutput(message="bad", details={"omitted": ["image/png"]}),
        ErrorOutput(message=""),
    ]
    assert all(r.is_error for r in messages[1].tool_results)


def test_documents_of_every_source() -> None:
    (message,) = anthropic.parse(
        {
            "messages": [
                _user(
                    {
                        "type": "document",
                        "title": "notes.txt",
                        "context": "ignored",
                        "citations": {"enabled": True},
                        "source": {"type": "text", "media_type": "text/plain", "data": "héllo"},
                    },
                    {"type": "document", "source": {"type": "url", "url": "https://x.test/doc"}},
                    {
                        "type": "document",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": b64(PDF),
                        },
                    },
                    {
                        "type": "document",
                        "source": {"type": "content", "content": [_text("c1"), _image(PNG)]},
                    },
                    {"type": "document", "source": {"type": "file", "file_id": "file_123"}},
                    {"type": "image", "source": {"type": "url", "url": "https://x.test/a.webp"}},
                )
            ]
        }
    )
    text, url, pdf, c1, c_image, file_ref, image_url = message.parts
    assert text == FilePart(data="héllo".encode(), media_type="text/plain", filename="notes.txt")
    assert (url.uri, url.media_type) == ("https://x.test/doc", "application/pdf")  # type: ignore[union-attr]
    assert (pdf.data, pdf.media_type) == (PDF, "application/pdf")  # type: ignore[union-attr]
    assert c1 == TextPart(text="c1")
    assert (c_image.data, c_image.media_type) == (PNG, "image/png")  # type: ignore[union-attr]
    assert file_ref == TextPart(
        text="",
        provider_details={
            anthropic.OPAQUE_BLOCK_KEY: {
                "type": "document",
                "source": {"type": "file", "file_id": "file_123"},
            }
        },
    )
    assert (image_url.uri, image_url.media_type) == ("https://x.test/a.webp", "image/webp")  # type: ignore[union-attr]


def test_the_bytes_decide_when_they_contradict_the_declared_type() -> None:
    (message,) = anthropic.parse({"messages": [_user(_image(JPEG, "image/png"))]})
    (jpeg,) = message.parts
    assert (jpeg.media_type, jpeg.data) == ("image/jpeg", JPEG)  # type: ignore[union-attr]
    # A declared type whose mandatory signature the bytes lack was never accepted: malformed.
    with pytest.raises(MalformedPayloadError, match="contradicted"):
        anthropic.parse({"messages": [_user(_image(b"not an image", "image/gif"))]})


def test_server_tool_blocks_are_kept_verbatim_and_never_rendered() -> None:
    server_use = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "weather"},
    }
    search_result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://x.test", "title": "X"}],
    }
    messages = anthropic.parse(
        {
            "model": MODEL,
            "messages": [
                _user(_text("weather?")),
                _assistant(server_use, search_result, _text("Sunny.")),
            ],
        }
    )
    assistant = messages[1]
    assert [p.provider_details for p in assistant.parts[:2] if isinstance(p, TextPart)] == [
        {anthropic.OPAQUE_BLOCK_KEY: server_use},
        {anthropic.OPAQUE_BLOCK_KEY: search_result},
    ]
    assert [p.text for p in assistant.parts if isinstance(p, TextPart)] == ["", "", "Sunny."]
    payload = anthropic.encode(plan_messages(messages, target="anthropic", model=MODEL))
    assert payload["messages"][1] == {"role": "assistant", "content": [_text("Sunny.")]}


def test_opaque_blocks_inside_results_make_content_output() -> None:
    reference = {"type": "search_result", "source": "s", "title": "t", "content": [_text("c")]}
    messages = anthropic.parse(
        {
            "messages": [
                _assistant(_tool_use("t1")),
                _user(_tool_result("t1", [_text("a"), reference])),
            ]
        }
    )
    output = messages[1].tool_results[0].output
    assert isinstance(output, ContentOutput)
    assert output.parts[1].provider_details == {anthropic.OPAQUE_BLOCK_KEY: reference}  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------
# parse: histories as applications stored them
# --------------------------------------------------------------------------------------------


def test_invalid_histories_parse_without_repair() -> None:
    messages = anthropic.parse(
        {
            "messages": [
                _assistant(_text("I start")),  # assistant first
                _assistant(_tool_use("toolu_orphan_call")),  # a call never answered
                _user(_text("one")),
                _user(_text("two")),  # same-role run
                _assistant(_tool_use("toolu_1")),
                _user(_tool_result("toolu_1", "first")),
                _user(_tool_result("toolu_1", "again")),  # a duplicate result
                _user(_tool_result("toolu_unknown", "who?")),  # a result with no call
            ]
        }
    )
    roles = [m.role for m in messages]
    assert roles == [Role.ASSISTANT] * 2 + [Role.USER] * 2 + [Role.ASSISTANT] + [Role.TOOL] * 3
    duplicate, again, orphan = (m.tool_results[0] for m in messages[5:])
    assert duplicate.call_id == again.call_id == "toolu_1"
    assert again.output == JsonOutput(value="again")
    assert (orphan.call_id, orphan.name) == ("toolu_unknown", None)


def test_reused_provider_ids_get_distinct_canonical_ids() -> None:
    messages = anthropic.parse(
        {
            "messages": [
                _assistant(_tool_use("toolu_x")),
                _user(_tool_result("toolu_x", "1")),
                _assistant(_tool_use("toolu_x")),
                _user(_tool_result("toolu_x", "2")),
            ]
        }
    )
    first, second = messages[0].tool_calls[0], messages[2].tool_calls[0]
    assert (first.id, second.id) == ("toolu_x", "toolu_x~2")
    assert second.provider_id == "toolu_x"
    assert [m.tool_results[0].call_id for m in messages[1::2]] == ["toolu_x", "toolu_x~2"]


def test_unparseable_arguments_are_kept_raw() -> None:
    (message,) = anthropic.parse(
        {"messages": [_assistant({"type": "tool_use", "id": "t", "name": "f", "input": "{oops"})]}
    )
    assert (message.tool_calls[0].arguments, message.tool_calls[0].raw_arguments) == ({}, "{oops")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "expected an object"),
        ({}, "missing 'messages'"),
        ({"messages": {}}, "expected an array"),
        ({"messages": ["hi"]}, "expected an object"),
        ({"messages": [{"content": "x"}]}, "missing 'role'"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "unknown role 'tool'"),
        ({"messages": [{"role": "user"}]}, "missing 'content'"),
        ({"messages": [{"role": "user", "content": 3}]}, "expected an array"),
        ({"messages": [_user({"text": "x"})]}, "missing 'type'"),
        ({"messages": [_user({"type": 1})]}, "expected a string"),
        ({"messages": [_user({"type": "text", "text": 2})]}, "expected a string"),
        (
            {"messages": [_user({"type": "image", "source": {"type": "base64", "data": "@@"}})]},
            "base64",
        ),
        ({"messages": [_user({"type": "image"})]}, "missing 'source'"),
        ({"messages": [_user({"type": "image", "source": {"type": "url"}})]}, "missing 'url'"),
        ({"messages": [_assistant({"type": "tool_use", "name": "f"})]}, "missing 'id'"),
        ({"messages": [_assistant({"type": "tool_use", "id": "t"})]}, "missing 'name'"),
        (
            {"messages": [_assistant({"type": "tool_use", "id": "t", "name": "f", "input": 3})]},
            "object",
        ),
        ({"messages": [_assistant({"type": "thinking", "signature": "s"})]}, "missing 'thinking'"),
        ({"messages": [_assistant({"type": "redacted_thinking"})]}, "missing 'data'"),
        ({"messages": [_user({"type": "tool_result"})]}, "missing 'tool_use_id'"),
        ({"messages": [_user(_tool_result("t", is_error="yes"))]}, "expected a boolean"),
        ({"messages": [_user(_tool_result("t", 5))]}, "expected an array"),
        ({"messages": [_assistant(_tool_result("t"))]}, "cannot appear in an assistant message"),
        ({"messages": [_user(_tool_use("t"))]}, "cannot appear in a user message"),
        ({"messages": [_user({"type": "thinking", "thinking": "x"})]}, "cannot appear in a user"),
        ({"system": [_image(PNG)], "messages": []}, "text blocks only"),
        ({"system": 3, "messages": []}, "expected an array"),
        ({"model": 4, "messages": []}, "expected a string"),
    ],
)
def test_malformed_payloads_raise(payload: Any, message: str) -> None:
    with pytest.raises(MalformedPayloadError, match=message):
        anthropic.parse(payload)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "expected an object"),
        ({"type": "error", "error": {"type": "overloaded_error"}}, "got type 'error'"),
        ({"type": "message", "role": "user", "content": []}, "role 'assistant'"),
        ({"type": "message", "role": "assistant"}, "missing 'content'"),
        ({"content": [_tool_result("t")]}, "cannot appear in an assistant message"),
    ],
)
def test_malformed_responses_raise(body: Any, message: str) -> None:
    with pytest.raises(MalformedPayloadError, match=message):
        anthropic.parse_response(body)


_MUTATION_SEEDS = [
    seed
    for kind in ("request", "response")
    for seed in seeds().get(("anthropic", kind), ())
    if seed.name
    in (
        "test_anthropic_tool_with_thinking--1",
        "test_multiple_parallel_tool_calls--1",
        "test_anthropic_model_thinking_part_redacted--1",
        "test_multimodal_tool_return_matrix-direct-binary-document-anthropic--1",
    )
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants(_MUTATION_SEEDS))
def test_mutated_corpus_payloads_raise_only_convstore_errors(mutant: Mutant) -> None:
    """Only convstore errors escape; whatever does parse also renders to a valid request."""
    payload = mutant.payload
    for parse in (anthropic.parse, anthropic.parse_response):
        try:
            parsed = parse(payload)
        except ConvstoreError:
            continue
        history = parsed if isinstance(parsed, list) else [parsed]
        rendered = anthropic.encode(plan_messages(history, target="anthropic", model=MODEL))
        if rendered["messages"]:
            assert_valid(rendered)


# --------------------------------------------------------------------------------------------
# encode: hand-built plans
# --------------------------------------------------------------------------------------------


def make_plan(*turns: Turn, system: Sequence[str] = ()) -> Plan:
    return Plan(
        target="anthropic",
        model=MODEL,
        capabilities=capabilities_for("anthropic", MODEL),
        diagnostics=Diagnostics(target="anthropic", model=MODEL),
        system=list(system),
        turns=list(turns),
    )


def call(n: int, **arguments: Any) -> Call:
    return Call(
        call_id=f"c{n}",
        wire_id=f"toolu_{n}",
        name="lookup",
        wire_name="lookup",
        arguments=arguments,
    )


def signed(text: str = "hmm", signature: str = "sig") -> Reasoning:
    return Reasoning(
        ThinkingPart(text=text, signature=signature, provider="anthropic", model=MODEL)
    )


def not_about_thinking(notes: list[str]) -> list[str]:
    """Notes other than the open-tool-loop warning (which any plan ending in results gets)."""
    return [n for n in notes if "enables thinking" not in n]


def encoded(plan: Plan) -> dict[str, Any]:
    payload = anthropic.encode(plan)
    assert_valid(payload)
    return payload


def test_text_turns_and_a_single_system_prompt() -> None:
    payload = encoded(
        make_plan(
            UserTurn([Text("hi")]),
            AssistantTurn([Text("hello")]),
            UserTurn([Text("bye")]),
            system=["be kind"],
        )
    )
    assert payload == {
        "system": "be kind",
        "messages": [
            {"role": "user", "content": [_text("hi")]},
            {"role": "assistant", "content": [_text("hello")]},
            {"role": "user", "content": [_text("bye")]},
        ],
    }


def test_several_system_prompts_stay_separate_blocks() -> None:
    payload = encoded(make_plan(UserTurn([Text("hi")]), system=["one", "", "two"]))
    assert payload["system"] == [_text("one"), _text("two")]
    assert "system" not in encoded(make_plan(UserTurn([Text("hi")]), system=[""]))


def test_tool_results_lead_the_next_user_message_in_call_order() -> None:
    first, second = call(1, q="a"), call(2, q="b")
    plan = make_plan(
        UserTurn([Text("go")]),
        AssistantTurn([Text("calling"), first, second]),
        ToolTurn([Result(first, JsonBody("A")), Result(second, JsonBody({"n": 2, "s": "é"}))]),
        UserTurn([Text("thanks")]),
    )
    payload = encoded(plan)
    assert payload["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                _text("calling"),
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"q": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "A",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": '{"n":2,"s":"é"}',
                    "is_error": False,
                },
                _text("thanks"),
            ],
        },
    ]
    # a tool turn and its user turn are one message by design: nothing to note about that
    assert not_about_thinking(plan.diagnostics.notes) == []


@pytest.mark.parametrize(
    ("body", "content", "is_error"),
    [
        (ErrorBody("it broke"), "it broke", True),
        (ContentBody([Text("line 1"), Text("line 2")]), "line 1\nline 2", False),
        (JsonBody(["a", 1]), '["a",1]', False),
        (JsonBody(""), None, False),  # never an empty string: the content is left out
    ],
)
def test_text_only_results_are_strings(body: Any, content: str | None, is_error: bool) -> None:
    the_call = call(1)
    payload = encoded(
        make_plan(
            UserTurn([Text("go")]), AssistantTurn([the_call]), ToolTurn([Result(the_call, body)])
        )
    )
    (block,) = payload["messages"][2]["content"]
    expected = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": is_error}
    if content is not None:
        expected["content"] = content
    assert block == expected


def test_media_results_are_native_blocks() -> None:
    the_call = call(1)
    body = ContentBody(
        [
            Text("Here:"),
            Media("image/png", data=PNG, label="aaa"),
            Media("image/webp", uri="https://x.test/i.webp"),
            Media("application/pdf", data=PDF, filename="report.pdf"),
            Media("application/pdf", uri="https://x.test/r.pdf"),
            Media("text/plain", data="plain ✓".encode()),
        ]
    )
    plan = make_plan(
        UserTurn([Text("go")]), AssistantTurn([the_call]), ToolTurn([Result(the_call, body)])
    )
    (block,) = encoded(plan)["messages"][2]["content"]
    assert block["content"] == [
        _text("Here:"),
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
        },
        {"type": "image", "source": {"type": "url", "url": "https://x.test/i.webp"}},
        {
            "type": "document",
            "title": "report.pdf",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
        },
        {"type": "document", "source": {"type": "url", "url": "https://x.test/r.pdf"}},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain ✓"},
        },
    ]
    assert plan.diagnostics.media == []
    assert not_about_thinking(plan.diagnostics.notes) == []


def test_an_image_alone_is_a_valid_result() -> None:
    the_call = call(1)
    plan = make_plan(
        UserTurn([Text("go")]),
        AssistantTurn([the_call]),
        ToolTurn([Result(the_call, ContentBody([Media("image/jpeg", data=JPEG)]))]),
    )
    (block,) = encoded(plan)["messages"][2]["content"]
    assert [b["type"] for b in block["content"]] == ["image"]


def test_media_no_block_can_carry_becomes_a_recorded_text_note() -> None:
    the_call = call(1)
    plan = make_plan(
        UserTurn([Text("look"), Media("audio/wav", data=b"RIFF", label="f1")]),
        AssistantTurn([Media("image/png", data=PNG, label="f2"), the_call]),
        ToolTurn(
            [Result(the_call, ContentBody([Media("text/plain", uri="https://x.test/t.txt")]))]
        ),
    )
    messages = encoded(plan)["messages"]
    assert messages[0]["content"][1]["text"].startswith("[file f1 (audio/wav) omitted")
    assert messages[1]["content"][0]["text"].startswith("[file f2 (image/png) omitted")
    assert [(n.media_type, n.placement, n.call_id) for n in plan.diagnostics.media] == [
        ("audio/wav", "text_note", None),
        ("image/png", "text_note", None),
        ("text/plain", "text_note", "c1"),
    ]


def test_user_media_blocks() -> None:
    payload = encoded(
        make_plan(
            UserTurn(
                [
                    Text("see"),
                    Media("image/gif", data=b"GIF89a" + b"\x00" * 8),
                    Media("image/jpeg", uri="https://x.test/a.jpg"),
                    Media("application/pdf", data=PDF),
                    Media("text/plain", data=b"\xff\xfe bad", filename="log.txt", label="l1"),
                ]
            )
        )
    )
    kinds = [
        (b["type"], b.get("source", {}).get("type")) for b in payload["messages"][0]["content"]
    ]
    assert kinds == [
        ("text", None),
        ("image", "base64"),
        ("image", "url"),
        ("document", "base64"),
        ("document", "text"),
    ]
    last = payload["messages"][0]["content"][-1]
    assert last["title"] == "log.txt"
    assert last["source"]["data"].endswith(" bad")


def test_non_utf8_text_documents_are_noted() -> None:
    plan = make_plan(UserTurn([Media("text/plain", data=b"\xff", label="l1")]))
    encoded(plan)
    assert plan.diagnostics.notes == ["anthropic: file l1 is not UTF-8; invalid bytes replaced"]


def test_signed_and_redacted_reasoning_lead_the_assistant_message() -> None:
    redacted = Reasoning(ThinkingPart(redacted_data="opaque", provider="anthropic", model=MODEL))
    the_call = call(1)
    plan = make_plan(
        UserTurn([Text("q")]),
        AssistantTurn([signed("think", "s1"), redacted, Text("answer"), the_call]),
        ToolTurn([Result(the_call, JsonBody("r"))]),
    )
    assistant = encoded(plan)["messages"][1]["content"]
    assert assistant[:2] == [
        {"type": "thinking", "thinking": "think", "signature": "s1"},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    assert plan.diagnostics.notes == []  # the open tool loop starts with thinking


def test_reasoning_after_text_is_moved_first_and_noted() -> None:
    plan = make_plan(
        UserTurn([Text("q")]), AssistantTurn([Text("a"), signed("t1", "s1"), Text("b")])
    )
    content = encoded(plan)["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "text", "text"]
    assert plan.diagnostics.notes == [
        "anthropic: thinking blocks were moved to the start of an assistant message"
    ]


def test_unsigned_reasoning_is_dropped_and_noted() -> None:
    unsigned = Reasoning(ThinkingPart(text="t", provider="anthropic", model=MODEL))
    plan = make_plan(UserTurn([Text("q")]), AssistantTurn([unsigned, Text("a")]))
    assert encoded(plan)["messages"][1]["content"] == [_text("a")]
    (note,) = plan.diagnostics.reasoning
    assert (note.action, note.reason) == ("dropped", "a thinking block needs a signature")


def test_a_reasoning_only_turn_is_left_out_and_user_turns_join() -> None:
    plan = make_plan(UserTurn([Text("one")]), AssistantTurn([signed()]), UserTurn([Text("two")]))
    assert encoded(plan)["messages"] == [{"role": "user", "content": [_text("one"), _text("two")]}]
    assert plan.diagnostics.notes == [
        "anthropic: assistant turn 1 holds only thinking and was left out",
        "anthropic: consecutive user turns were sent as one message",
    ]


def test_consecutive_assistant_turns_are_one_message() -> None:
    plan = make_plan(
        UserTurn([Text("q")]), AssistantTurn([Text("a")]), AssistantTurn([signed(), Text("b")])
    )
    content = encoded(plan)["messages"][1]["content"]
    assert [b["type"] for b in content] == ["thinking", "text", "text"]
    assert (
        "anthropic: consecutive assistant turns were sent as one message" in plan.diagnostics.notes
    )


def test_non_object_arguments_are_sent_as_an_empty_input_and_noted() -> None:
    broken = Call(
        call_id="c1", wire_id="w1", name="f", wire_name="f", arguments={}, raw_arguments="[1"
    )
    plan = make_plan(
        UserTurn([Text("q")]), AssistantTurn([broken]), ToolTurn([Result(broken, JsonBody("r"))])
    )
    assert encoded(plan)["messages"][1]["content"][0]["input"] == {}
    assert any("not a JSON object" in n for n in plan.diagnostics.notes)


def test_an_open_tool_loop_without_thinking_is_noted() -> None:
    the_call = call(1)
    plan = make_plan(
        UserTurn([Text("q")]),
        AssistantTurn([the_call]),
        ToolTurn([Result(the_call, JsonBody("r"))]),
    )
    encoded(plan)
    (note,) = plan.diagnostics.notes
    assert "enables thinking" in note
    assert "thinking disabled" in note


# --------------------------------------------------------------------------------------------
# round trips through the planner
# --------------------------------------------------------------------------------------------


@corpus_records
def test_corpus_requests_round_trip_exactly(record: dict[str, Any]) -> None:
    request = record["request"]
    plan = plan_messages(anthropic.parse(request), target="anthropic", model=record["model"])
    payload = encoded(plan)
    assert payload["messages"] == request["messages"]
    assert payload.get("system") == request.get("system")
    assert plan.diagnostics.dropped_results == []
    assert plan.diagnostics.synthetic_results == []
    assert all(note.action == "kept" for note in plan.diagnostics.reasoning)


@corpus_records
def test_corpus_responses_render_back_as_the_next_assistant_message(record: dict[str, Any]) -> None:
    request, response = record["request"], record["response"]
    history = [*anthropic.parse(request), anthropic.parse_response(response)]
    # signatures are bound to the model that made them: the response names the dated model
    payload = encoded(plan_messages(history, target="anthropic", model=response["model"]))
    assistant = payload["messages"][len(request["messages"])]
    expected = [{k: v for k, v in b.items() if k != "caller"} for b in response["content"]]
    assert assistant == {"role": "assistant", "content": expected}


def test_round_trip_of_a_history_with_every_shape() -> None:
    request = {
        "model": MODEL,
        "system": "sys",
        "messages": [
            _user(
                _text("hi"),
                _image(PNG),
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "doc"},
                },
            ),
            _assistant(
                {"type": "thinking", "thinking": "plan", "signature": "sig"},
                _text("calling"),
                _tool_use("toolu_a", "read_file", path="a.png"),
                _tool_use("toolu_b", "fail"),
            ),
            _user(
                _tool_result("toolu_a", [_text("here"), _image(PNG)], is_error=False),
                _tool_result("toolu_b", "nope", is_error=True),
                _text("and?"),
            ),
            _assistant(_text("done")),
            _user(_text("bye")),
        ],
    }
    payload = encoded(plan_messages(anthropic.parse(request), target="anthropic", model=MODEL))
    assert payload["system"] == "sys"
    assert payload["messages"] == request["messages"]


def test_foreign_reasoning_is_not_replayed_as_thinking() -> None:
    history = [
        Message.user("q"),
        Message.assistant(
            ThinkingPart(text="openai thoughts", provider="openai", encrypted_content="e"),
            ThinkingPart(
                text="other claude", signature="s", provider="anthropic", model="claude-x"
            ),
            "answer",
            provider="openai",
        ),
        Message.user("next"),
    ]
    payload = encoded(plan_messages(history, target="anthropic", model=MODEL, reasoning="text"))
    content = payload["messages"][1]["content"]
    assert [b["type"] for b in content] == ["text", "text", "text"]
    assert content[0]["text"] == "<thinking>\nopenai thoughts\n</thinking>"


# --------------------------------------------------------------------------------------------
# public entry points and golden payloads of the shared conversations
# --------------------------------------------------------------------------------------------

GOLDEN_DIR = Path(__file__).parent / "golden" / anthropic.TARGET
GOLDEN_MODEL = dict(TARGET_MODELS)[anthropic.TARGET]


def test_public_parse_and_render_use_this_module() -> None:
    record = corpus("test_anthropic_tool_with_thinking--1")
    messages = convstore.parse(record["request"], "anthropic")
    assert messages == anthropic.parse(record["request"])
    assert convstore.parse_response(record["response"], "anthropic") == anthropic.parse_response(
        record["response"]
    )
    rendered = convstore.render(messages, "anthropic", model=record["model"])
    assert rendered.payload["messages"] == record["request"]["messages"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    """Render each shared conversation; compare with the checked-in, reviewed golden file.

    ``CONVSTORE_UPDATE_GOLDEN=1`` rewrites the files (review the diff before committing).
    """
    rendered = convstore.render(CASES[case], anthropic.TARGET, model=GOLDEN_MODEL)
    assert_valid(rendered.payload)
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    path = GOLDEN_DIR / f"{case}.json"
    if os.environ.get("CONVSTORE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == json.loads(json.dumps(actual))


# --------------------------------------------------------------------------------------------
# Regressions: fuzzed histories that parsed, then rendered into requests Anthropic refuses
# ("thinking blocks must come first"). Each render must pass the independent wire rules and
# the SDK's request types (tests/support/wire_rules.py).
# --------------------------------------------------------------------------------------------


def _assistant_request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": "q"}, *messages],
    }


_REDACTED = {"type": "redacted_thinking", "data": "opaque-1"}
_THINKING = {"type": "thinking", "thinking": "plan", "signature": "sig-1"}


@pytest.mark.parametrize(
    "content",
    [
        # the fuzz reproducer: a redacted block repeated after the text (duplicate + reorder)
        [_REDACTED, {"type": "text", "text": "a"}, _REDACTED],
        [_THINKING, _THINKING, {"type": "text", "text": "a"}],
        [_THINKING, {"type": "text", "text": "a"}, _THINKING],
    ],
    ids=["redacted-after-text", "thinking-twice", "thinking-after-text"],
)
def test_repeated_signed_thinking_is_replayed_once(content: list[dict[str, Any]]) -> None:
    messages = convstore.parse(
        _assistant_request({"role": "assistant", "content": content}), "anthropic"
    )
    rendered = convstore.render(messages, "anthropic", model=MODEL, reasoning="text")
    check_payload("anthropic", MODEL, rendered.payload)
    blocks = rendered.payload["messages"][1]["content"]
    assert [b["type"] for b in blocks] == [content[0]["type"], "text"]
    # The repeat is left out whatever the policy (its content is already there), and recorded.
    assert [n.action for n in rendered.diagnostics.reasoning] == ["kept", "dropped"]
    assert "repeats reasoning already replayed" in rendered.diagnostics.reasoning[1].reason


def _thinking_after_tool_use() -> list[Message]:
    return convstore.parse(
        _assistant_request(
            {
                "role": "assistant",
                "content": [
                    _THINKING,
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
                    {"type": "thinking", "thinking": "second", "signature": "sig-2"},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}],
            },
        ),
        "anthropic",
    )


def test_thinking_after_content_is_dropped_by_the_drop_policy() -> None:
    rendered = convstore.render(_thinking_after_tool_use(), "anthropic", model=MODEL)
    check_payload("anthropic", MODEL, rendered.payload)
    assert [b["type"] for b in rendered.payload["messages"][1]["content"]] == [
        "thinking",
        "tool_use",
    ]
    kept, dropped = rendered.diagnostics.reasoning
    assert (kept.action, dropped.action) == ("kept", "dropped")
    assert "only at the start of an assistant message" in dropped.reason


def test_thinking_after_content_becomes_text_with_the_text_policy() -> None:
    rendered = convstore.render(
        _thinking_after_tool_use(), "anthropic", model=MODEL, reasoning="text"
    )
    check_payload("anthropic", MODEL, rendered.payload)
    assert rendered.payload["messages"][1]["content"][1:] == [
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
        _text("<thinking>\nsecond\n</thinking>"),
    ]
    assert [n.action for n in rendered.diagnostics.reasoning] == ["kept", "text"]


def test_thinking_of_a_joined_assistant_message_after_content_is_not_replayed() -> None:
    # Two assistant messages in a row (the first without calls) become one message: the second
    # one's thinking would follow the first one's text and thinking.
    messages = convstore.parse(
        _assistant_request(
            {"role": "assistant", "content": [_THINKING, {"type": "text", "text": "a"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "second", "signature": "sig-2"},
                    {"type": "text", "text": "b"},
                ],
            },
        ),
        "anthropic",
    )
    rendered = convstore.render(messages, "anthropic", model=MODEL)
    check_payload("anthropic", MODEL, rendered.payload)
    assert [b["type"] for b in rendered.payload["messages"][1]["content"]] == [
        "thinking",
        "text",
        "text",
    ]


def test_text_before_the_only_thinking_run_still_moves_after_it() -> None:
    # A text-only turn joined with a thinking turn: the run may lead (nothing is reordered
    # within it), so it is replayed and the text moves after it.
    messages = convstore.parse(
        _assistant_request(
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": [_THINKING, {"type": "text", "text": "b"}]},
        ),
        "anthropic",
    )
    rendered = convstore.render(messages, "anthropic", model=MODEL)
    check_payload("anthropic", MODEL, rendered.payload)
    assert [b["type"] for b in rendered.payload["messages"][1]["content"]] == [
        "thinking",
        "text",
        "text",
    ]
    assert [n.action for n in rendered.diagnostics.reasoning] == ["kept"]


def test_encoder_drops_thinking_after_content_of_a_hand_built_plan() -> None:
    plan = make_plan(
        UserTurn([Text("q")]),
        AssistantTurn([signed("t1", "s1"), Text("a"), signed("t2", "s2"), Text("b")]),
    )
    content = encoded(plan)["messages"][1]["content"]
    check_payload("anthropic", MODEL, {"messages": encoded(plan)["messages"]})
    assert [b["type"] for b in content] == ["thinking", "text", "text"]
    assert content[0]["signature"] == "s1"
    assert [n.action for n in plan.diagnostics.reasoning][-1] == "dropped"
