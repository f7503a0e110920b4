"""openai-chat: parsing stored Chat Completions histories (and its dialects), encoding plans."""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import convstore
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
from convstore.providers import openai_chat
from convstore.transcript.plan import (
    AssistantTurn,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    Reasoning,
    Result,
    Text,
    ToolTurn,
    UserTurn,
)
from convstore.transcript.planner import plan_messages
from tests.fuzz import Mutant, Seed, mutants

from .chat.helpers import (
    IMAGE_URL,
    INPUT_AUDIO,
    MP3,
    OPENAI_FILE,
    PDF,
    PNG,
    TEXT,
    WAV,
    PartShapes,
    assert_golden,
    call,
    chat_message_shapes,
    check,
    check_messages,
    corpus,
    plan,
    shape,
    validate_openai,
)
from .conversations import CASES, TARGET_MODELS

CHAT_CORPUS = corpus("openai-chat", "mistral")
OPENAI_CORPUS = corpus("openai-chat")

OPENAI_SHAPES = chat_message_shapes(
    user_parts={
        "text": TEXT,
        "image_url": IMAGE_URL,
        "file": OPENAI_FILE,
        "input_audio": INPUT_AUDIO,
    },
    assistant_content=PartShapes({"text": TEXT}, string=True),
)


def _ids(records: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [name.removesuffix(".json") for name, _ in records]


def _data_url_bytes(url: str) -> tuple[str, bytes]:
    header, payload = url.split(",", 1)
    return header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(payload)


def _encode_openai(turns: list[Any], **kwargs: Any) -> tuple[list[dict[str, Any]], Any]:
    p = plan("openai-chat", turns, **kwargs)
    messages = openai_chat.encode(p)["messages"]
    check_messages(messages, OPENAI_SHAPES)
    for message in messages:
        validate_openai(message)
    return messages, p.diagnostics


# -- 1. every corpus request and response parses, concretely --------------------------------


def test_the_corpus_has_chat_records() -> None:
    assert len(CHAT_CORPUS) == 18  # 10 openai-chat, 8 mistral
    assert {record["api"] for _, record in CHAT_CORPUS} == {"openai-chat", "mistral"}


def _expected_content(raw: Any) -> list[tuple[str, Any]]:
    """(kind, what) for each wire content item, computed without convstore."""
    if isinstance(raw, str):
        return [("text", raw)] if raw else []
    expected: list[tuple[str, Any]] = []
    for item in raw:
        match item["type"]:
            case "text":
                expected.append(("text", item["text"]))
            case "image_url":
                url = item["image_url"]["url"]
                if url.startswith("data:"):
                    expected.append(("data", _data_url_bytes(url)))
                else:
                    expected.append(("uri", url))
            case "file":
                expected.append(("data", _data_url_bytes(item["file"]["file_data"])))
            case "document_url":
                expected.append(("data", _data_url_bytes(item["document_url"])))
            case other:
                raise AssertionError(other)
    return expected


def _actual_content(parts: list[Any]) -> list[tuple[str, Any]]:
    actual: list[tuple[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            actual.append(("text", part.text))
        elif part.data is not None:
            actual.append(("data", (part.media_type, part.data)))
        else:
            actual.append(("uri", part.uri))
    return actual


@pytest.mark.parametrize(("name", "record"), CHAT_CORPUS, ids=_ids(CHAT_CORPUS))
def test_parse_corpus_request(name: str, record: dict[str, Any]) -> None:
    wire = record["request"]["messages"]
    messages = openai_chat.parse(record["request"])
    assert len(messages) == len(wire)
    family = "mistral" if record["api"] == "mistral" else "openai"
    for message, raw in zip(messages, wire, strict=True):
        assert message.role.value == raw["role"]
        match raw["role"]:
            case "user":
                assert _actual_content(message.parts) == _expected_content(raw["content"])
            case "assistant":
                assert (message.provider, message.model) == (family, record["model"])
                texts = [p for p in message.parts if isinstance(p, TextPart)]
                assert [("text", p.text) for p in texts] == _expected_content(
                    raw.get("content") or ""
                )
                calls = message.tool_calls
                raw_calls = raw.get("tool_calls") or []
                assert [(c.id, c.provider_id, c.name, c.arguments) for c in calls] == [
                    (
                        r["id"],
                        r["id"],
                        r["function"]["name"],
                        json.loads(r["function"]["arguments"]),
                    )
                    for r in raw_calls
                ]
            case "tool":
                (result,) = message.tool_results
                assert result.call_id == raw["tool_call_id"]
                assert result.output == JsonOutput(value=raw["content"])
                assert result.name == next(
                    c["function"]["name"]
                    for m in wire
                    for c in m.get("tool_calls") or []
                    if c["id"] == raw["tool_call_id"]
                )


@pytest.mark.parametrize(("name", "record"), CHAT_CORPUS, ids=_ids(CHAT_CORPUS))
def test_parse_corpus_response(name: str, record: dict[str, Any]) -> None:
    body = record["response"]
    raw = body["choices"][0]["message"]
    message = openai_chat.parse_response(body)
    assert message.role is Role.ASSISTANT
    assert message.model == body["model"]
    assert message.provider == ("mistral" if record["api"] == "mistral" else "openai")
    assert message.provider_details == {
        "response_id": body["id"],
        "finish_reason": body["choices"][0]["finish_reason"],
    }
    assert message.text == (raw["content"] or "")
    assert [(c.id, c.name) for c in message.tool_calls] == [
        (c["id"], c["function"]["name"]) for c in raw.get("tool_calls") or []
    ]


def test_parse_mistral_mixed_content_concretely() -> None:
    (record,) = [r for n, r in CHAT_CORPUS if n == "test_mixed_content_ordering-mistral--1.json"]
    user, assistant, tool, bridge, injected = openai_chat.parse(record["request"])
    assert user == Message.user("Call the get_mixed_content tool and describe what you received.")
    (tool_call,) = assistant.parts
    assert tool_call == ToolCallPart(
        id="ot1MIoEMA", name="get_mixed_content", arguments={}, provider_id="ot1MIoEMA"
    )
    assert assistant.provider == "mistral"
    assert tool.parts == [
        ToolResultPart(
            call_id="ot1MIoEMA",
            name="get_mixed_content",
            output=JsonOutput(
                value='Here is the image:\nSee file 241a70.\n{"pydantic_ai_marker":"test_42"}'
            ),
        )
    ]
    assert bridge.role is Role.ASSISTANT
    assert bridge.text == "OK"
    text, image = injected.parts
    assert text == TextPart(text="This is file 241a70:")
    assert isinstance(image, FilePart)
    assert image.data is not None
    assert (image.media_type, len(image.data), image.data[:3]) == (
        "image/jpeg",
        98572,
        b"\xff\xd8\xff",
    )


def test_parse_openai_pdf_and_url_images_concretely() -> None:
    records = dict(CHAT_CORPUS)
    pdf_message = openai_chat.parse(
        records["test_multimodal_tool_return_matrix-direct-binary-document-openai_chat--1.json"][
            "request"
        ]
    )[-1]
    _, pdf = pdf_message.parts
    assert isinstance(pdf, FilePart)
    assert (pdf.media_type, pdf.filename, len(pdf.data or b"")) == (
        "application/pdf",
        "filename.pdf",
        13264,
    )
    images = openai_chat.parse(
        records["test_model_sees_multiple_images-openai_chat--1.json"]["request"]
    )[-1]
    kinds = [
        (p.kind, getattr(p, "media_type", None), getattr(p, "uri", None)) for p in images.parts
    ]
    assert kinds == [
        ("text", None, None),
        ("file", "image/jpeg", None),
        ("text", None, None),
        ("file", "image/png", "https://www.gstatic.com/webp/gallery3/1.png"),
    ]


# -- 2. robustness: invalid histories parse, malformed payloads are refused --------------------


def _call_json(call_id: str, name: str = "lookup", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _parse(*messages: dict[str, Any], model: str | None = "gpt-4o") -> list[Message]:
    payload: dict[str, Any] = {"messages": list(messages)}
    if model is not None:
        payload["model"] = model
    return openai_chat.parse(payload)


def test_parse_invalid_histories_keeps_everything() -> None:
    messages = _parse(
        {"role": "assistant", "content": "I start."},  # assistant first
        {"role": "assistant", "content": None, "tool_calls": [_call_json("a")]},  # orphan call
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},  # same-role run
        {"role": "assistant", "content": None, "tool_calls": [_call_json("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "first"},
        {"role": "tool", "tool_call_id": "b", "content": "again"},  # duplicate result
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},  # orphan result
    )
    assert [m.role.value for m in messages] == [
        "assistant", "assistant", "user", "user", "assistant", "tool", "tool", "tool",
    ]  # fmt: skip
    assert [r.call_id for m in messages for r in m.tool_results] == ["b", "b", "zzz"]
    assert [r.output for m in messages for r in m.tool_results] == [
        JsonOutput(value="first"),
        JsonOutput(value="again"),
        JsonOutput(value="orphan"),
    ]
    assert messages[-1].tool_results[0].name is None  # no call: no name to borrow


def test_reused_provider_ids_get_fresh_canonical_ids() -> None:
    messages = _parse(
        {"role": "assistant", "tool_calls": [_call_json("functions.lookup:0")]},
        {"role": "tool", "tool_call_id": "functions.lookup:0", "content": "1"},
        {"role": "assistant", "tool_calls": [_call_json("functions.lookup:0")]},
        {"role": "tool", "tool_call_id": "functions.lookup:0", "content": "2"},
        model="kimi-k2-0905-preview",
    )
    calls = [c for m in messages for c in m.tool_calls]
    assert [(c.id, c.provider_id) for c in calls] == [
        ("functions.lookup:0", "functions.lookup:0"),
        ("functions.lookup:0~2", "functions.lookup:0"),
    ]
    assert [r.call_id for m in messages for r in m.tool_results] == [
        "functions.lookup:0",
        "functions.lookup:0~2",
    ]
    assert all(m.provider == "kimi" for m in messages if m.role is Role.ASSISTANT)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("kimi-k2-thinking", "kimi"),
        ("moonshot-v1-8k", "kimi"),
        ("deepseek-reasoner", "deepseek"),
        ("magistral-medium-latest", "mistral"),
        ("codestral-latest", "mistral"),
        ("devstral-small-latest", "mistral"),
        ("gpt-5-mini", "openai"),
        (None, "openai"),
    ],
)
def test_reasoning_content_is_kept_with_its_family(model: str | None, family: str) -> None:
    (message,) = _parse(
        {
            "role": "assistant",
            "content": "4",
            "reasoning_content": "2 + 2 is 4",
            "tool_calls": [_call_json("functions.add:0", "add", '{"a": 2}')],
        },
        model=model,
    )
    thinking, text, tool_call = message.parts
    assert thinking == ThinkingPart(
        text="2 + 2 is 4",
        provider=family,
        model=model,
        provider_details={"carrier": "reasoning_content"},
    )
    assert text == TextPart(text="4")
    assert isinstance(tool_call, ToolCallPart)
    assert (tool_call.id, tool_call.arguments) == ("functions.add:0", {"a": 2})
    assert openai_chat.provider_family(model) == family


def test_whitespace_reasoning_placeholder_is_not_reasoning() -> None:
    (message,) = _parse(
        {"role": "assistant", "reasoning_content": " ", "tool_calls": [_call_json("x")]},
        model="kimi-k2.5",
    )
    assert [p.kind for p in message.parts] == ["tool_call"]


def test_parse_mistral_dialect() -> None:
    pdf_url = "data:application/pdf;base64," + base64.b64encode(PDF).decode()
    user, assistant, prefix = _parse(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": "https://example.com/cat.png"},
                {"type": "document_url", "document_url": pdf_url, "document_name": "a.pdf"},
                {"type": "document_url", "document_url": "https://example.com/b.pdf"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": [
                        {"type": "text", "text": "Let me think."},
                        {"type": "reference", "reference_ids": [1]},
                    ],
                },
                {"type": "text", "text": "Done."},
            ],
            "prefix": False,
        },
        {"role": "assistant", "content": [], "prefix": True},
        model="magistral-medium-latest",
    )
    cat, document, remote = user.parts
    assert isinstance(cat, FilePart)
    assert isinstance(document, FilePart)
    assert isinstance(remote, FilePart)
    assert (cat.uri, cat.media_type) == ("https://example.com/cat.png", "image/png")
    assert (document.data, document.media_type, document.filename) == (
        PDF,
        "application/pdf",
        "a.pdf",
    )
    assert (remote.uri, remote.media_type) == ("https://example.com/b.pdf", "application/pdf")
    assert assistant.parts == [
        ThinkingPart(
            text="Let me think.",
            provider="mistral",
            model="magistral-medium-latest",
            provider_details={"carrier": "thinking_chunk"},
        ),
        TextPart(text="Done."),
    ]
    assert assistant.provider_details is None
    assert (prefix.parts, prefix.provider_details) == ([], {"prefix": True})


