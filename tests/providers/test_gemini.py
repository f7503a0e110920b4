"""Gemini ``generateContent``: parsing the accepted corpus and stored histories, encoding plans.

The accepted corpus (real requests and responses that the API answered with HTTP 200) is the
ground truth: every Gemini record must parse, and rendering a parsed request back for the same
model must give the same contents (modulo spelling the API treats as equal: base64 alphabet,
camelCase vs snake_case keys).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from google.genai import types as genai
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError

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
from convstore.providers import gemini
from convstore.providers._encoding import json_text
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
from tests.fuzz import Mutant, Seed, mutants, seeds
from tests.support.corpus import corpus_guard, corpus_records
from tests.support.wire_rules import check_payload

from .conversations import CASES, TARGET_MODELS

GEMINI_3 = "gemini-3-flash-preview"
GEMINI_25 = "gemini-2.5-flash"
DUMMY = "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv"

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(24))
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


RECORDS = corpus_records("gemini")
needs_corpus = corpus_guard(RECORDS, "gemini")


def record(name: str) -> dict[str, Any]:
    return next(r for r in RECORDS if r["name"] == name)


def request_of(rec: dict[str, Any]) -> dict[str, Any]:
    """The request body with the model the URL named (the corpus bodies do not repeat it)."""
    return {**rec["request"], "model": rec["model"]}


def b64(text: str) -> bytes:
    cleaned = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4))


def get(obj: dict[str, Any], camel: str) -> Any:
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return obj.get(camel, obj.get(snake))


# -- parsing the corpus ----------------------------------------------------------------------


def expected_roles(contents: list[dict[str, Any]]) -> list[str]:
    roles: list[str] = []
    for content in contents:
        if content["role"] == "model":
            roles.append("assistant")
            continue
        responses = [p for p in content["parts"] if "functionResponse" in p]
        if responses:
            roles.append("tool")
        if len(responses) < len(content["parts"]):
            roles.append("user")
    return roles


@needs_corpus
@pytest.mark.parametrize("rec", RECORDS, ids=[r["name"] for r in RECORDS])
def test_every_corpus_request_parses_faithfully(rec: dict[str, Any]) -> None:
    request = request_of(rec)
    messages = gemini.parse(request)
    conversation = [m for m in messages if m.role is not Role.SYSTEM]
    assert [m.role.value for m in conversation] == expected_roles(request["contents"])

    wire_parts = [p for c in request["contents"] for p in c["parts"]]
    wire_calls = [p for p in wire_parts if "functionCall" in p]
    calls = [p for m in messages for p in m.tool_calls]
    assert [(c.name, c.arguments, c.provider_id) for c in calls] == [
        (p["functionCall"]["name"], p["functionCall"]["args"], p["functionCall"].get("id"))
        for p in wire_calls
    ]
    # Every signature is kept, verbatim, right before the part it rode on.
    for message in messages:
        for before, after in zip(message.parts, message.parts[1:], strict=False):
            if isinstance(before, ThinkingPart) and before.rides_on == "tool_call":
                assert isinstance(after, ToolCallPart)
    signatures = [p.signature for m in messages for p in m.parts if isinstance(p, ThinkingPart)]
    assert [s for s in signatures if s] == [
        p["thoughtSignature"] for p in wire_parts if "thoughtSignature" in p
    ]
    # Results answer the calls, in order, by canonical id.
    results = [p for m in messages for p in m.tool_results]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert [r.name for r in results] == [c.name for c in calls]
    # Media bytes survive, whatever base64 alphabet carried them.
    wire_media = [p["inlineData"] for p in wire_parts if "inlineData" in p] + [
        get(q, "inlineData")
        for p in wire_parts
        if "functionResponse" in p
        for q in p["functionResponse"].get("parts", [])
    ]
    files = [p for m in messages for p in m.parts if isinstance(p, FilePart)] + [
        f for r in results if isinstance(r.output, ContentOutput) for f in r.output.files
    ]
    assert sorted((f.media_type, f.data) for f in files) == sorted(
        (get(w, "mimeType"), b64(w["data"])) for w in wire_media
    )
    for message in messages:
        if message.role is Role.ASSISTANT:
            assert message.provider == "gemini"
            assert message.model == rec["model"]


@needs_corpus
@pytest.mark.parametrize("rec", RECORDS, ids=[r["name"] for r in RECORDS])
def test_every_corpus_response_parses(rec: dict[str, Any]) -> None:
    body = rec["response"]
    message = gemini.parse_response(body)
    candidate = body["candidates"][0]
    assert message.role is Role.ASSISTANT
    assert message.provider == "gemini"
    assert message.model == body["modelVersion"]
    assert message.provider_details == {
        "response_id": body["responseId"],
        "finish_reason": candidate["finishReason"],
    }
    wire = candidate["content"]["parts"]
    signed = [p["thoughtSignature"] for p in wire if "thoughtSignature" in p]
    thinking = [p for p in message.parts if isinstance(p, ThinkingPart)]
    assert [t.signature for t in thinking if t.signature] == signed
    assert all(t.provider == "gemini" and t.model == body["modelVersion"] for t in thinking)
    for call in message.tool_calls:
        # The API sends no call ids; positional ids are scoped by the response id.
        assert call.provider_id is None
        assert call.id.startswith(f"gemini_{body['responseId']}_")
    texts = [p["text"] for p in wire if "text" in p and not p.get("thought")]
    assert [p.text for p in message.parts if isinstance(p, TextPart)] == texts


@needs_corpus
def test_gemini_25_sibling_media_request() -> None:
    messages = gemini.parse(request_of(record("test_mixed_content_ordering-google_2_5--1")))
    user, assistant, tool, injected = messages
    assert user.text == "Call the get_mixed_content tool and describe what you received."
    signature, call = assistant.parts
    assert isinstance(signature, ThinkingPart)
    assert signature.rides_on == "tool_call"
    assert signature.signature is not None
    assert signature.signature.startswith("CpsBAb4-9vuc")
    assert isinstance(call, ToolCallPart)
    assert call.id == call.provider_id == "pyd_ai_d4ee90bdc475491d92e2191862d2f23e"
    (result,) = tool.tool_results
    assert result.call_id == call.id
    # An application's own wrapping is kept whole: only "output"/"error" have API meaning.
    assert result.output == JsonOutput(
        value={
            "files": ["See file 241a70."],
            "return_value": ["Here is the image:", {"pydantic_ai_marker": "test_42"}],
        }
    )
    assert injected.role is Role.USER
    text, image = injected.parts
    assert text == TextPart(text="This is file 241a70:")
    assert isinstance(image, FilePart)
    assert image.media_type == "image/jpeg"
    assert image.data is not None
    assert len(image.data) == 98572
    assert image.data.startswith(b"\xff\xd8\xff")


@needs_corpus
def test_gemini_3_nested_media_request() -> None:
    messages = gemini.parse(request_of(record("test_model_sees_multiple_images-google_gemini3--2")))
    (result,) = messages[2].tool_results
    assert isinstance(result.output, ContentOutput)
    jpeg, png = result.output.parts  # response {} carries no text
    assert isinstance(jpeg, FilePart)
    assert jpeg.media_type == "image/jpeg"
    assert isinstance(png, FilePart)
    assert png.media_type == "image/png"
    assert jpeg.data is not None
    assert len(jpeg.data) == 98572
    assert png.data is not None
    assert len(png.data) == 113340

    mixed = gemini.parse(request_of(record("test_mixed_content_ordering-google_gemini3--1")))
    (result,) = mixed[2].tool_results
    assert isinstance(result.output, ContentOutput)
    text, image = result.output.parts
    assert text == TextPart(
        text='{"return_value":["Here is the image:",{"pydantic_ai_marker":"test_42"}]}'
    )
    assert isinstance(image, FilePart)
    assert image.media_type == "image/jpeg"


@needs_corpus
def test_error_responses_become_error_outputs() -> None:
    messages = gemini.parse(
        request_of(
            record("test_multimodal_tool_return_matrix-direct-binary-image-google_gemini3--3")
        )
    )
    outputs = [r.output for m in messages for r in m.tool_results]
    assert isinstance(outputs[0], ErrorOutput)
    assert outputs[0].message.startswith("Unknown tool name: 'list_files'")
    assert isinstance(outputs[1], ErrorOutput)
    assert isinstance(outputs[2], ContentOutput)
    # Three sequential steps, each call answered by its own id.
    calls = [c for m in messages for c in m.tool_calls]
    assert [c.name for c in calls] == ["list_files", "get_file", "get_file"]
    assert len({c.id for c in calls}) == 3


@needs_corpus
def test_thoughts_and_system_instruction() -> None:
    messages = gemini.parse(
        request_of(record("test_google_model_thinking_part_from_other_model--1"))
    )
    system, _user, assistant, _again = messages
    assert system == Message.system("You are a helpful assistant.")
    thoughts = [p for p in assistant.parts if isinstance(p, ThinkingPart)]
    assert len(thoughts) == 5
    assert all(t.text.startswith("**") and t.signature is None for t in thoughts)
    assert all(t.provider == "gemini" and t.model == "gemini-2.5-pro" for t in thoughts)
    assert isinstance(assistant.parts[-1], TextPart)


@needs_corpus
def test_dummy_signature_on_foreign_call_is_kept() -> None:
    messages = gemini.parse(request_of(record("test_thinking_with_tool_calls_from_other_model--2")))
    signature, call = messages[1].parts
    assert isinstance(signature, ThinkingPart)
    assert signature.signature == DUMMY
    assert signature.rides_on == "tool_call"
    assert isinstance(call, ToolCallPart)
    assert call.id == "call_1w9YRdMtRTRucwZShoZYlLJp"
    (result,) = messages[2].tool_results
    assert result.output == JsonOutput(value={"return_value": "Mexico"})


@needs_corpus
def test_response_with_signed_text() -> None:
    message = gemini.parse_response(
        record("test_google_model_thinking_part_from_other_model--1")["response"]
    )
    thought, signature, text = message.parts
    assert isinstance(thought, ThinkingPart)
    assert thought.text.startswith("**Analogies")
    assert thought.signature is None
    assert thought.rides_on is None
    assert isinstance(signature, ThinkingPart)
    assert signature.rides_on == "text"
    assert signature.text == ""
    assert signature.signature is not None
    assert isinstance(text, TextPart)
    assert text.text.startswith("Of course.")


# -- parsing stored histories ----------------------------------------------------------------


def call_part(name: str, call_id: str | None = None, **extra: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": {"q": name}}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call, **extra}


def response_part(name: str, response: Any, call_id: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        reply["id"] = call_id
    return {"functionResponse": reply}


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def test_snake_case_keys_at_every_depth() -> None:
    payload = {
        "system_instruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            user(
                {"text": "look"}, {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo"}}
            ),
            model({"function_call": {"name": "f", "args": {}}, "thought_signature": "c2ln"}),
            user(
                {
                    "function_response": {
                        "name": "f",
                        "response": {},
                        "parts": [
                            {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}
                        ],
                    }
                },
                {"file_data": {"mime_type": "application/pdf", "file_uri": "gs://b/doc.pdf"}},
            ),
        ],
    }
    system, first, assistant, tool, rest = gemini.parse(payload)
    assert system.text == "Be brief."
    assert isinstance(first.parts[1], FilePart)
    assert first.parts[1].data == b"\x89PNG\r\n\x1a\n"
    signature, call = assistant.parts
    assert isinstance(signature, ThinkingPart)
    assert signature.signature == "c2ln"
    assert isinstance(call, ToolCallPart)
    (result,) = tool.tool_results
    assert result.call_id == call.id  # Gemini 2 style: no ids, paired by name
    assert isinstance(result.output, ContentOutput)
    (doc,) = rest.parts
    assert doc == FilePart.from_uri("gs://b/doc.pdf", media_type="application/pdf")


def test_calls_without_ids_pair_by_name_in_order() -> None:
    payload = {
        "contents": [
            user({"text": "go"}),
            model(call_part("a"), call_part("b"), call_part("a")),
            user(
                response_part("a", {"output": 1}),
                response_part("b", {"output": 2}),
                response_part("a", {"output": 3}),
            ),
        ]
    }
    _user, assistant, tool = gemini.parse(payload)
    calls = assistant.tool_calls
    assert len({c.id for c in calls}) == 3
    assert [(r.call_id, r.output) for r in tool.tool_results] == [
        (calls[0].id, JsonOutput(value=1)),
        (calls[1].id, JsonOutput(value=2)),
        (calls[2].id, JsonOutput(value=3)),
    ]


def test_invalid_histories_parse_without_repair() -> None:
    payload = {
        "contents": [
            model({"text": "I start."}),  # assistant first
            model(call_part("orphan_call", "c1")),  # same-role run, and a call never answered
            user(response_part("ghost", {"output": "x"}, "c9")),  # result without its call
            user({"text": "again"}),
            user({"text": "and again"}),
            model(call_part("f", "c2")),
            user(response_part("f", {"output": "1"}, "c2")),
            user(response_part("f", {"output": "1"}, "c2")),  # the same result stored twice
        ]
    }
    messages = gemini.parse(payload)
    assert [m.role.value for m in messages] == [
        "assistant",
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert messages[2].tool_results[0].call_id == "c9"
    assert messages[6].tool_results[0].call_id == messages[7].tool_results[0].call_id == "c2"


def test_reused_provider_ids_are_reminted() -> None:
    payload = {
        "contents": [
            user({"text": "go"}),
            model(call_part("f", "same")),
            user(response_part("f", {"output": 1}, "same")),
            model(call_part("f", "same")),
            user(response_part("f", {"output": 2}, "same")),
        ]
    }
    messages = gemini.parse(payload)
    first, second = (m.tool_calls[0] for m in messages if m.tool_calls)
    assert first.id != second.id
    assert first.provider_id == second.provider_id == "same"
    assert [m.tool_results[0].call_id for m in messages if m.role is Role.TOOL] == [
        first.id,
        second.id,
    ]


def test_function_response_with_other_parts_splits_results_first() -> None:
    payload = {
        "contents": [
            user({"text": "go"}),
            model(call_part("f", "c1")),
            user({"text": "note first"}, response_part("f", {"error": "boom"}, "c1")),
        ]
    }
    *_, tool, rest = gemini.parse(payload)
    assert tool.tool_results[0].output == ErrorOutput(message="boom")
    assert rest.text == "note first"


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"output": "plain"}, JsonOutput(value="plain")),
        ({"output": [1, 2]}, JsonOutput(value=[1, 2])),
        ({"output": {"a": 1}}, JsonOutput(value={"output": {"a": 1}})),
        ({"error": "bad"}, ErrorOutput(message="bad")),
        ({"error": {"code": 1}}, JsonOutput(value={"error": {"code": 1}})),
        ({"result": 5}, JsonOutput(value={"result": 5})),
        ({"output": "x", "error": "y"}, JsonOutput(value={"output": "x", "error": "y"})),
        ({}, JsonOutput(value={})),
    ],
)
def test_function_response_mapping(response: dict[str, Any], expected: Any) -> None:
    payload = {"contents": [model(call_part("f", "c")), user(response_part("f", response, "c"))]}
    assert gemini.parse(payload)[1].tool_results[0].output == expected


def test_missing_role_is_inferred() -> None:
    payload = {
        "contents": [
            {"parts": [{"text": "hi"}]},
            {"parts": [call_part("f")]},
            {"parts": [{"text": "hmm", "thought": True}]},
            {"role": "function", "parts": [response_part("f", {"output": 1})]},
            {"role": "USER", "parts": [{"text": "upper"}]},
        ]
    }
    assert [m.role.value for m in gemini.parse(payload)] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "user",
    ]


def test_model_name_and_other_request_keys() -> None:
    payload = {
        "model": "models/gemini-3-pro-preview",
        "generationConfig": {"temperature": 0},
        "tools": [{"functionDeclarations": []}],
        "contents": [
            user({"text": "q"}),
            model({"text": "t", "thought": True, "thoughtSignature": "c2ln"}),
        ],
    }
    _, assistant = gemini.parse(payload)
    (thought,) = assistant.parts
    assert assistant.model == "gemini-3-pro-preview"
    assert thought == ThinkingPart(
        text="t", provider="gemini", model="gemini-3-pro-preview", signature="c2ln"
    )


def test_signature_on_file_and_code_parts() -> None:
    png = base64.b64encode(PNG).decode()
    payload = {
        "contents": [
            user({"text": "draw"}),
            model(
                {"inlineData": {"mimeType": "image/png", "data": png}, "thoughtSignature": "czE="},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                {"text": "", "thoughtSignature": "czI="},
            ),
        ]
    }
    _, assistant = gemini.parse(payload)
    sig1, image, code, result, sig2, empty = assistant.parts
    assert isinstance(sig1, ThinkingPart)
    assert sig1.rides_on == "file"
    assert isinstance(image, FilePart)
    assert image.data == PNG
    assert code == TextPart(
        text="```python\nprint(1)\n```",
        provider_details={
            "gemini_part": {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
        },
    )
    assert isinstance(result, TextPart)
    assert result.text == "1\n"
    assert isinstance(sig2, ThinkingPart)
    assert sig2.rides_on == "text"
    assert empty == TextPart(text="")


def test_declared_media_type_contradicted_by_bytes() -> None:
    png = base64.b64encode(PNG).decode()
    payload = {"contents": [user({"inlineData": {"mimeType": "image/jpeg", "data": png}})]}
    (message,) = gemini.parse(payload)
    assert isinstance(message.parts[0], FilePart)
    assert message.parts[0].media_type == "image/png"  # the bytes prove it

    junk = base64.b64encode(b"not a pdf at all").decode()
    with pytest.raises(MalformedPayloadError, match="contradicted"):
        gemini.parse(
            {"contents": [user({"inlineData": {"mimeType": "application/pdf", "data": junk}})]}
        )


def test_blocked_and_empty_responses() -> None:
    blocked = gemini.parse_response(
        {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "m"}
    )
    assert blocked.parts == []
    assert blocked.provider_details == {"block_reason": "SAFETY"}
    cut = gemini.parse_response(
        {
            "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
            "responseId": "r",
        }
    )
    assert cut.parts == []
    assert cut.provider_details == {"response_id": "r", "finish_reason": "MAX_TOKENS"}


MALFORMED: list[tuple[str, Any]] = [
    ("not an object", ["contents"]),
    ("no contents", {"systemInstruction": {"parts": [{"text": "x"}]}}),
    ("contents not a list", {"contents": {"role": "user"}}),
    ("content not an object", {"contents": ["hello"]}),
    ("parts not a list", {"contents": [{"role": "user", "parts": "hi"}]}),
    ("unknown role", {"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}),
    ("role not a string", {"contents": [{"role": 1, "parts": [{"text": "x"}]}]}),
    ("text not a string", {"contents": [user({"text": 5})]}),
    ("empty part", {"contents": [user({})]}),
    (
        "two data fields",
        {"contents": [user({"text": "a", "inlineData": {"data": "", "mimeType": "x"}})]},
    ),
    ("unknown part", {"contents": [user({"toolCall": {}})]}),
    ("bad base64", {"contents": [user({"inlineData": {"mimeType": "image/png", "data": "@@@@"}})]}),
    ("missing data", {"contents": [user({"inlineData": {"mimeType": "image/png"}})]}),
    ("missing file uri", {"contents": [user({"fileData": {"mimeType": "image/png"}})]}),
    ("call without name", {"contents": [model({"functionCall": {"args": {}}})]}),
    ("args not an object", {"contents": [model({"functionCall": {"name": "f", "args": [1]}})]}),
    ("response without name", {"contents": [user({"functionResponse": {"response": {}}})]}),
    ("response not an object", {"contents": [user(response_part("f", "text"))]}),
    ("response missing", {"contents": [user({"functionResponse": {"name": "f"}})]}),
    (
        "nested part without data",
        {"contents": [user({"functionResponse": {"name": "f", "response": {}, "parts": [{}]}})]},
    ),
    ("call in a user content", {"contents": [user(call_part("f"))]}),
    ("response in a model content", {"contents": [model(response_part("f", {}))]}),
    ("thought not a boolean", {"contents": [model({"text": "x", "thought": "yes"})]}),
    ("signature not a string", {"contents": [model({"text": "x", "thoughtSignature": 1})]}),
    (
        "system with media",
        {
            "systemInstruction": {
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo"}}]
            },
            "contents": [],
        },
    ),
]


@pytest.mark.parametrize(("case", "payload"), MALFORMED, ids=[c for c, _ in MALFORMED])
def test_malformed_payloads_raise(case: str, payload: Any) -> None:
    with pytest.raises(MalformedPayloadError):
        gemini.parse(payload)


def test_malformed_responses_raise() -> None:
    with pytest.raises(MalformedPayloadError, match="candidates"):
        gemini.parse_response({"modelVersion": "m"})
    with pytest.raises(MalformedPayloadError, match="role"):
        gemini.parse_response({"candidates": [{"content": {"role": "user", "parts": []}}]})
    with pytest.raises(MalformedPayloadError):
        gemini.parse_response({"candidates": "nope"})


SMALL_PAYLOAD: dict[str, Any] = {
    "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
    "contents": [
        user(
            {"text": "hi"},
            {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
        ),
        model(
            {"text": "think", "thought": True, "thoughtSignature": "c2ln"},
            call_part("f", "c1", thoughtSignature="czI="),
        ),
        user(
            {
                "functionResponse": {
                    "id": "c1",
                    "name": "f",
                    "response": {"output": "ok"},
                    "parts": [
                        {
                            "inline_data": {
                                "mime_type": "application/pdf",
                                "data": base64.b64encode(PDF).decode(),
                            }
                        }
                    ],
                }
            },
            {"fileData": {"mimeType": "image/png", "fileUri": "https://x/y.png"}},
        ),
    ],
}


def _mutation_seeds() -> list[Seed]:
    pool = [Seed("small", "gemini", "request", GEMINI_3, SMALL_PAYLOAD)]
    names = (
        "test_multimodal_tool_return_matrix-direct-binary-image-google_gemini3--2",
        "test_google_model_thinking_part_from_other_model--1",
    )
    return pool + [s for s in seeds().get(("gemini", "request"), ()) if s.name in names]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants(_mutation_seeds()))
def test_mutated_payloads_raise_only_convstore_errors(mutant: Mutant) -> None:
    with contextlib.suppress(ConvstoreError):
        gemini.parse(mutant.payload)


SMALL_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "hm", "thought": True},
                    {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "c2ln"},
                    {"text": "ok", "thoughtSignature": "czI="},
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "modelVersion": GEMINI_3,
    "responseId": "resp1",
    "promptFeedback": {"blockReason": "OTHER"},
}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants([Seed("small", "gemini", "response", GEMINI_3, SMALL_RESPONSE)]))
def test_mutated_responses_raise_only_convstore_errors(mutant: Mutant) -> None:
    with contextlib.suppress(ConvstoreError):
        gemini.parse_response(mutant.payload)


# -- encoding --------------------------------------------------------------------------------


def make_plan(turns: list[Turn], *, model: str = GEMINI_3, system: list[str] | None = None) -> Plan:
    return Plan(
        target="gemini",
        model=model,
        capabilities=capabilities_for("gemini", model),
        diagnostics=Diagnostics(target="gemini", model=model),
        system=system or [],
        turns=turns,
    )


def make_call(n: int, name: str = "get_weather", **arguments: Any) -> Call:
    return Call(
        call_id=f"canon_{n}",
        wire_id=f"wire_{n}",
        name=name,
        wire_name=name,
        arguments=arguments or {"city": "Paris"},
    )


def signed(signature: str, rides_on: Any = None, text: str = "") -> Reasoning:
    return Reasoning(
        ThinkingPart(
            text=text, provider="gemini", model=GEMINI_3, signature=signature, rides_on=rides_on
        )
    )


PART_KEYS = {
    "text": {"text"},
    "thought": {"text", "thought"},
    "inlineData": {"inlineData"},
    "fileData": {"fileData"},
    "functionCall": {"functionCall"},
    "functionResponse": {"functionResponse"},
}


def validate(payload: dict[str, Any]) -> None:
    """The official SDK type accepts every content; key sets are exactly the documented ones."""
    assert set(payload) <= {"contents", "systemInstruction"}
    contents = [
        *payload["contents"],
        *([payload["systemInstruction"]] if "systemInstruction" in payload else []),
    ]
    for content in contents:
        genai.Content.model_validate(content)
        assert set(content) == {"role", "parts"}
        assert content["role"] in {"user", "model"}
        assert content["parts"], "no empty content"
        for part in content["parts"]:
            keys = set(part) - {"thoughtSignature"}
            assert keys in PART_KEYS.values(), part
            if "text" in part:
                assert part["text"], "no empty text"
            if "functionCall" in part:
                assert set(part["functionCall"]) == {"id", "name", "args"}
            if "functionResponse" in part:
                reply = part["functionResponse"]
                assert set(reply) in (
                    {"id", "name", "response"},
                    {"id", "name", "response", "parts"},
                )
                assert isinstance(reply["response"], dict)
                for nested in reply.get("parts", []):
                    assert set(nested) == {"inlineData"}
                    assert set(nested["inlineData"]) == {"mimeType", "data"}
            for media in ("inlineData", "fileData"):
                if media in part:
                    assert "displayName" not in part[media]


def test_sdk_oracle_rejects_unknown_keys() -> None:
    with pytest.raises(ValidationError):
        genai.Content.model_validate({"role": "user", "parts": [{"text": "x", "bogus": 1}]})
    with pytest.raises(ValidationError):
        genai.Content.model_validate(
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {}, "extra": 1}}],
            }
        )


def test_encode_text_system_and_user_media() -> None:
    plan = make_plan(
        [
            UserTurn(
                [
                    Text("Look at these"),
                    Media("image/png", data=PNG, filename="a.png"),
                    Media("application/pdf", uri="gs://bucket/doc.pdf", filename="doc.pdf"),
                ]
            ),
            AssistantTurn([Text("Nice.")], provider="gemini", model=GEMINI_3),
        ],
        system=["You are terse.", "Answer in French."],
    )
    payload = gemini.encode(plan)
    validate(payload)
    assert payload == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Look at these"},
                    {
                        "inlineData": {
                            "mimeType": "image/png",
                            "data": base64.b64encode(PNG).decode(),
                        }
                    },
                    {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/doc.pdf"}},
                ],
            },
            {"role": "model", "parts": [{"text": "Nice."}]},
        ],
        "systemInstruction": {
            "role": "user",
            "parts": [{"text": "You are terse."}, {"text": "Answer in French."}],
        },
    }
    assert "systemInstruction" not in gemini.encode(make_plan([UserTurn([Text("x")])]))


def test_encode_parallel_calls_and_result_shapes() -> None:
    calls = [make_call(1), make_call(2, "lookup"), make_call(3, "fail"), make_call(4, "schema")]
    plan = make_plan(
        [
            UserTurn([Text("go")]),
            AssistantTurn(
                [signed("c2lnMQ==", "tool_call"), *calls], provider="gemini", model=GEMINI_3
            ),
            ToolTurn(
                [
                    Result(calls[0], JsonBody({"temp": 21})),
                    Result(calls[1], JsonBody("just text")),
                    Result(calls[2], ErrorBody("It broke."), synthetic=True),
                    Result(calls[3], JsonBody({"schema": {"items": {"$ref": "#/$defs/Item"}}})),
                ]
            ),
        ],
        model=GEMINI_25,
    )
    payload = gemini.encode(plan)
    validate(payload)
    _, turn, results = payload["contents"]
    assert turn["parts"][0] == {
        "functionCall": {"id": "wire_1", "name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": "c2lnMQ==",
    }
    assert [p["functionCall"]["id"] for p in turn["parts"]] == [
        "wire_1",
        "wire_2",
        "wire_3",
        "wire_4",
    ]
    assert all("thoughtSignature" not in p for p in turn["parts"][1:])
    responses = [p["functionResponse"] for p in results["parts"]]
    assert [(r["id"], r["name"]) for r in responses] == [(c.wire_id, c.wire_name) for c in calls]
    assert [r["response"] for r in responses] == [
        {"temp": 21},
        {"output": "just text"},
        {"error": "It broke."},
        {"output": json_text({"schema": {"items": {"$ref": "#/$defs/Item"}}})},
    ]
    assert any("$ref" in note for note in plan.diagnostics.notes)


def test_encode_gemini_3_nested_media() -> None:
    call = make_call(1, "get_images")
    plan = make_plan(
        [
            UserTurn([Text("show me")]),
            AssistantTurn([call]),
            ToolTurn(
                [
                    Result(
                        call,
                        ContentBody(
                            [
                                Text("Two files:"),
                                Media("image/jpeg", data=JPEG),
                                Text("done"),
                                Media("application/pdf", data=PDF),
                            ]
                        ),
                    )
                ]
            ),
        ]
    )
    payload = gemini.encode(plan)
    validate(payload)
    reply = payload["contents"][2]["parts"][0]["functionResponse"]
    assert reply == {
        "id": "wire_1",
        "name": "get_images",
        "response": {"output": "Two files:\ndone"},
        "parts": [
            {"inlineData": {"mimeType": "image/jpeg", "data": base64.b64encode(JPEG).decode()}},
            {"inlineData": {"mimeType": "application/pdf", "data": base64.b64encode(PDF).decode()}},
        ],
    }
    only_media = make_plan(
        [
            UserTurn([Text("x")]),
            AssistantTurn([call]),
            ToolTurn([Result(call, ContentBody([Media("image/png", data=PNG)]))]),
        ]
    )
    reply = gemini.encode(only_media)["contents"][2]["parts"][0]["functionResponse"]
    assert reply["response"] == {}
    assert len(reply["parts"]) == 1


def test_encode_gemini_25_sibling_media_as_separate_user_content() -> None:
    call = make_call(1, "get_file")
    plan = make_plan(
        [
            UserTurn([Text("fetch")]),
            AssistantTurn([call]),
            ToolTurn([Result(call, ContentBody([Text("See file 241a70.")]))]),
            UserTurn([Text("This is file 241a70:"), Media("image/jpeg", data=JPEG)], injected=True),
        ],
        model=GEMINI_25,
    )
    payload = gemini.encode(plan)
    validate(payload)
    assert [c["role"] for c in payload["contents"]] == ["user", "model", "user", "user"]
    assert payload["contents"][2]["parts"] == [
        {
            "functionResponse": {
                "id": "wire_1",
                "name": "get_file",
                "response": {"output": "See file 241a70."},
            }
        }
    ]
    assert payload["contents"][3]["parts"][1] == {
        "inlineData": {"mimeType": "image/jpeg", "data": base64.b64encode(JPEG).decode()}
    }


def test_encode_thought_parts_and_riding_signatures() -> None:
    plan = make_plan(
        [
            UserTurn([Text("q")]),
            AssistantTurn(
                [
                    signed("dGhvdWdodA==", text="I think."),  # a thought with its own signature
                    Reasoning(ThinkingPart(text="unsigned thought", provider="gemini")),
                    signed("dGV4dA==", "text"),
                    Text("Answer."),
                    signed("ZmlsZQ==", "file"),
                    Media("image/png", data=PNG),
                    signed("YW55"),  # opaque, no carrier kind: rides on the next part
                    Text("More."),
                    signed("bG9zdA==", "tool_call"),  # no call follows: not sent, noted
                ]
            ),
        ]
    )
    payload = gemini.encode(plan)
    validate(payload)
    assert payload["contents"][1]["parts"] == [
        {"text": "I think.", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
        {"text": "unsigned thought", "thought": True},
        {"text": "Answer.", "thoughtSignature": "dGV4dA=="},
        {
            "inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()},
            "thoughtSignature": "ZmlsZQ==",
        },
        {"text": "More.", "thoughtSignature": "YW55"},
    ]
    assert any("tool_call to ride on" in note for note in plan.diagnostics.notes)


def test_encode_empty_assistant_turn_is_left_out() -> None:
    plan = make_plan(
        [
            UserTurn([Text("q")]),
            AssistantTurn([signed("bG9zdA==", "text")]),
            UserTurn([Text("again")]),
        ]
    )
    payload = gemini.encode(plan)
    validate(payload)
    # The user turns around it join: no user-user run outside function responses.
    assert payload["contents"] == [{"role": "user", "parts": [{"text": "q"}, {"text": "again"}]}]
    assert any("left out" in note for note in plan.diagnostics.notes)
    assert any("same user content" in note for note in plan.diagnostics.notes)


def test_user_runs_join_but_never_the_function_responses() -> None:
    call = make_call(1)
    plan = make_plan(
        [
            UserTurn([Text("summary of earlier turns")]),
            UserTurn([Text("question"), Media("image/png", data=PNG)]),
            AssistantTurn([call]),
            ToolTurn([Result(call, ContentBody([Text("See file 1.")]))]),
            UserTurn([Text("This is file 1:"), Media("image/png", data=PNG)], injected=True),
            UserTurn([Text("follow-up")]),
            AssistantTurn([make_call(2)]),
            ToolTurn([Result(make_call(2), JsonBody(2))]),
        ]
    )
    payload = gemini.encode(plan)
    validate(payload)
    contents = payload["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "user", "model", "user"]
    assert [p.get("text") for p in contents[0]["parts"]] == [
        "summary of earlier turns",
        "question",
        None,
    ]
    assert [p.get("text") for p in contents[3]["parts"]] == ["This is file 1:", None, "follow-up"]
    # The real user turn opened the current turn even though it joined the injected content.
    assert contents[1]["parts"][0].get("thoughtSignature") is None
    assert contents[4]["parts"][0]["thoughtSignature"] == DUMMY


def test_dummy_signature_on_first_call_of_each_step_in_current_turn() -> None:
    old, first, second, third, fourth = (make_call(n) for n in range(5))
    plan = make_plan(
        [
            UserTurn([Text("earlier turn")]),
            AssistantTurn([old]),
            ToolTurn([Result(old, JsonBody(1))]),
            UserTurn([Text("current turn")]),
            AssistantTurn([Text("Let me check."), first, second]),  # parallel: only the first
            ToolTurn([Result(first, JsonBody(1)), Result(second, JsonBody(2))]),
            UserTurn([Text("This is file 1:"), Media("image/png", data=PNG)], injected=True),
            AssistantTurn([signed("cmVhbA==", "tool_call"), third]),  # has its own signature
            ToolTurn([Result(third, JsonBody(3))]),
            AssistantTurn([fourth]),  # a later step without one
            ToolTurn([Result(fourth, JsonBody(4))]),
        ]
    )
    payload = gemini.encode(plan)
    validate(payload)
    signatures = {
        p["functionCall"]["id"]: p.get("thoughtSignature")
        for c in payload["contents"]
        for p in c["parts"]
        if "functionCall" in p
    }
    assert signatures == {
        "wire_0": None,  # before the current turn: not validated, left alone
        "wire_1": DUMMY,
        "wire_2": None,
        "wire_3": "cmVhbA==",
        "wire_4": DUMMY,
    }
    assert sum("dummy" in n for n in plan.diagnostics.notes) == 2


def test_no_dummy_signature_for_gemini_2() -> None:
    call = make_call(1)
    plan = make_plan(
        [UserTurn([Text("q")]), AssistantTurn([call]), ToolTurn([Result(call, JsonBody(1))])],
        model=GEMINI_25,
    )
    (_, turn, _) = gemini.encode(plan)["contents"]
    assert "thoughtSignature" not in turn["parts"][0]


def test_raw_arguments_are_sent_as_empty_object_with_a_note() -> None:
    call = Call("c", "w", "f", "f", {}, raw_arguments="{not json")
    plan = make_plan(
        [UserTurn([Text("q")]), AssistantTurn([call]), ToolTurn([Result(call, JsonBody("ok"))])],
        model=GEMINI_25,
    )
    payload = gemini.encode(plan)
    validate(payload)
    assert payload["contents"][1]["parts"][0]["functionCall"]["args"] == {}
    assert any("not a JSON object" in n for n in plan.diagnostics.notes)


@pytest.mark.parametrize(
    "value",
    [None, 0, 2.5, True, "text", [1, "a", {"b": None}], {"nested": {"deep": [1, {"x": "y"}]}}],
)
def test_any_json_result_is_an_object_on_the_wire(value: Any) -> None:
    call = make_call(1)
    plan = make_plan(
        [UserTurn([Text("q")]), AssistantTurn([call]), ToolTurn([Result(call, JsonBody(value))])]
    )
    payload = gemini.encode(plan)
    validate(payload)
    response = payload["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert response == (value if isinstance(value, dict) else {"output": value})


# -- round trips through the planner ----------------------------------------------------------


OPAQUE_KEYS = {"args", "response"}
"""Fields whose values are the application's JSON: their keys are data, never respelt."""


