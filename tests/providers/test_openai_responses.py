"""OpenAI Responses: parse (requests and responses), encode (plans), and the round trip.

The accepted corpus (real request bodies OpenAI answered with HTTP 200) is ground truth: every
request and response of the ``openai-responses`` API parses, and every request renders back to
the same items. Encoded items are checked against the official SDK's request types.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, Final, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCallParam,
    ResponseInputItemParam,
    ResponseOutputMessageParam,
    ResponseReasoningItemParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import JsonValue, TypeAdapter, ValidationError

from convstore import render
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
from convstore.providers import openai_responses as responses
from convstore.providers.openai_responses import TARGET, encode, parse, parse_response
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
    ResultBody,
    Text,
    ToolTurn,
    Turn,
    UserTurn,
)
from convstore.transcript.planner import plan_messages
from tests.fuzz import Mutant, Seed, mutants
from tests.support.corpus import corpus_guard, corpus_records
from tests.support.wire_rules import check_payload

from .conversations import CASES, TARGET_MODELS

CORPUS = [(record["name"], record) for record in corpus_records(TARGET)]
needs_corpus = corpus_guard(CORPUS, TARGET)
corpus_cases = pytest.mark.parametrize(
    "record", [r for _, r in CORPUS], ids=[name for name, _ in CORPUS]
)


def record(name: str) -> dict[str, Any]:
    return dict(CORPUS)[name]


PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
JPEG = b"\xff\xd8\xff\xe0" + bytes(24)
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


# -- SDK oracle --------------------------------------------------------------------------------

_ANY_ITEM = TypeAdapter(ResponseInputItemParam)
_MEMBERS: dict[str, TypeAdapter[Any]] = {
    "easy_message": TypeAdapter(EasyInputMessageParam),
    "output_message": TypeAdapter(ResponseOutputMessageParam),
    "reasoning": TypeAdapter(ResponseReasoningItemParam),
    "function_call": TypeAdapter(ResponseFunctionToolCallParam),
    "function_call_output": TypeAdapter(FunctionCallOutput),
}
_KEYS: dict[str, tuple[set[str], set[str]]] = {
    # kind -> (required keys, optional keys) of what convstore emits
    "easy_message": ({"role", "content"}, {"phase"}),
    "output_message": ({"type", "role", "id", "status", "content"}, {"phase"}),
    "reasoning": ({"type", "id", "summary", "encrypted_content"}, {"content"}),
    "function_call": ({"type", "call_id", "name", "arguments"}, {"id"}),
    "function_call_output": ({"type", "call_id", "output"}, set()),
}
_PART_KEYS: dict[str, list[set[str]]] = {
    "input_text": [{"type", "text"}],
    "input_image": [{"type", "detail", "image_url"}, {"type", "detail", "file_id"}],
    "input_file": [
        {"type", "file_data", "filename"},
        {"type", "file_url"},
        {"type", "file_url", "filename"},
        {"type", "file_id"},
        {"type", "file_id", "filename"},
    ],
    "output_text": [{"type", "text", "annotations"}],
    "refusal": [{"type", "refusal"}],
}


def _kind(item: dict[str, Any]) -> str:
    if "role" in item:
        return "output_message" if "id" in item else "easy_message"
    return str(item["type"])


def _materialised(value: Any) -> Any:
    """``value`` with the lazy iterators pydantic returns for ``Iterable`` fields consumed
    (consuming them is what runs their validation)."""
    if isinstance(value, dict):
        return {k: _materialised(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    return [_materialised(v) for v in value]


def assert_sdk_valid(items: list[dict[str, Any]]) -> None:
    """Each item validates as the SDK's input item type, with no key the SDK does not know.

    The SDK types are TypedDicts, which pydantic validates permissively (unknown keys are
    dropped), so equality of the validated value with the item is what proves there are none;
    the exact key sets are asserted as well.
    """
    for item in items:
        assert _materialised(_ANY_ITEM.validate_python(item)) == item
        kind = _kind(item)
        assert _materialised(_MEMBERS[kind].validate_python(item)) == item
        required, optional = _KEYS[kind]
        assert required <= set(item) <= required | optional, (kind, sorted(item))
        content = item.get("content") if "role" in item else item.get("output")
        if isinstance(content, list):
            for part in content:
                assert set(part) in _PART_KEYS[part["type"]], part


def test_oracle_rejects_what_the_api_rejects() -> None:
    with pytest.raises(ValidationError):
        _ANY_ITEM.validate_python({"type": "function_call", "call_id": "c"})
    with pytest.raises(AssertionError):
        assert_sdk_valid([{"role": "user", "content": "hi", "unknown": 1}])
    with pytest.raises(AssertionError):
        assert_sdk_valid([{"type": "reasoning", "id": "rs_1", "summary": []}])


# -- plan helpers ------------------------------------------------------------------------------


def make_plan(turns: list[Turn], *, system: tuple[str, ...] = (), model: str = "gpt-5") -> Plan:
    return Plan(
        target=TARGET,
        model=model,
        capabilities=capabilities_for(TARGET, model),
        diagnostics=Diagnostics(target=TARGET, model=model),
        system=list(system),
        turns=turns,
    )


def make_call(
    wire_id: str = "call_1",
    name: str = "get_weather",
    arguments: dict[str, Any] | None = None,
    *,
    item_id: str | None = None,
    same_provider: bool = False,
    provider_id: str | None = None,
    wire_name: str | None = None,
) -> Call:
    return Call(
        call_id=wire_id,
        wire_id=wire_id,
        name=name,
        wire_name=wire_name or name,
        arguments=arguments if arguments is not None else {"city": "Paris"},
        provider_id=provider_id if provider_id is not None else wire_id,
        provider_details={"item_id": item_id} if item_id else None,
        same_provider=same_provider,
    )


def reasoning(
    reasoning_id: str | None = "rs_1",
    encrypted: str | None = "gAAA-enc",
    summary: list[str] | None = None,
    *,
    text: str = "",
    raw: list[str] | None = None,
) -> Reasoning:
    return Reasoning(
        ThinkingPart(
            text=text,
            provider="openai",
            model="gpt-5",
            reasoning_id=reasoning_id,
            encrypted_content=encrypted,
            summary=summary,
            provider_details={"content": list(raw)} if raw else None,
        )
    )


def items_of(plan: Plan) -> list[dict[str, Any]]:
    payload = encode(plan)
    assert set(payload) <= {"input", "instructions"}
    assert_sdk_valid(payload["input"])
    json.dumps(payload)  # JSON-serialisable as it is
    return list(payload["input"])


# -- parse: the corpus -------------------------------------------------------------------------


@needs_corpus
def test_corpus_has_every_request_shape() -> None:
    assert len(CORPUS) == 16
    kinds = {
        str(item.get("type", "message")) for _, rec in CORPUS for item in rec["request"]["input"]
    }
    assert kinds == {"message", "reasoning", "function_call", "function_call_output"}


@needs_corpus
@corpus_cases
def test_parse_corpus_request_keeps_every_item(record: dict[str, Any]) -> None:
    request = record["request"]
    messages = parse(request)
    wire = [i for i in request["input"] if i.get("role") not in ("system", "developer")]
    system = [i["content"] for i in request["input"] if i.get("role") == "system"]
    if "instructions" in request:
        system.insert(0, request["instructions"])
    assert [m.text for m in messages if m.role is Role.SYSTEM] == system

    parts = [p for m in messages if m.role is not Role.SYSTEM for p in m.parts]
    assert len(parts) == len(wire)  # one canonical part per item in this corpus
    call_ids: dict[str, str] = {}
    for item, part in zip(wire, parts, strict=True):
        match item.get("type", "message"):
            case "message":
                assert isinstance(part, TextPart)
                assert part.text == item["content"]
            case "reasoning":
                assert isinstance(part, ThinkingPart)
                assert part.provider == "openai"
                assert part.model == record["model"]
                assert part.reasoning_id == item["id"]
                assert part.encrypted_content == item["encrypted_content"]
                assert part.summary == [s["text"] for s in item["summary"]]
                assert part.text == "\n\n".join(part.summary)
            case "function_call":
                assert isinstance(part, ToolCallPart)
                assert part.name == item["name"]
                assert part.arguments == json.loads(item["arguments"])
                assert part.provider_id == item["call_id"]
                assert part.provider_details == {"item_id": item["id"]}
                call_ids[item["call_id"]] = part.id
            case "function_call_output":
                assert isinstance(part, ToolResultPart)
                assert part.call_id == call_ids[item["call_id"]]
                _assert_output(part, item["output"])
    for message in messages:
        if message.role is Role.ASSISTANT:
            assert message.provider == "openai"
            assert message.model == record["model"]
        if message.role is Role.TOOL:
            assert all(isinstance(p, ToolResultPart) for p in message.parts)


def _assert_output(part: ToolResultPart, output: str | list[dict[str, Any]]) -> None:
    if isinstance(output, str):
        assert part.output == JsonOutput(value=output)
        return
    assert isinstance(part.output, ContentOutput)
    assert len(part.output.parts) == len(output)
    for wire, canonical in zip(output, part.output.parts, strict=True):
        match wire["type"]:
            case "input_text":
                assert canonical == TextPart(text=wire["text"])
            case "input_image" if wire["image_url"].startswith("data:"):
                assert isinstance(canonical, FilePart)
                header, b64 = wire["image_url"].split(",", 1)
                assert canonical.data == base64.b64decode(b64)
                assert header == f"data:{canonical.media_type};base64"
            case "input_image":
                assert isinstance(canonical, FilePart)
                assert canonical.uri == wire["image_url"]
            case "input_file":
                assert isinstance(canonical, FilePart)
                assert canonical.data == base64.b64decode(wire["file_data"].split(",", 1)[1])
                assert canonical.filename == wire["filename"]


@needs_corpus
def test_parse_mixed_content_result_keeps_order_types_and_bytes() -> None:
    messages = parse(record("test_mixed_content_ordering-openai_responses--1")["request"])
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    thinking, call = messages[1].parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.reasoning_id == "rs_0b6bd861f4c03af0006993d866d54481928fa3772d421b1db1"
    assert thinking.summary == []
    assert thinking.text == ""
    assert thinking.encrypted_content is not None
    assert len(thinking.encrypted_content) == 1336
    assert isinstance(call, ToolCallPart)
    assert call.id == call.provider_id == "call_zmt5boQ6Wf6lFz7WtrG9uCH2"
    assert call.name == "get_mixed_content"
    assert call.arguments == {}
    assert call.provider_details == {
        "item_id": "fc_0b6bd861f4c03af0006993d86762488192b70f375930ef8a52"
    }
    (result,) = messages[2].parts
    assert isinstance(result, ToolResultPart)
    assert result.call_id == call.id
    assert result.name == "get_mixed_content"
    assert isinstance(result.output, ContentOutput)
    text, image, marker = result.output.parts
    assert text == TextPart(text="Here is the image:")
    assert isinstance(image, FilePart)
    assert image.media_type == "image/jpeg"
    assert image.data is not None
    assert len(image.data) == 98572
    assert marker == TextPart(text='{"pydantic_ai_marker":"test_42"}')


@needs_corpus
def test_parse_multiple_images_keeps_inline_bytes_and_url() -> None:
    messages = parse(record("test_model_sees_multiple_images-openai_responses--1")["request"])
    (result,) = messages[-1].parts
    assert isinstance(result, ToolResultPart)
    assert isinstance(result.output, ContentOutput)
    inline, remote = result.output.parts
    assert isinstance(inline, FilePart)
    assert isinstance(remote, FilePart)
    assert (inline.media_type, len(inline.data or b"")) == ("image/jpeg", 98572)
    assert remote.uri == "https://www.gstatic.com/webp/gallery3/1.png"
    assert remote.media_type == "image/png"
    assert remote.data is None


@needs_corpus
def test_parse_pdf_result_keeps_filename_and_bytes() -> None:
    name = "test_multimodal_tool_return_matrix-direct-binary-document-openai_responses--1"
    (result,) = parse(record(name)["request"])[-1].parts
    assert isinstance(result, ToolResultPart)
    assert isinstance(result.output, ContentOutput)
    (pdf,) = result.output.parts
    assert isinstance(pdf, FilePart)
    assert pdf.media_type == "application/pdf"
    assert pdf.filename == "filename.pdf"
    assert pdf.data is not None
    assert len(pdf.data) == 13264
    assert pdf.data.startswith(b"%PDF-1.4")


@needs_corpus
def test_parse_history_with_text_result_and_a_later_user_turn() -> None:
    messages = parse(
        record("test_openai_responses_history_with_combined_tool_call_id--0")["request"]
    )
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]
    (call,) = messages[1].parts
    (result,) = messages[2].parts
    assert isinstance(call, ToolCallPart)
    assert isinstance(result, ToolResultPart)
    assert result.call_id == call.id == "call_ZWkVhdUjupo528U9dqgFeRkH"
    assert result.output == JsonOutput(value="Mexico")
    assert result.name == "get_user_country"


@needs_corpus
def test_parse_consecutive_assistant_messages_fold_into_one_message() -> None:
    messages = parse(record("test_openai_responses_thinking_part_from_other_model--1")["request"])
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    thought, answer = messages[1].parts
    assert isinstance(thought, TextPart)
    assert isinstance(answer, TextPart)
    assert thought.text.startswith("<think>\n")
    assert thought.provider_details is None  # no item id: a plain assistant message
    assert answer.text.startswith("Here's how to cross the street safely")


@needs_corpus
def test_parse_instructions_and_system_messages() -> None:
    with_instructions = parse(
        record("test_openai_responses_thinking_with_tool_calls--0")["request"]
    )
    assert with_instructions[0].role is Role.SYSTEM
    assert with_instructions[0].text.startswith("You are a helpful assistant that uses planning.")
    in_input = parse(record("test_anthropic_model_thinking_part_from_other_model--0")["request"])
    assert [(m.role, m.text) for m in in_input] == [
        (Role.SYSTEM, "You are a helpful assistant."),
        (Role.USER, "How do I cross the street?"),
    ]


@needs_corpus
@corpus_cases
def test_parse_corpus_response(record: dict[str, Any]) -> None:
    body = record["response"]
    message = parse_response(body)
    assert message.role is Role.ASSISTANT
    assert message.provider == "openai"
    assert message.model == body["model"]
    assert message.provider_details == {"response_id": body["id"], "status": "completed"}
    assert len(message.parts) == len(body["output"])
    for item, part in zip(body["output"], message.parts, strict=True):
        match item["type"]:
            case "reasoning":
                assert isinstance(part, ThinkingPart)
                assert (part.reasoning_id, part.encrypted_content) == (
                    item["id"],
                    item["encrypted_content"],
                )
                assert part.summary == [s["text"] for s in item["summary"]]
                assert part.model == body["model"]
            case "message":
                assert isinstance(part, TextPart)
                (content,) = item["content"]
                assert part.text == content["text"]
                assert part.provider_details == {"item_id": item["id"]}
            case "function_call":
                assert isinstance(part, ToolCallPart)
                assert part.provider_id == item["call_id"]
                assert part.arguments == json.loads(item["arguments"])
                assert part.provider_details == {"item_id": item["id"]}


@needs_corpus
def test_parse_response_keeps_six_summaries_joined_as_text() -> None:
    body = record("test_anthropic_model_thinking_part_from_other_model--0")["response"]
    thinking, text = parse_response(body).parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.summary is not None
    assert len(thinking.summary) == 6
    assert thinking.summary[0].startswith("**Providing street crossing advice**")
    assert thinking.text == "\n\n".join(thinking.summary)
    assert isinstance(text, TextPart)
    assert text.text.startswith("Short version:")


# -- parse: hand-written histories -------------------------------------------------------------


def _call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def _output(call_id: str, output: Any = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def test_parse_orphan_call_orphan_result_and_duplicates() -> None:
    messages = parse(
        {
            "input": [
                {"role": "user", "content": "go"},
                _call("call_a"),  # never answered
                _call("call_b"),
                _output("call_b", "first"),
                _output("call_b", "again"),  # answered twice
                _output("call_zzz"),  # answers nothing
            ]
        }
    )
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert [p.id for p in messages[1].tool_calls] == ["call_a", "call_b"]
    assert [(p.call_id, p.output) for p in messages[2].tool_results] == [
        ("call_b", JsonOutput(value="first")),
        ("call_b", JsonOutput(value="again")),
        ("call_zzz", JsonOutput(value="ok")),
    ]


def test_parse_reused_call_id_is_reminted() -> None:
    messages = parse(
        {
            "input": [
                _call("call_1"),
                _output("call_1", "a"),
                _call("call_1"),
                _output("call_1", "b"),
            ]
        }
    )
    first, second = (m.tool_calls[0] for m in messages if m.role is Role.ASSISTANT)
    assert (first.id, second.id) == ("call_1", "call_1~2")
    assert second.provider_id == "call_1"
    assert [m.tool_results[0].call_id for m in messages if m.role is Role.TOOL] == [
        "call_1",
        "call_1~2",
    ]


def test_parse_same_role_runs_and_assistant_first() -> None:
    messages = parse(
        {
            "input": [
                {"role": "assistant", "content": "Hello, I start."},
                {"role": "user", "content": "one"},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "two"}],
                },
                {"role": "developer", "content": "be brief"},
            ]
        }
    )
    assert [(m.role, m.text) for m in messages] == [
        (Role.ASSISTANT, "Hello, I start."),
        (Role.USER, "one"),
        (Role.USER, "two"),
        (Role.SYSTEM, "be brief"),
    ]
    assert messages[3].provider_details == {"role": "developer"}


def test_parse_string_input_and_instructions() -> None:
    messages = parse({"model": "gpt-5", "instructions": "sys", "input": "hi"})
    assert [(m.role, m.text) for m in messages] == [(Role.SYSTEM, "sys"), (Role.USER, "hi")]


def test_parse_assistant_item_details_phase_refusal_and_annotations() -> None:
    annotation: dict[str, JsonValue] = {
        "type": "url_citation",
        "url": "https://a.example",
        "start_index": 0,
        "end_index": 1,
        "title": "A",
    }
    (message,) = parse(
        {
            "input": [
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "status": "completed",
                    "phase": "final_answer",
                    "content": [
                        {"type": "output_text", "text": "A.", "annotations": [annotation]},
                        {"type": "refusal", "refusal": "I can't."},
                    ],
                }
            ]
        }
    )
    text, refusal = message.parts
    assert text == TextPart(
        text="A.",
        provider_details={"item_id": "msg_1", "phase": "final_answer", "annotations": [annotation]},
    )
    assert refusal == TextPart(
        text="I can't.",
        provider_details={"item_id": "msg_1", "phase": "final_answer", "refusal": True},
    )


def test_parse_raw_reasoning_content_and_missing_summary() -> None:
    (message,) = parse(
        {
            "model": "gpt-oss-120b",
            "input": [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "content": [{"type": "reasoning_text", "text": "step one"}],
                }
            ],
        }
    )
    (thinking,) = message.parts
    assert thinking == ThinkingPart(
        text="step one",
        provider="openai",
        model="gpt-oss-120b",
        reasoning_id="rs_1",
        summary=None,
        provider_details={"content": ["step one"]},
    )


def test_parse_user_media_of_every_shape() -> None:
    (message,) = parse(
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": data_url("image/png", PNG)},
                        {"type": "input_image", "image_url": "https://x.example/a.jpg"},
                        {"type": "input_image", "file_id": "file-img"},
                        {
                            "type": "input_file",
                            "file_data": data_url("application/pdf", PDF),
                            "filename": "a.pdf",
                        },
                        {
                            "type": "input_file",
                            "file_data": base64.b64encode(PDF).decode(),
                            "filename": "raw.pdf",
                        },
                        {"type": "input_file", "file_url": "https://x.example/b.pdf"},
                        {"type": "input_file", "file_id": "file-doc", "filename": "c.pdf"},
                        {
                            "type": "input_audio",
                            "input_audio": {
                                "data": base64.b64encode(b"RIFF\0\0\0\0WAVEfmt ").decode(),
                                "format": "wav",
                            },
                        },
                    ],
                }
            ]
        }
    )
    text, png, url, image_id, pdf, raw_pdf, pdf_url, pdf_id, wav = message.parts
    assert text == TextPart(text="look")
    assert isinstance(png, FilePart)
    assert (png.media_type, png.data) == ("image/png", PNG)
    assert isinstance(url, FilePart)
    assert (url.uri, url.media_type) == ("https://x.example/a.jpg", "image/jpeg")
    assert isinstance(image_id, FilePart)
    assert image_id.uri == "openai://files/file-img"
    assert isinstance(pdf, FilePart)
    assert (pdf.media_type, pdf.data, pdf.filename) == ("application/pdf", PDF, "a.pdf")
    assert isinstance(raw_pdf, FilePart)
    assert (raw_pdf.media_type, raw_pdf.data) == ("application/pdf", PDF)
    assert isinstance(pdf_url, FilePart)
    assert (pdf_url.uri, pdf_url.media_type) == ("https://x.example/b.pdf", "application/pdf")
    assert isinstance(pdf_id, FilePart)
    assert (pdf_id.uri, pdf_id.filename) == ("openai://files/file-doc", "c.pdf")
    assert isinstance(wav, FilePart)
    assert wav.media_type == "audio/wav"


def test_parse_trusts_the_bytes_over_a_wrong_declared_type() -> None:
    (message,) = parse(
        {
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": data_url("image/png", JPEG)}],
                }
            ]
        }
    )
    (image,) = message.parts
    assert isinstance(image, FilePart)
    assert image.media_type == "image/jpeg"


def test_parse_tool_output_shapes() -> None:
    (_, tool) = parse(
        {
            "input": [
                _call("c1"),
                _call("c2"),
                _call("c3"),
                _call("c4"),
                _output("c1", [{"type": "input_text", "text": "only"}]),
                _output(
                    "c2", [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]
                ),
                _output("c3", []),
                _output(
                    "c4",
                    [
                        {
                            "type": "input_image",
                            "image_url": data_url("image/png", PNG),
                            "detail": "high",
                        }
                    ],
                ),
            ]
        }
    )
    one, two, empty, image = tool.tool_results
    assert one.output == JsonOutput(value="only")
    assert two.output == ContentOutput(parts=[TextPart(text="a"), TextPart(text="b")])
    assert empty.output == JsonOutput(value="")
    assert isinstance(image.output, ContentOutput)
    assert image.output.files[0].media_type == "image/png"


def test_parse_arguments_that_are_not_an_object_are_kept_verbatim() -> None:
    (message,) = parse(
        {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{oops"}]}
    )
    (call,) = message.tool_calls
    assert (call.arguments, call.raw_arguments) == ({}, "{oops")


@pytest.mark.parametrize(
    "text", ['{"a": NaN}', '{"a": -Infinity}', '{"a": "\\ud800"}', '{"\\udfff": 1}']
)
def test_parse_arguments_that_are_not_json_values_are_kept_verbatim(text: str) -> None:
    # NaN, infinities and lone surrogates parse with json.loads, yet no provider takes them.
    (message,) = parse(
        {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": text}]}
    )
    (call,) = message.tool_calls
    assert (call.arguments, call.raw_arguments) == ({}, text)


MALFORMED: list[tuple[str, Any]] = [
    ("not an object", ["input"]),
    ("input not a list", {"input": 3}),
    ("item not an object", {"input": ["hi"]}),
    ("unknown role", {"input": [{"role": "robot", "content": "hi"}]}),
    ("role not a string", {"input": [{"role": 1, "content": "hi"}]}),
    ("message without content", {"input": [{"role": "user"}]}),
    ("content of wrong type", {"input": [{"role": "user", "content": 5}]}),
    ("unknown content part", {"input": [{"role": "user", "content": [{"type": "input_video"}]}]}),
    ("text part without text", {"input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
    (
        "bad base64",
        {
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "data:image/png;base64,!!!!"}],
                }
            ]
        },
    ),
    (
        "malformed data url",
        {
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "data:image/png;base64"}],
                }
            ]
        },
    ),
    ("image without source", {"input": [{"role": "user", "content": [{"type": "input_image"}]}]}),
    ("file without source", {"input": [{"role": "user", "content": [{"type": "input_file"}]}]}),
    (
        "bad audio format",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "ogg"}}
                    ],
                }
            ]
        },
    ),
    (
        "image in a system message",
        {
            "input": [
                {
                    "role": "system",
                    "content": [{"type": "input_image", "image_url": "https://x.example/a.png"}],
                }
            ]
        },
    ),
    (
        "call without call_id",
        {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
    ),
    ("call with empty name", {"input": [_call("c", name="")]}),
    ("arguments of wrong type", {"input": [{**_call("c"), "arguments": 7}]}),
    ("output without call_id", {"input": [{"type": "function_call_output", "output": "x"}]}),
    ("output without output", {"input": [{"type": "function_call_output", "call_id": "c"}]}),
    ("output of wrong type", {"input": [_output("c", {"x": 1})]}),
    ("reasoning without id", {"input": [{"type": "reasoning", "summary": []}]}),
    (
        "summary entry without text",
        {"input": [{"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text"}]}]},
    ),
    ("unsupported item type", {"input": [{"type": "web_search_call", "id": "ws_1"}]}),
    ("item reference", {"input": [{"type": "item_reference", "id": "msg_1"}]}),
    ("instructions of wrong type", {"instructions": 5, "input": []}),
    ("model of wrong type", {"model": 5, "input": []}),
]


@pytest.mark.parametrize(("why", "payload"), MALFORMED, ids=[w for w, _ in MALFORMED])
def test_parse_refuses_malformed_payloads(why: str, payload: Any) -> None:
    with pytest.raises(MalformedPayloadError):
        parse(payload)


@pytest.mark.parametrize(
    "body",
    [
        {"output": "x"},
        {"model": "gpt-5"},
        {"output": [{"role": "user", "content": "hi"}]},
        {"output": [_output("c")]},
        {"output": [{"type": "web_search_call", "id": "ws_1", "status": "completed"}]},
    ],
)
def test_parse_response_refuses_malformed_bodies(body: dict[str, Any]) -> None:
    with pytest.raises(MalformedPayloadError):
        parse_response(body)


def test_parse_response_keeps_incomplete_reason() -> None:
    message = parse_response(
        {
            "id": "resp_1",
            "model": "gpt-5",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [],
        }
    )
    assert message.parts == []
    assert message.provider_details == {
        "response_id": "resp_1",
        "status": "incomplete",
        "incomplete_reason": "max_output_tokens",
    }


# -- parse: mutations of real payloads ---------------------------------------------------------

KITCHEN_SINK: dict[str, Any] = {
    "model": "gpt-5",
    "instructions": "be kind",
    "input": [
        {"role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": data_url("image/png", PNG), "detail": "low"},
                {"type": "input_image", "file_id": "file-1"},
                {
                    "type": "input_file",
                    "file_data": data_url("application/pdf", PDF),
                    "filename": "a.pdf",
                },
                {"type": "input_file", "file_url": "https://x.example/b.pdf"},
                {
                    "type": "input_audio",
                    "input_audio": {"data": "UklGRgAAAABXQVZF", "format": "wav"},
                },
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "s"}],
            "content": [{"type": "reasoning_text", "text": "r"}],
            "encrypted_content": "enc",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "phase": "commentary",
            "content": [
                {"type": "output_text", "text": "t", "annotations": []},
                {"type": "refusal", "refusal": "no"},
            ],
        },
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": '{"a":1}',
            "id": "fc_1",
        },
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{bad"},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
        {
            "type": "function_call_output",
            "call_id": "c2",
            "output": [
                {"type": "input_text", "text": "img"},
                {"type": "input_image", "image_url": data_url("image/jpeg", JPEG)},
                {
                    "type": "input_file",
                    "file_data": base64.b64encode(PDF).decode(),
                    "filename": "c.pdf",
                },
            ],
        },
        {"role": "assistant", "content": "bye"},
    ],
}


def test_parse_kitchen_sink() -> None:
    messages = parse(KITCHEN_SINK)
    assert [m.role for m in messages] == [
        Role.SYSTEM,
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert [p.kind for p in messages[3].parts] == [
        "thinking",
        "text",
        "text",
        "tool_call",
        "tool_call",
    ]
    assert [len(m.parts) for m in messages] == [1, 1, 6, 5, 2, 1]


_MUTATION_SEEDS = [
    Seed(name, TARGET, kind, rec.get("model"), rec[kind])
    for name, rec in [*CORPUS, ("kitchen-sink", {"request": KITCHEN_SINK})]
    for kind in ("request", "response")
    if kind in rec
]


@needs_corpus
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants(_MUTATION_SEEDS))
def test_mutated_corpus_payloads_raise_only_convstore_errors(mutant: Mutant) -> None:
    try:
        if mutant.seed.kind == "request":
            parse(mutant.payload)
        else:
            parse_response(mutant.payload)
    except ConvstoreError:
        pass


# -- encode ------------------------------------------------------------------------------------


def test_encode_user_turns() -> None:
    plan = make_plan(
        [
            UserTurn([Text("just text")]),
            UserTurn(
                [
                    Text("look"),
                    Media("image/png", data=PNG, label="aa11"),
                    Media("image/jpeg", uri="https://x.example/a.jpg", label="bb22"),
                    Media("application/pdf", data=PDF, filename="report.pdf", label="cc33"),
                    Media("application/pdf", data=PDF, label="dd44"),
                    Media("application/pdf", uri="https://x.example/b.pdf", label="ee55"),
                    Media("image/png", uri="openai://files/file-img", label="ff66"),
                    Media("application/pdf", uri="openai://files/file-doc", filename="c.pdf"),
                ]
            ),
        ]
    )
    assert items_of(plan) == [
        {"role": "user", "content": "just text"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": data_url("image/png", PNG)},
                {"type": "input_image", "detail": "auto", "image_url": "https://x.example/a.jpg"},
                {
                    "type": "input_file",
                    "file_data": data_url("application/pdf", PDF),
                    "filename": "report.pdf",
                },
                {
                    "type": "input_file",
                    "file_data": data_url("application/pdf", PDF),
                    "filename": "file-dd44.pdf",
                },
                {"type": "input_file", "file_url": "https://x.example/b.pdf"},
                {"type": "input_image", "detail": "auto", "file_id": "file-img"},
                {"type": "input_file", "file_id": "file-doc", "filename": "c.pdf"},
            ],
        },
    ]


def test_encode_system_prompts_become_instructions() -> None:
    none = make_plan([UserTurn([Text("hi")])])
    assert "instructions" not in encode(none)
    one = make_plan([UserTurn([Text("hi")])], system=("Be brief.",))
    assert encode(one)["instructions"] == "Be brief."
    assert one.diagnostics.notes == []
    two = make_plan([UserTurn([Text("hi")])], system=("Be brief.", "Answer in French."))
    assert encode(two)["instructions"] == "Be brief.\n\nAnswer in French."
    assert two.diagnostics.notes == [
        "2 system prompts joined, in order, into one instructions text"
    ]


def test_encode_foreign_assistant_text_is_a_plain_message() -> None:
    plan = make_plan(
        [
            UserTurn([Text("q")]),
            AssistantTurn(
                [Text("<thinking>\nhmm\n</thinking>"), Text("answer", {"item_id": "msg_9"})],
                provider="anthropic",
                model="claude-sonnet-4-5",
            ),
        ]
    )
    assert items_of(plan)[1:] == [
        {"role": "assistant", "content": "<thinking>\nhmm\n</thinking>"},
        {"role": "assistant", "content": "answer"},
    ]


def test_encode_replays_reasoning_with_the_message_it_preceded() -> None:
    plan = make_plan(
        [
            UserTurn([Text("q")]),
            AssistantTurn(
                [
                    reasoning(summary=["**Plan**\n\nthink", "more"], raw=["raw cot"]),
                    Text("Answer,", {"item_id": "msg_1", "phase": "final_answer"}),
                    Text(" continued.", {"item_id": "msg_1", "phase": "final_answer"}),
                ],
                provider="openai",
                model="gpt-5",
            ),
        ]
    )
    assert items_of(plan)[1:] == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "**Plan**\n\nthink"},
                {"type": "summary_text", "text": "more"},
            ],
            "encrypted_content": "gAAA-enc",
            "content": [{"type": "reasoning_text", "text": "raw cot"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            # One item, as the provider produced it: an item id goes out once.
            "content": [
                {"type": "output_text", "text": "Answer,", "annotations": []},
                {"type": "output_text", "text": " continued.", "annotations": []},
            ],
            "phase": "final_answer",
        },
    ]
    assert plan.diagnostics.reasoning == []


def test_encode_replays_refusal_and_annotations_with_the_item_id() -> None:
    annotation: dict[str, JsonValue] = {
        "type": "url_citation",
        "url": "https://a.example",
        "start_index": 0,
        "end_index": 1,
        "title": "A",
    }
    plan = make_plan(
        [
            AssistantTurn(
                [
                    reasoning(),
                    Text("A.", {"item_id": "msg_1", "annotations": [annotation]}),
                    reasoning("rs_2"),
                    Text("No.", {"item_id": "msg_2", "refusal": True}),
                ],
                provider="openai",
            )
        ]
    )
    items = items_of(plan)
    assert items[1]["content"] == [
        {"type": "output_text", "text": "A.", "annotations": [annotation]}
    ]
    assert items[3]["content"] == [{"type": "refusal", "refusal": "No."}]


def test_encode_replays_reasoning_with_its_calls_and_their_item_ids() -> None:
    first = make_call("call_1", item_id="fc_1", same_provider=True)
    second = make_call("call_2", "get_time", {}, item_id="fc_2", same_provider=True)
    plan = make_plan(
        [
            UserTurn([Text("weather and time?")]),
            AssistantTurn([reasoning(summary=[]), first, second], provider="openai"),
            ToolTurn([Result(first, JsonBody({"temp": 21})), Result(second, JsonBody("noon"))]),
        ]
    )
    assert items_of(plan)[1:] == [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA-enc"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_1",
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_time",
            "arguments": "{}",
            "id": "fc_2",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp":21}'},
        {"type": "function_call_output", "call_id": "call_2", "output": "noon"},
    ]


def test_encode_sends_no_item_id_without_its_reasoning() -> None:
    """An ``fc_``/``msg_`` id without the reasoning it followed is refused by the API."""
    call = make_call(item_id="fc_1", same_provider=True)
    plan = make_plan(
        [
            AssistantTurn([Text("Let me check.", {"item_id": "msg_0"}), call], provider="openai"),
            ToolTurn([Result(call, JsonBody("sunny"))]),
        ]
    )
    assert items_of(plan) == [
        {"role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]


@pytest.mark.parametrize(
    ("turn_parts", "reason"),
    [
        pytest.param(
            [reasoning(encrypted=None), make_call(item_id="fc_1", same_provider=True)],
            "it has no encrypted_content",
            id="no-encrypted-content",
        ),
        pytest.param(
            [reasoning(reasoning_id=None), make_call(item_id="fc_1", same_provider=True)],
            "it has no Responses reasoning item id",
            id="no-reasoning-id",
        ),
        pytest.param(
            [reasoning(), make_call(item_id=None, same_provider=True)],
            "the item it preceded is not replayed",
            id="follower-without-item-id",
        ),
        pytest.param(
            [
                reasoning(),
                make_call("call_x", item_id="fc_1", same_provider=True, provider_id="call:x"),
            ],
            "the item it preceded is not replayed",
            id="follower-id-projected",
        ),
        pytest.param(
            [reasoning(), make_call(item_id="fc_1", same_provider=True, wire_name="get_w")],
            "the item it preceded is not replayed",
            id="follower-name-projected",
        ),
        pytest.param(
            [reasoning(), make_call(item_id="fc_1", same_provider=False)],
            "the item it preceded is not replayed",
            id="follower-from-another-provider",
        ),
    ],
)
def test_encode_drops_reasoning_that_cannot_go_with_its_follower(
    turn_parts: list[Any], reason: str
) -> None:
    call = turn_parts[-1]
    plan = make_plan(
        [AssistantTurn(turn_parts, provider="openai"), ToolTurn([Result(call, JsonBody("ok"))])]
    )
    items = items_of(plan)
    assert [i.get("type") for i in items] == ["function_call", "function_call_output"]
    assert "id" not in items[0]
    (note,) = plan.diagnostics.reasoning
    assert (note.action, note.provider) == ("dropped", "openai")
    assert note.reason.startswith(f"{TARGET} encoder: {reason}")


def test_encode_drops_a_whole_reasoning_run_when_one_of_it_cannot_go() -> None:
    call = make_call(item_id="fc_1", same_provider=True)
    plan = make_plan(
        [
            AssistantTurn(
                [reasoning("rs_a"), reasoning("rs_b", encrypted=None), call], provider="openai"
            ),
            ToolTurn([Result(call, JsonBody("ok"))]),
        ]
    )
    items = items_of(plan)
    assert [i["type"] for i in items] == ["function_call", "function_call_output"]
    assert "id" not in items[0]
    assert [n.action for n in plan.diagnostics.reasoning] == ["dropped", "dropped"]


def test_encode_replays_a_run_of_reasoning_items_before_their_follower() -> None:
    plan = make_plan(
        [
            AssistantTurn(
                [reasoning("rs_a"), reasoning("rs_b"), Text("x", {"item_id": "msg_1"})],
                provider="openai",
            )
        ]
    )
    assert [(i["type"], i["id"]) for i in items_of(plan)] == [
        ("reasoning", "rs_a"),
        ("reasoning", "rs_b"),
        ("message", "msg_1"),
    ]


def test_encode_drops_trailing_reasoning_and_records_it() -> None:
    plan = make_plan(
        [AssistantTurn([Text("done", {"item_id": "msg_1"}), reasoning()], provider="openai")]
    )
    assert items_of(plan) == [{"role": "assistant", "content": "done"}]
    (note,) = plan.diagnostics.reasoning
    assert note.action == "dropped"


def test_encode_reasoning_summary_falls_back_to_text() -> None:
    plan = make_plan(
        [
            AssistantTurn(
                [reasoning(summary=None, text="thought"), Text("a", {"item_id": "m"})],
                provider="openai",
            )
        ]
    )
    assert items_of(plan)[0]["summary"] == [{"type": "summary_text", "text": "thought"}]


def test_encode_assistant_media_becomes_a_text_note() -> None:
    plan = make_plan(
        [AssistantTurn([Media("image/png", data=PNG, label="ab12")], provider="gemini")]
    )
    assert items_of(plan) == [{"role": "assistant", "content": "[file ab12 (image/png)]"}]
    (note,) = plan.diagnostics.media
    assert (note.placement, note.media_type, note.label) == ("text_note", "image/png", "ab12")


def test_encode_every_result_body() -> None:
    calls = [make_call(f"call_{n}") for n in range(6)]
    bodies: list[ResultBody] = [
        JsonBody("plain text"),
        JsonBody({"a": [1, "é"]}),
        ErrorBody("file not found"),
        ContentBody([Text("line 1"), Text("line 2")]),
        ContentBody(
            [
                Text("Here is the image:"),
                Media("image/jpeg", data=JPEG, label="j1"),
                Media("image/png", uri="https://x.example/p.png", label="p1"),
                Text("and the report"),
                Media("application/pdf", data=PDF, filename="r.pdf", label="d1"),
            ]
        ),
        ContentBody([Media("application/pdf", uri="https://x.example/r.pdf", label="u1")]),
    ]
    plan = make_plan(
        [
            AssistantTurn(list(calls), provider="openai"),
            ToolTurn([Result(c, b) for c, b in zip(calls, bodies, strict=True)]),
        ]
    )
    outputs = [i["output"] for i in items_of(plan)[6:]]
    assert outputs == [
        "plain text",
        '{"a":[1,"é"]}',
        "file not found",
        "line 1\nline 2",
        [
            {"type": "input_text", "text": "Here is the image:"},
            {"type": "input_image", "detail": "auto", "image_url": data_url("image/jpeg", JPEG)},
            {"type": "input_image", "detail": "auto", "image_url": "https://x.example/p.png"},
            {"type": "input_text", "text": "and the report"},
            {
                "type": "input_file",
                "file_data": data_url("application/pdf", PDF),
                "filename": "r.pdf",
            },
        ],
        [{"type": "input_file", "file_url": "https://x.example/r.pdf"}],
    ]


def test_encode_uses_wire_ids_names_and_raw_arguments() -> None:
    call = Call(
        call_id="canonical~2",
        wire_id="canonical_2",
        name="tools.search",
        wire_name="tools_search",
        arguments={},
        raw_arguments="{broken",
    )
    plan = make_plan(
        [AssistantTurn([call]), ToolTurn([Result(call, ErrorBody("bad args"), synthetic=True)])]
    )
    assert items_of(plan) == [
        {
            "type": "function_call",
            "call_id": "canonical_2",
            "name": "tools_search",
            "arguments": "{broken",
        },
        {"type": "function_call_output", "call_id": "canonical_2", "output": "bad args"},
    ]


# -- round trips through the planner -----------------------------------------------------------


def _expected_input(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The corpus input as convstore renders it: system messages move to ``instructions``,
    and an item id is kept only right after its reasoning (or a sibling that kept its id)."""
    expected: list[dict[str, Any]] = []
    chained = False
    for item in wire:
        if item.get("role") == "system":
            continue
        kind = item.get("type")
        if kind == "function_call" and not chained:
            expected.append({k: v for k, v in item.items() if k != "id"})
            continue
        chained = kind == "reasoning" or (chained and kind == "function_call")
        expected.append(item)
    return expected