def test_parse_openai_media_parts() -> None:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    (user,) = _parse(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "text", "text": ""},  # empty text carries nothing
                {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": b64(MP3), "format": "mp3"}},
                {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
                {"type": "file", "file": {"file_data": b64(PDF), "filename": "raw.pdf"}},
                {"type": "file", "file": {"file_id": "file-abc", "filename": "up.pdf"}},
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{b64(PNG)}", "detail": "low"},
                },
            ],
        }
    )
    described = [
        (p.kind, getattr(p, "media_type", None), getattr(p, "data", None), getattr(p, "uri", None))
        for p in user.parts
    ]
    assert described == [
        ("text", None, None, None),
        ("file", "audio/wav", WAV, None),
        ("file", "audio/mpeg", MP3, None),
        ("file", "application/pdf", PDF, None),
        ("file", "application/pdf", PDF, None),
        ("file", "application/pdf", None, "openai://files/file-abc"),
        ("file", "image/png", PNG, None),
    ]


def test_the_bytes_win_over_a_contradicting_declared_type() -> None:
    url = "data:image/jpeg;base64," + base64.b64encode(PNG).decode()
    (user,) = _parse(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    )
    (image,) = user.parts
    assert isinstance(image, FilePart)
    assert image.media_type == "image/png"


def test_a_declared_type_the_bytes_do_not_carry_is_malformed() -> None:
    url = "data:image/png;base64," + base64.b64encode(b"not an image at all").decode()
    with pytest.raises(MalformedPayloadError, match=r"image_url.*contradicted"):
        _parse({"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]})


def test_parse_system_developer_legacy_custom_and_refusal() -> None:
    system, developer, assistant, legacy_result, refusal = _parse(
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]},
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "legacy", "arguments": "{oops"},
            "tool_calls": [
                {"id": "ct", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        },
        {"role": "function", "name": "legacy", "content": "done"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    )
    assert system == Message.system("Be brief.")
    assert (developer.role, developer.text, developer.provider_details) == (
        Role.SYSTEM,
        "Use tools.",
        {"role": "developer"},
    )
    custom, legacy = assistant.tool_calls
    assert (custom.id, custom.name, custom.arguments, custom.raw_arguments) == (
        "ct",
        "sql",
        {},
        "SELECT 1",
    )
    assert custom.provider_details == {"type": "custom"}
    assert (legacy.name, legacy.arguments, legacy.raw_arguments, legacy.provider_id) == (
        "legacy",
        {},
        "{oops",
        None,
    )
    (result,) = legacy_result.tool_results
    assert (result.call_id, result.name, result.output) == (
        legacy.id,
        "legacy",
        JsonOutput(value="done"),
    )
    assert refusal.parts == [
        TextPart(text="I can't help with that.", provider_details={"refusal": True})
    ]


def test_tool_content_lists() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    _, texts, media = _parse(
        {"role": "assistant", "tool_calls": [_call_json("a"), _call_json("b")]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "x"}] * 2},
        {
            "role": "tool",
            "tool_call_id": "b",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        },
    )
    assert texts.tool_results[0].output == JsonOutput(value="x\nx")
    output = media.tool_results[0].output
    assert isinstance(output, ContentOutput)
    assert [p.kind for p in output.parts] == ["text", "file"]
    assert output.files[0].data == PNG