def normalized(value: Any) -> Any:
    """Wire JSON with the spellings the API treats as equal made equal."""
    if isinstance(value, dict):
        out = {}
        for key, child in value.items():
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
            out[camel] = child if camel in OPAQUE_KEYS else normalized(child)
        if set(out) == {"data", "mimeType"}:
            out["data"] = b64(out["data"])
        return out
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


@needs_corpus
@pytest.mark.parametrize("rec", RECORDS, ids=[r["name"] for r in RECORDS])
def test_corpus_round_trip(rec: dict[str, Any]) -> None:
    messages = gemini.parse(request_of(rec))
    plan = plan_messages(messages, target="gemini", model=rec["model"])
    payload = gemini.encode(plan)
    validate(payload)
    original = normalized(rec["request"]["contents"])
    rendered = normalized(payload["contents"])
    assert len(rendered) == len(original)
    for ours, theirs in zip(rendered, original, strict=True):
        assert ours["role"] == theirs["role"]
        for mine, wire in zip(ours["parts"], theirs["parts"], strict=True):
            reply, wire_reply = mine.get("functionResponse"), wire.get("functionResponse")
            if (
                reply is not None
                and wire_reply is not None
                and "parts" in wire_reply
                and wire_reply["response"]
            ):
                # Nested media with a non-text response: the response travels as JSON text.
                assert reply["response"] == {"output": json_text(wire_reply["response"])}
                assert reply["parts"] == wire_reply["parts"]
                continue
            assert mine == wire
    assert (
        "systemInstruction" not in payload
        or payload["systemInstruction"] == rec["request"]["systemInstruction"]
    )
    assert not [n for n in plan.diagnostics.notes if "dummy" in n]  # the real signatures went back