@needs_corpus
@corpus_cases
def test_corpus_request_round_trips_through_the_planner(record: dict[str, Any]) -> None:
    request = record["request"]
    messages = parse(request)
    plan = plan_messages(messages, target=TARGET, model=record["model"])
    payload = encode(plan)
    assert_sdk_valid(payload["input"])
    assert payload["input"] == _expected_input(request["input"])
    system = [i["content"] for i in request["input"] if i.get("role") == "system"]
    if "instructions" in request:
        system.insert(0, request["instructions"])
    assert payload.get("instructions") == ("\n\n".join(system) if system else None)
    assert plan.diagnostics.synthetic_results == []
    assert plan.diagnostics.dropped_results == []
    assert all(n.action == "kept" for n in plan.diagnostics.reasoning)


@needs_corpus
def test_the_one_corpus_call_without_reasoning_loses_only_its_item_id() -> None:
    request = record("test_openai_responses_history_with_combined_tool_call_id--0")["request"]
    payload = encode(plan_messages(parse(request), target=TARGET, model="gpt-5"))
    original = request["input"][1]
    assert payload["input"][1] == {k: v for k, v in original.items() if k != "id"}


@needs_corpus
@corpus_cases
def test_response_then_results_render_as_the_next_request(record: dict[str, Any]) -> None:
    """Parse a response, answer its calls, and render: the reasoning goes back with its item."""
    answer = parse_response(record["response"])
    history = [Message.user("q"), answer]
    history += [Message.tool_result(call.id, "done") for call in answer.tool_calls]
    plan = plan_messages(history, target=TARGET, model=record["response"]["model"])
    items = items_of(plan)[1:]
    output = record["response"]["output"]
    assert [i.get("type", "message") for i in items[: len(output)]] == [o["type"] for o in output]
    follows_reasoning = False
    for item, original in zip(items, output, strict=False):
        # An item id goes back only right after the reasoning it followed.
        assert item.get("id") == (
            original["id"] if follows_reasoning or original["type"] == "reasoning" else None
        )
        if original["type"] == "function_call":
            assert item["call_id"] == original["call_id"]
            assert item["arguments"] == original["arguments"]
        if original["type"] == "reasoning":
            assert item["encrypted_content"] == original["encrypted_content"]
        follows_reasoning = original["type"] == "reasoning" or (follows_reasoning and "id" in item)
    assert [i["type"] for i in items[len(output) :]] == ["function_call_output"] * len(
        answer.tool_calls
    )