def _bad(content: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}]}


MALFORMED: list[tuple[str, Any, str]] = [
    ("not an object", ["messages"], r"\$: expected an object"),
    ("no messages", {"model": "gpt-4o"}, r"missing 'messages'"),
    ("messages not a list", {"messages": {}}, r"\$\.messages: expected an array"),
    ("message not an object", {"messages": ["hi"]}, r"\$\.messages\[0\]: expected an object"),
    ("no role", {"messages": [{"content": "hi"}]}, r"missing 'role'"),
    ("unknown role", {"messages": [{"role": "robot", "content": "x"}]}, r"unknown role 'robot'"),
    ("role not a string", {"messages": [{"role": 3}]}, r"\.role: expected a string"),
    ("content a number", _bad(42), r"content: expected an array"),
    ("unknown part type", _bad([{"type": "video"}]), r"unsupported content part type 'video'"),
    ("part without type", _bad([{"text": "x"}]), r"missing 'type'"),
    (
        "bad base64",
        _bad([{"type": "image_url", "image_url": {"url": "data:image/png;base64,!!!"}}]),
        r"invalid base64",
    ),
    (
        "data url without comma",
        _bad([{"type": "image_url", "image_url": {"url": "data:image/png;base64"}}]),
        r"malformed data: URL",
    ),
    (
        "audio without data",
        _bad([{"type": "input_audio", "input_audio": {"format": "wav"}}]),
        r"data",
    ),
    ("file without data", _bad([{"type": "file", "file": {"filename": "x.pdf"}}]), r"file_id"),
    (
        "tool without call id",
        {"messages": [{"role": "tool", "content": "x"}]},
        r"missing 'tool_call_id'",
    ),
    (
        "tool without content",
        {"messages": [{"role": "tool", "tool_call_id": "a"}]},
        r"missing 'content'",
    ),
    (
        "call without name",
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}]},
        r"missing 'name'",
    ),
    (
        "call with empty name",
        {"messages": [{"role": "assistant", "tool_calls": [_call_json("a", "")]}]},
        r"tool name cannot be empty",
    ),
    (
        "numeric arguments",
        {"messages": [{"role": "assistant", "tool_calls": [_call_json("a", "f", 3)]}]},  # type: ignore[arg-type]
        r"tool arguments must be an object or a JSON string",
    ),
    (
        "unknown call type",
        {"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "type": "mcp"}]}]},
        r"unsupported tool call type 'mcp'",
    ),
    (
        "image in a system message",
        {
            "messages": [
                {
                    "role": "system",
                    "content": [{"type": "image_url", "image_url": "https://x/y.png"}],
                }
            ]
        },
        r"only text is allowed",
    ),
    (
        "prefix not a boolean",
        {"messages": [{"role": "assistant", "content": "x", "prefix": "yes"}]},
        r"prefix: expected a boolean",
    ),
]