@needs_corpus
def test_foreign_history_to_gemini_3_gets_the_dummy_signature() -> None:
    rec = record("test_thinking_with_tool_calls_from_other_model--2")
    messages = gemini.parse(rec["request"])  # no model: the signature cannot be tied to gemini-3
    payload = gemini.encode(plan_messages(messages, target="gemini", model="gemini-3-pro-preview"))
    validate(payload)
    assert payload["contents"][1]["parts"][0]["thoughtSignature"] == DUMMY


def test_hand_built_history_round_trips() -> None:
    png = base64.b64encode(PNG).decode()
    request = {
        "model": GEMINI_3,
        "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
        "contents": [
            user({"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": png}}),
            model(
                {"text": "plan", "thought": True, "thoughtSignature": "c2ln"},
                {"text": "Calling."},
                call_part("a", "id1", thoughtSignature="czI="),
                call_part("b", "id2"),
            ),
            user(
                response_part("a", {"temp": 1}, "id1"), response_part("b", {"error": "no"}, "id2")
            ),
            model({"text": "Done.", "thoughtSignature": "czM="}),
            user({"text": "thanks"}),
        ],
    }
    messages = gemini.parse(request)
    payload = gemini.encode(plan_messages(messages, target="gemini", model=GEMINI_3))
    validate(payload)
    assert payload["contents"] == request["contents"]
    assert payload["systemInstruction"] == request["systemInstruction"]