def test_foreign_reasoning_is_dropped_or_sent_as_text_by_the_planner() -> None:
    history = [
        Message.user("How do I cross the street?"),
        Message.assistant(
            ThinkingPart(
                text="Safety first.",
                provider="anthropic",
                model="claude-sonnet-4-5",
                signature="sig",
            ),
            "Look both ways.",
            provider="anthropic",
            model="claude-sonnet-4-5",
        ),
        Message.user("And a river?"),
    ]
    dropped = encode(plan_messages(history, target=TARGET, model="gpt-5"))
    assert dropped["input"][1] == {"role": "assistant", "content": "Look both ways."}
    as_text = encode(plan_messages(history, target=TARGET, model="gpt-5", reasoning="text"))
    assert as_text["input"][1:3] == [
        {"role": "assistant", "content": "<thinking>\nSafety first.\n</thinking>"},
        {"role": "assistant", "content": "Look both ways."},
    ]


def test_error_and_content_outputs_render_from_canonical_results() -> None:
    history = [
        Message.user("go"),
        Message.assistant(ToolCallPart(id="c1", name="read"), ToolCallPart(id="c2", name="shot")),
        Message.tool_result("c1", ErrorOutput(message="no such file")),
        Message.tool_result(
            "c2", ContentOutput(parts=[TextPart(text="screen"), FilePart.from_bytes(PNG)])
        ),
    ]
    items = items_of(plan_messages(history, target=TARGET, model="gpt-5"))
    assert items[3] == {"type": "function_call_output", "call_id": "c1", "output": "no such file"}
    assert items[4]["output"][0] == {"type": "input_text", "text": "screen"}
    assert items[4]["output"][1]["image_url"] == data_url("image/png", PNG)