@pytest.mark.parametrize(
    ("payload", "message"), [(p, m) for _, p, m in MALFORMED], ids=[n for n, _, _ in MALFORMED]
)
def test_malformed_payloads_are_refused(payload: Any, message: str) -> None:
    with pytest.raises(MalformedPayloadError, match=message):
        openai_chat.parse(payload)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"choices": []}, r"at least one choice"),
        ({"id": "x"}, r"missing 'choices'"),
        ({"choices": [{"index": 0}]}, r"missing 'message'"),
        ({"choices": [{"message": {"role": "user", "content": "x"}}]}, r"assistant's"),
        ({"choices": [{"message": {"content": 1}}]}, r"content: expected an array"),
    ],
)
def test_malformed_responses_are_refused(body: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedPayloadError, match=message):
        openai_chat.parse_response(body)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


KITCHEN_SINK: dict[str, Any] = {
    "model": "kimi-k2-thinking",
    "messages": [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
                {"type": "input_audio", "input_audio": {"data": _b64(WAV), "format": "wav"}},
                {"type": "file", "file": {"file_data": _b64(PDF), "filename": "a.pdf"}},
                {"type": "document_url", "document_url": "https://example.com/a.pdf"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "t"}]}],
            "reasoning_content": "r",
            "prefix": False,
            "tool_calls": [_call_json("functions.f:0", "f", '{"a":1}')],
        },
        {"role": "tool", "tool_call_id": "functions.f:0", "name": "f", "content": "ok"},
    ],
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants([Seed("kitchen-sink", "openai-chat", "request", None, KITCHEN_SINK)]))
def test_mutated_payloads_raise_only_convstore_errors(mutant: Mutant) -> None:
    with contextlib.suppress(ConvstoreError):  # refusing is fine; crashing is not
        openai_chat.parse(mutant.payload)