# -- public entry points and golden payloads of the shared conversations ----------------------

GOLDEN_DIR = Path(__file__).parent / "golden" / gemini.TARGET
GOLDEN_MODELS = [model for target, model in TARGET_MODELS if target == gemini.TARGET]


@needs_corpus
def test_public_parse_and_render_use_this_module() -> None:
    rec = record("test_multimodal_tool_return_matrix-direct-binary-image-google_gemini3--2")
    request = request_of(rec)
    messages = convstore.parse(request, "gemini")
    assert messages == gemini.parse(request)
    assert convstore.parse_response(rec["response"], "gemini") == gemini.parse_response(
        rec["response"]
    )
    rendered = convstore.render(messages, "gemini", model=rec["model"])
    assert rendered.payload["contents"] == rec["request"]["contents"]


@pytest.mark.parametrize("model", GOLDEN_MODELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, model: str) -> None:
    """Render each shared conversation for both generations; compare with the reviewed golden.

    ``CONVSTORE_UPDATE_GOLDEN=1`` rewrites the files (review the diff before committing).
    """
    rendered = convstore.render(CASES[case], gemini.TARGET, model=model)
    validate(rendered.payload)
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    path = GOLDEN_DIR / model / f"{case}.json"
    if os.environ.get("CONVSTORE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == json.loads(json.dumps(actual))


# --------------------------------------------------------------------------------------------
# Regressions: fuzzed histories that parsed, then rendered into requests Gemini (and
# google-genai's request types) refuse. Each render must pass the independent wire rules and the
# SDK's types (tests/support/wire_rules.py).
# --------------------------------------------------------------------------------------------

_NOT_BASE64 = {
    "junk": "not base64!",
    "percent-encoded": "%59WJj",
    "whitespace": "YWJj\nZA==",
    "mixed-alphabets": "Y-/a",
    "one-char-too-many": "YWJjZ",
    "excess-padding": "YWJj====",
    "partial-padding": "YWJjZA=",
    "unused-bits-set": "YWJjZB==",
    "bidi-mark": "YWJj\u200fZA==",
}


@pytest.mark.parametrize("signature", _NOT_BASE64.values(), ids=_NOT_BASE64.keys())
def test_thought_signature_that_is_not_base64_is_malformed(signature: str) -> None:
    # Was: kept by parse and sent back verbatim; the field is bytes, so genai refuses it.
    request = {
        "contents": [user({"text": "q"}), model(call_part("f", "c1", thoughtSignature=signature))]
    }
    with pytest.raises(MalformedPayloadError, match=r"thoughtSignature.*not base64"):
        convstore.parse(request, "gemini", model=GEMINI_3)
    response = {
        "candidates": [
            {"content": model({"text": "t", "thought": True, "thought_signature": signature})}
        ]
    }
    with pytest.raises(MalformedPayloadError, match=r"thought_signature.*not base64"):
        convstore.parse_response(response, "gemini")


@pytest.mark.parametrize("signature", ["YWJjZA==", "YWJjZA", "Y-_a", "Y+/a", DUMMY, ""])
def test_thought_signature_in_either_base64_alphabet_is_kept_verbatim(signature: str) -> None:
    request = {
        "contents": [user({"text": "q"}), model(call_part("f", "c1", thoughtSignature=signature))]
    }
    messages = convstore.parse(request, "gemini", model=GEMINI_3)
    thinking = messages[1].parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature == signature


@pytest.mark.parametrize("model_name", [GEMINI_3, GEMINI_25])
def test_hand_built_signature_that_is_not_base64_goes_unsigned(model_name: str) -> None:
    history = [
        Message.user("q"),
        Message(
            role=Role.ASSISTANT,
            provider="gemini",
            model=model_name,
            parts=[
                ThinkingPart(
                    text="plan", signature="not base64!", provider="gemini", model=model_name
                ),
                ThinkingPart(
                    signature="%%", rides_on="tool_call", provider="gemini", model=model_name
                ),
                ToolCallPart(id="c1", name="f"),
            ],
        ),
        Message(role=Role.TOOL, parts=[ToolResultPart(call_id="c1", output=JsonOutput(value=1))]),
    ]
    rendered = convstore.render(history, "gemini", model=model_name)
    check_payload("gemini", model_name, rendered.payload)
    thought, call = rendered.payload["contents"][1]["parts"]
    assert thought == {"text": "plan", "thought": True}
    # Unsigned as it is for a call without a signature: Gemini 3 gets the documented dummy.
    assert call.get("thoughtSignature") == (DUMMY if model_name == GEMINI_3 else None)
    assert sum("not base64" in n for n in rendered.diagnostics.notes) == 2


@pytest.mark.parametrize("model_name", [GEMINI_3, GEMINI_25])
@pytest.mark.parametrize("blank", ["\r\n", " ", "\t\n "])
def test_whitespace_only_thought_text_leaves_no_empty_part(model_name: str, blank: str) -> None:
    # Was: sent as {"text": "\r\n", "thought": true}, a text part Gemini reads as empty.
    request = {
        "contents": [
            user({"text": "q"}),
            model({"text": blank, "thought": True}, {"text": "answer"}),
            user({"text": "more"}),
        ]
    }
    rendered = convstore.render(
        convstore.parse(request, "gemini", model=model_name), "gemini", model=model_name
    )
    check_payload("gemini", model_name, rendered.payload)
    assert rendered.payload["contents"][1] == model({"text": "answer"})


def test_signature_of_a_whitespace_only_thought_rides_on_the_next_part() -> None:
    # As the signature of an empty thought does: the blank text is no part of its own.
    request = {
        "contents": [
            user({"text": "q"}),
            model(
                {"text": "\r\n", "thought": True, "thoughtSignature": "YWJj"}, call_part("f", "c1")
            ),
            user(response_part("f", {"ok": True}, "c1")),
        ]
    }
    rendered = convstore.render(
        convstore.parse(request, "gemini", model=GEMINI_3), "gemini", model=GEMINI_3
    )
    check_payload("gemini", GEMINI_3, rendered.payload)
    assert rendered.payload["contents"][1] == model(call_part("f", "c1", thoughtSignature="YWJj"))