def test_module_exports() -> None:
    assert responses.TARGET == "openai-responses"
    assert set(responses.__all__) == {"TARGET", "encode", "parse", "parse_response"}
    assert get_args(ResponseInputItemParam)  # the oracle union is populated


# -- golden payloads of the shared conversations -----------------------------------------------

GOLDEN_DIR = Path(__file__).parent / "golden" / TARGET
GOLDEN_MODEL = dict(TARGET_MODELS)[TARGET]


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    """Render each shared conversation; compare with the checked-in, reviewed golden file.

    ``CONVSTORE_UPDATE_GOLDEN=1`` rewrites the files (review the diff before committing).
    """
    rendered = render(CASES[case], TARGET, model=GOLDEN_MODEL)
    assert_sdk_valid(rendered.payload["input"])
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    path = GOLDEN_DIR / f"{case}.json"
    if os.environ.get("CONVSTORE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == json.loads(json.dumps(actual))


# -- regressions: fuzzed histories that parsed, then rendered into refused requests -----------
# Each render must pass the independent wire rules and the SDK's request types
# (tests/support/wire_rules.py).


def _reasoning_item(item_id: str = "rs_1") -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": "plan"}],
        "encrypted_content": "gAAA-enc",
    }


def _answer(annotations: JsonValue = None) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Answer.", "annotations": annotations or []}],
    }