_SMALL_CORPUS = dict(CHAT_CORPUS)[
    "test_multimodal_tool_return_matrix-direct-binary-document-mistral--1.json"
]


_SMALL_NAME = "test_multimodal_tool_return_matrix-direct-binary-document-mistral--1"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants([Seed(_SMALL_NAME, "openai-chat", "request", None, _SMALL_CORPUS["request"])]))
def test_mutated_corpus_request_raises_only_convstore_errors(mutant: Mutant) -> None:
    with contextlib.suppress(ConvstoreError):  # refusing is fine; crashing is not
        openai_chat.parse(mutant.payload)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants([Seed(_SMALL_NAME, "openai-chat", "response", None, _SMALL_CORPUS["response"])]))
def test_mutated_corpus_response_raises_only_convstore_errors(mutant: Mutant) -> None:
    with contextlib.suppress(ConvstoreError):
        openai_chat.parse_response(mutant.payload)


# -- 3. encoding hand-built plans ---------------------------------------------------------------


def test_encode_system_and_user_turns() -> None:
    messages, diagnostics = _encode_openai(
        [
            UserTurn([Text("plain")]),
            UserTurn(
                [
                    Text("look"),
                    Media("image/png", data=PNG, label="aaaaaa"),
                    Media("image/jpeg", uri="https://example.com/x.jpg", label="bbbbbb"),
                    Media("application/pdf", data=PDF, label="cccccc"),
                    Media("application/pdf", data=PDF, filename="report.pdf", label="dddddd"),
                    Media("audio/wav", data=WAV, label="eeeeee"),
                    Media("audio/mpeg", data=MP3, label="ffffff"),
                ]
            ),
        ],
        system=["Be brief.", "Use metric units."],
    )
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use metric units."},
        {"role": "user", "content": "plain"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.jpg"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{_b64(PDF)}",
                        "filename": "cccccc.pdf",
                    },
                },
                {
                    "type": "file",
                    "file": {
                        "file_data": f"data:application/pdf;base64,{_b64(PDF)}",
                        "filename": "report.pdf",
                    },
                },
                {"type": "input_audio", "input_audio": {"data": _b64(WAV), "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": _b64(MP3), "format": "mp3"}},
            ],
        },
    ]
    assert diagnostics.notes == []
    assert diagnostics.media == []


def test_media_the_wire_cannot_carry_becomes_a_recorded_note() -> None:
    messages, diagnostics = _encode_openai(
        [
            UserTurn(
                [
                    Media("audio/wav", uri="https://example.com/a.wav", label="abc123"),
                    Media("text/csv", data=b"a,b\n", label="def456"),
                ]
            ),
            AssistantTurn([Media("image/png", data=PNG, label="aaaaaa"), Text("made it")]),
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "[abc123 (audio/wav) omitted: user messages cannot carry it]",
                },
                {
                    "type": "text",
                    "text": "[def456 (text/csv) omitted: user messages cannot carry it]",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "[aaaaaa (image/png) omitted: assistant messages cannot carry files]",
                },
                {"type": "text", "text": "made it"},
            ],
        },
    ]
    assert [(n.media_type, n.placement, n.label) for n in diagnostics.media] == [
        ("audio/wav", "text_note", "abc123"),
        ("text/csv", "text_note", "def456"),
        ("image/png", "text_note", "aaaaaa"),
    ]


def test_encode_a_tool_step() -> None:
    first = call("call_1", "get_file", {"path": "a.png"})
    second = call("call_2", "broken", raw_arguments="{not json")
    third = call("call_3", "stats")
    fourth = call("call_4", "read")
    messages, diagnostics = _encode_openai(
        [
            UserTurn([Text("go")]),
            AssistantTurn([Text("Working on it."), first, second, third, fourth]),
            ToolTurn(
                [
                    Result(first, ContentBody([Text("Here:"), Text("See file 241a70.")])),
                    Result(second, ErrorBody("bad arguments"), synthetic=False),
                    Result(third, JsonBody({"mean": 2.5, "unit": "°C"})),
                    Result(fourth, JsonBody("plain text")),
                ]
            ),
            UserTurn(
                [Text("This is file 241a70:"), Media("image/png", data=PNG, label="241a70")],
                injected=True,
            ),
            AssistantTurn([Text("It is a PNG.")]),
        ]
    )
    assert messages == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Working on it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_file", "arguments": '{"path":"a.png"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "broken", "arguments": "{not json"},
                },
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "stats", "arguments": "{}"},
                },
                {
                    "id": "call_4",
                    "type": "function",
                    "function": {"name": "read", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Here:\nSee file 241a70."},
        {"role": "tool", "tool_call_id": "call_2", "content": "bad arguments"},
        {"role": "tool", "tool_call_id": "call_3", "content": '{"mean":2.5,"unit":"°C"}'},
        {"role": "tool", "tool_call_id": "call_4", "content": "plain text"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "This is file 241a70:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
            ],
        },
        {"role": "assistant", "content": "It is a PNG."},
    ]
    assert diagnostics.notes == []