def test_repeated_reasoning_item_is_kept_by_parse_and_replayed_once() -> None:
    # The fuzz reproducer: a response's reasoning output item repeated.
    message = parse_response({"model": "gpt-5", "output": [_reasoning_item()] * 2 + [_answer()]})
    assert [p.kind for p in message.parts] == ["thinking", "thinking", "text"]  # as given
    rendered = render([Message.user("q"), message], TARGET, model="gpt-5")
    check_payload(TARGET, "gpt-5", rendered.payload)
    assert [(i.get("type"), i.get("id")) for i in rendered.payload["input"][1:]] == [
        ("reasoning", "rs_1"),
        ("message", "msg_1"),
    ]
    first, repeat = rendered.diagnostics.reasoning
    assert (first.action, repeat.action) == ("kept", "dropped")
    assert "same reasoning item 'rs_1'" in repeat.reason


def test_repeated_reasoning_item_before_a_call_in_a_request_is_replayed_once() -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": "{}",
    }
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    messages = parse(
        {
            "model": "gpt-5",
            "input": [
                {"role": "user", "content": "q"},
                _reasoning_item(),
                _reasoning_item(),
                call,
                output,
            ],
        }
    )
    rendered = render(messages, TARGET, model="gpt-5", reasoning="text")
    check_payload(TARGET, "gpt-5", rendered.payload)
    # A repeat is left out even with reasoning="text": its content already reaches the model.
    assert [i.get("type") for i in rendered.payload["input"][1:]] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert rendered.payload["input"][2]["id"] == "fc_1"