def test_assistant_shapes() -> None:
    only_call = call("call_9")
    thinking = ThinkingPart(text="hmm", provider="openai", model="gpt-5", signature=None)
    messages, diagnostics = _encode_openai(
        [
            AssistantTurn([Text("one"), Text("two")]),
            AssistantTurn([Reasoning(thinking), only_call]),
            ToolTurn([Result(only_call, JsonBody(1))]),
            AssistantTurn([Reasoning(thinking)]),
        ]
    )
    assert messages == [
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_file", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "1"},
    ]
    assert [(n.action, n.provider) for n in diagnostics.reasoning] == [
        ("dropped", "openai"),
        ("dropped", "openai"),
    ]
    assert diagnostics.notes == [
        "openai-chat: omitted an assistant turn that had nothing this target can carry"
    ]


def test_sdk_types_are_permissive_so_key_sets_are_checked_too() -> None:
    # The SDK's TypedDicts ignore unknown keys; the shape check is what catches them.
    message = {"role": "tool", "tool_call_id": "a", "content": "x", "name": "f"}
    validate_openai(message)
    with pytest.raises(AssertionError, match="unexpected keys"):
        check_messages([message], OPENAI_SHAPES)
    with pytest.raises(AssertionError, match="unexpected keys"):
        check({"type": "text", "text": "x", "cache": 1}, TEXT)
    with pytest.raises(AssertionError, match="missing keys"):
        check({}, shape(["a"]))


# -- 4. round trip: parse -> plan -> encode gives the same request ----------------------------