_BAD_ANNOTATIONS: Final[dict[str, JsonValue]] = {
    "not-an-object": [1],
    "array-of-arrays": [[[{"type": "file_path", "file_id": "f", "index": 0}]]],
    "unknown-type": [{"type": "page_citation", "page": 1}],
    "no-type": [{"url": "https://a.example"}],
    "missing-field": [{"type": "url_citation", "url": "https://a.example", "title": "A"}],
    "string-index": [{"type": "file_path", "file_id": "f", "index": "0"}],
    "boolean-index": [{"type": "file_citation", "file_id": "f", "filename": "a", "index": True}],
}


@pytest.mark.parametrize("annotations", _BAD_ANNOTATIONS.values(), ids=_BAD_ANNOTATIONS.keys())
def test_annotations_of_an_unexpected_shape_are_malformed(annotations: JsonValue) -> None:
    # Was: kept, then replayed as they were, which the SDK's input type (and the API) refuse.
    answer = _answer(annotations)
    with pytest.raises(MalformedPayloadError, match=r"annotations\[0\]"):
        parse({"input": [{"role": "user", "content": "q"}, answer]})
    with pytest.raises(MalformedPayloadError, match=r"annotations\[0\]"):
        parse_response({"output": [answer]})


def test_every_declared_annotation_shape_parses_and_replays() -> None:
    annotations: list[JsonValue] = [
        {"type": "file_citation", "file_id": "f", "filename": "a.pdf", "index": 0},
        {"type": "url_citation", "url": "https://a.example", "title": "A", "start_index": 0,
         "end_index": 1},
        {"type": "container_file_citation", "container_id": "c", "file_id": "f",
         "filename": "a.csv", "start_index": 0, "end_index": 1},
        {"type": "file_path", "file_id": "f", "index": 0},
    ]  # fmt: skip
    answer = _answer(annotations)
    message = parse_response({"model": "gpt-5", "output": [_reasoning_item(), answer]})
    rendered = render([Message.user("q"), message], TARGET, model="gpt-5")
    check_payload(TARGET, "gpt-5", rendered.payload)
    assert rendered.payload["input"][2]["content"][0]["annotations"] == annotations