def _normalise(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Equivalent spellings: a lone text part is its string; absent content beside calls is null."""
    return [_normalise_one(message) for message in messages]


def _normalise_one(message: dict[str, Any]) -> dict[str, Any]:
    match message:
        case {"role": "user", "content": [{"type": "text", "text": str(text)}]}:
            return {**message, "content": text}
        case {"role": "assistant", "tool_calls": list()} if "content" not in message:
            return {"role": "assistant", "content": None, **message}
    return message


@pytest.mark.parametrize(("name", "record"), OPENAI_CORPUS, ids=_ids(OPENAI_CORPUS))
def test_corpus_round_trip(name: str, record: dict[str, Any]) -> None:
    request = record["request"]
    p = plan_messages(openai_chat.parse(request), target="openai-chat", model=record["model"])
    messages = openai_chat.encode(p)["messages"]
    assert messages == _normalise(request["messages"])
    check_messages(messages, OPENAI_SHAPES)
    for message in messages:
        validate_openai(message)
    assert p.diagnostics.notes == []


def test_a_multimodal_tool_result_renders_like_the_corpus() -> None:
    (record,) = [r for n, r in OPENAI_CORPUS if "direct-binary-image-openai_chat--1" in n]
    wire_image = record["request"]["messages"][-1]["content"][1]["image_url"]["url"]
    _, image_bytes = _data_url_bytes(wire_image)
    history = [
        Message.user("Use the get_file tool now to retrieve a image file, then describe it."),
        Message.assistant(
            ToolCallPart(id="call_S7tRWNiD8CbD2xDRMuXOEc8e", name="get_file"),
            provider="openai",
            model="gpt-5-mini",
        ),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResultPart(
                    call_id="call_S7tRWNiD8CbD2xDRMuXOEc8e",
                    output=ContentOutput(
                        parts=[FilePart.from_bytes(image_bytes, media_type="image/jpeg")]
                    ),
                )
            ],
        ),
    ]
    messages = openai_chat.encode(plan_messages(history, target="openai-chat", model="gpt-5-mini"))[
        "messages"
    ]
    tool, injected = messages[2:]
    label = tool["content"].removeprefix("See file ").removesuffix(".")
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_S7tRWNiD8CbD2xDRMuXOEc8e",
        "content": f"See file {label}.",
    }
    assert injected == {
        "role": "user",
        "content": [
            {"type": "text", "text": f"This is file {label}:"},
            {"type": "image_url", "image_url": {"url": wire_image}},
        ],
    }


def test_error_results_and_other_shapes_round_trip_through_parse() -> None:
    history = [
        Message.user("hi"),
        Message.assistant(ToolCallPart(id="a", name="f", arguments={"x": [1, 2]})),
        Message(
            role=Role.TOOL,
            parts=[ToolResultPart(call_id="a", output=ErrorOutput(message="it broke"))],
        ),
    ]
    payload = openai_chat.encode(plan_messages(history, target="openai-chat"))
    parsed = openai_chat.parse(payload)
    assert parsed[1].tool_calls[0].arguments == {"x": [1, 2]}
    # Chat Completions has no error flag: the message survives as the result's text.
    assert parsed[2].tool_results[0].output == JsonOutput(value="it broke")


def test_public_parse_and_render_use_this_module() -> None:
    (record,) = [r for n, r in OPENAI_CORPUS if "direct-binary-image-openai_chat--1" in n]
    messages = convstore.parse(record["request"], "openai-chat")
    assert messages == openai_chat.parse(record["request"])
    assert convstore.parse_response(record["response"], "openai-chat") == (
        openai_chat.parse_response(record["response"])
    )
    rendered = convstore.render(messages, "openai-chat", model=record["model"])
    assert rendered.payload == {"messages": record["request"]["messages"]}


# -- golden payloads of the shared conversations ---------------------------------------------

GOLDEN_MODEL = dict(TARGET_MODELS)[openai_chat.TARGET]


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    rendered = convstore.render(CASES[case], openai_chat.TARGET, model=GOLDEN_MODEL)
    assert set(rendered.payload) == {"messages"}
    check_messages(rendered.payload["messages"], OPENAI_SHAPES)
    for message in rendered.payload["messages"]:
        validate_openai(message)
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    assert_golden(openai_chat.TARGET, case, actual)