def test_render_replays_only_annotations_the_input_type_takes() -> None:
    # provider_details of a hand-built part are not parsed: render must still be valid.
    good = {"type": "file_path", "file_id": "f", "index": 0}
    message = Message(
        role=Role.ASSISTANT,
        provider="openai",
        model="gpt-5",
        parts=[
            ThinkingPart(
                provider="openai", model="gpt-5", reasoning_id="rs_1", encrypted_content="e"
            ),
            TextPart(
                text="Answer.",
                provider_details={
                    "item_id": "msg_1",
                    "annotations": [{**good, "extra": 1}, {"type": "bogus"}, "x"],
                },
            ),
        ],
    )
    rendered = render([Message.user("q"), message], TARGET, model="gpt-5")
    check_payload(TARGET, "gpt-5", rendered.payload)
    assert rendered.payload["input"][2]["content"][0]["annotations"] == [good]
    left_out = [n for n in rendered.diagnostics.notes if "annotation was left out" in n]
    assert len(left_out) == 2


def test_encode_sends_an_item_id_once_per_request() -> None:
    """A message item stored twice (a history imported twice, say) keeps its id only once:
    the API refuses "Duplicate item found with id msg_..." in one input."""
    message = Text("same", {"item_id": "msg_7"})
    plan = make_plan(
        [
            UserTurn([Text("q")]),
            AssistantTurn([reasoning("rs_a"), message], provider="openai", model="gpt-5"),
            UserTurn([Text("again")]),
            AssistantTurn([reasoning("rs_b"), message], provider="openai", model="gpt-5"),
        ]
    )
    items = items_of(plan)
    assert [item.get("id") for item in items if item.get("type") == "message"] == ["msg_7"]
    assert items[-1] == {"role": "assistant", "content": "same"}
    assert [n.reason for n in plan.diagnostics.reasoning] == [
        f"{TARGET} encoder: the item it preceded is not replayed right after it with its "
        "original id"
    ]
    check_payload(TARGET, "gpt-5", {"input": items})
