"""mistral: encoding plans into Mistral's Chat Completions dialect."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

import convstore
from convstore.model import (
    ContentOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from convstore.providers import mistral, openai_chat
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

from .chat.helpers import (
    IMAGE_URL,
    PDF,
    PNG,
    TEXT,
    TOOL_CALL,
    WAV,
    PartShapes,
    assert_golden,
    call,
    chat_message_shapes,
    check_messages,
    corpus,
    plan,
    shape,
    validate_openai,
)
from .conversations import CASES, TARGET_MODELS

MISTRAL_CORPUS = corpus("mistral")

# Key sets from Mistral's SDK models (mistralai/client-python, src/mistralai/models:
# assistantmessage.py, toolmessage.py, documenturlchunk.py, thinkchunk.py, toolcall.py).
MISTRAL_SHAPES = chat_message_shapes(
    user_parts={
        "text": TEXT,
        "image_url": IMAGE_URL,
        "document_url": shape(["type", "document_url"], ["document_name"]),
    },
    assistant_content=PartShapes(
        {
            "text": TEXT,
            "thinking": shape(["type", "thinking"], ["closed"], thinking=[TEXT]),
        }
    ),
    assistant_extra=["prefix"],
    tool_extra=["name"],
    tool_call=shape(["id", "type", "function", "index"], function=TOOL_CALL.nested["function"]),
)

_MISTRAL_ONLY_CHUNKS = {"document_url", "thinking"}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _without_mistral_keys(message: dict[str, Any]) -> dict[str, Any] | None:
    """The message as plain OpenAI Chat, or ``None`` when it uses Mistral-only chunks."""
    content = message.get("content")
    if isinstance(content, list) and any(c.get("type") in _MISTRAL_ONLY_CHUNKS for c in content):
        return None
    plain = {k: v for k, v in message.items() if k not in ("prefix", "name")}
    if "tool_calls" in plain:
        plain["tool_calls"] = [
            {k: v for k, v in c.items() if k != "index"} for c in plain["tool_calls"]
        ]
    return plain


def _check(messages: list[dict[str, Any]]) -> None:
    check_messages(messages, MISTRAL_SHAPES)
    for message in messages:
        plain = _without_mistral_keys(message)
        if plain is not None:
            validate_openai(plain)  # what Mistral shares with OpenAI Chat is well-formed
        for tool_call in message.get("tool_calls", []):
            assert re.fullmatch(r"[A-Za-z0-9]{9}", tool_call["id"])


def _encode(turns: list[Any], **kwargs: Any) -> tuple[list[dict[str, Any]], Any]:
    p = plan("mistral", turns, model="mistral-medium-latest", **kwargs)
    messages = mistral.encode(p)["messages"]
    _check(messages)
    return messages, p.diagnostics


def bridge_note(tool_call_id: str) -> str:
    return (
        f"mistral: inserted an assistant message 'OK' after the tool message for {tool_call_id} "
        "(a user message may not follow a tool message)"
    )


PREFIX_NOTE = (
    "mistral: marked the trailing assistant message prefix=true (this target only serves a "
    "request ending with an assistant message as a prefix to continue)"
)


def test_a_tool_step_with_media_renders_like_the_corpus() -> None:
    first = call("Abc123xyz", "get_file", {"kind": "image"})
    second = call("Def456uvw", "get_file", {"kind": "document"})
    messages, diagnostics = _encode(
        [
            UserTurn([Text("Fetch both files.")]),
            AssistantTurn([first, second]),
            ToolTurn(
                [
                    Result(first, ContentBody([Text("See file 241a70.")])),
                    Result(second, ContentBody([Text("See file 90ffd2.")])),
                ]
            ),
            UserTurn(
                [
                    Text("This is file 241a70:"),
                    Media("image/png", data=PNG, label="241a70"),
                    Text("This is file 90ffd2:"),
                    Media("application/pdf", data=PDF, filename="doc.pdf", label="90ffd2"),
                ],
                injected=True,
            ),
        ],
        system=["You fetch files."],
    )
    assert messages == [
        {"role": "system", "content": "You fetch files."},
        {"role": "user", "content": "Fetch both files."},
        {
            "role": "assistant",
            "content": [],
            "prefix": False,
            "tool_calls": [
                {
                    "id": "Abc123xyz",
                    "type": "function",
                    "function": {"name": "get_file", "arguments": '{"kind":"image"}'},
                    "index": 0,
                },
                {
                    "id": "Def456uvw",
                    "type": "function",
                    "function": {"name": "get_file", "arguments": '{"kind":"document"}'},
                    "index": 1,
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "Abc123xyz",
            "content": "See file 241a70.",
            "name": "get_file",
        },
        {
            "role": "tool",
            "tool_call_id": "Def456uvw",
            "content": "See file 90ffd2.",
            "name": "get_file",
        },
        {"role": "assistant", "content": [{"type": "text", "text": "OK"}], "prefix": False},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "This is file 241a70:"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
                {"type": "text", "text": "This is file 90ffd2:"},
                {
                    "type": "document_url",
                    "document_url": f"data:application/pdf;base64,{_b64(PDF)}",
                    "document_name": "doc.pdf",
                },
            ],
        },
    ]
    assert diagnostics.notes == [bridge_note("Def456uvw")]


def test_no_bridge_when_the_assistant_answers_the_tool() -> None:
    only = call("Abc123xyz", "lookup")
    messages, diagnostics = _encode(
        [
            UserTurn([Text("q")]),
            AssistantTurn([Text("Let me look."), only]),
            ToolTurn([Result(only, ErrorBody("not found"))]),
            AssistantTurn([Text("Nothing found.")]),
            UserTurn([Text("Thanks")]),
        ]
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[1]["content"] == [{"type": "text", "text": "Let me look."}]
    assert messages[2]["content"] == "not found"
    assert messages[3] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Nothing found."}],
        "prefix": False,
    }
    assert diagnostics.notes == []


def test_a_trailing_assistant_message_is_a_prefix() -> None:
    messages, diagnostics = _encode([UserTurn([Text("Say hi")]), AssistantTurn([Text("Hi")])])
    assert messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hi"}],
        "prefix": True,
    }
    assert diagnostics.notes == [PREFIX_NOTE]


def test_a_history_ending_in_results_needs_no_prefix() -> None:
    only = call("Abc123xyz")
    messages, diagnostics = _encode(
        [UserTurn([Text("go")]), AssistantTurn([only]), ToolTurn([Result(only, JsonBody(None))])]
    )
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "Abc123xyz",
        "content": "null",
        "name": "get_file",
    }
    assert all(m.get("prefix") is not True for m in messages)
    assert diagnostics.notes == []


def test_mistral_reasoning_is_a_thinking_chunk() -> None:
    thought = ThinkingPart(text="Check the units.", provider="mistral", model="magistral-medium")
    opaque = ThinkingPart(provider="mistral", provider_details={"x": 1})
    messages, diagnostics = _encode(
        [
            UserTurn([Text("2 km in m?")]),
            AssistantTurn([Reasoning(thought), Reasoning(opaque), Text("2000 m")]),
            UserTurn([Text("ok")]),
        ]
    )
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Check the units."}]},
            {"type": "text", "text": "2000 m"},
        ],
        "prefix": False,
    }
    assert [(n.action, n.reason) for n in diagnostics.reasoning] == [
        ("dropped", "mistral: no readable text, and this target takes no artefacts")
    ]


def test_media_mistral_cannot_take_becomes_a_note() -> None:
    messages, diagnostics = _encode(
        [
            UserTurn(
                [
                    Media("application/pdf", uri="https://example.com/a.pdf", label="aaaaaa"),
                    Media("audio/wav", data=WAV, label="bbbbbb"),
                ]
            )
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "document_url", "document_url": "https://example.com/a.pdf"},
                {
                    "type": "text",
                    "text": "[bbbbbb (audio/wav) omitted: user messages cannot carry it]",
                },
            ],
        }
    ]
    assert [(n.media_type, n.placement) for n in diagnostics.media] == [("audio/wav", "text_note")]


# -- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "record"), MISTRAL_CORPUS, ids=[n.removesuffix(".json") for n, _ in MISTRAL_CORPUS]
)
def test_corpus_round_trip(name: str, record: dict[str, Any]) -> None:
    request = record["request"]
    p = plan_messages(openai_chat.parse(request), target="mistral", model=record["model"])
    messages = mistral.encode(p)["messages"]
    _check(messages)
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}
    for message in messages:
        if message["role"] == "tool":
            # The one addition to the corpus shape: Mistral documents the tool's name here.
            assert message.pop("name") == names[message["tool_call_id"]]
    assert messages == request["messages"]
    assert p.diagnostics.notes == []  # the corpus already has its "OK" bridge


def test_a_canonical_history_gets_mistral_ids_and_the_bridge() -> None:
    history = [
        Message.user("Use the get_file tool now to retrieve a image file."),
        Message.assistant(
            ToolCallPart(id="call_S7tRWNiD8CbD2xDRMuXOEc8e", name="get_file"),
            ToolCallPart(id="toolu_01A", name="get.stats", arguments={"n": 1}),
            provider="openai",
            model="gpt-5-mini",
        ),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResultPart(
                    call_id="call_S7tRWNiD8CbD2xDRMuXOEc8e",
                    output=ContentOutput(parts=[FilePart.from_bytes(PNG)]),
                ),
                ToolResultPart(call_id="toolu_01A", output=JsonOutput(value={"mean": 1})),
            ],
        ),
    ]
    p = plan_messages(history, target="mistral", model="mistral-medium-latest")
    messages = mistral.encode(p)["messages"]
    _check(messages)
    assistant, image_result, stats_result, bridge, injected = messages[1:]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert [image_result["tool_call_id"], stats_result["tool_call_id"]] == ids
    assert len(set(ids)) == 2
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["get_file", "get_stats"]
    assert stats_result == {
        "role": "tool",
        "tool_call_id": ids[1],
        "content": '{"mean":1}',
        "name": "get_stats",
    }
    label = image_result["content"].removeprefix("See file ").removesuffix(".")
    assert bridge == {
        "role": "assistant",
        "content": [{"type": "text", "text": "OK"}],
        "prefix": False,
    }
    assert injected["content"] == [
        {"type": "text", "text": f"This is file {label}:"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(PNG)}"}},
    ]
    assert p.diagnostics.notes == [bridge_note(ids[1])]
    assert p.diagnostics.id_map == {
        "call_S7tRWNiD8CbD2xDRMuXOEc8e": ids[0],
        "toolu_01A": ids[1],
    }


def test_public_parse_and_render_use_this_module() -> None:
    (record,) = [r for n, r in MISTRAL_CORPUS if "direct-binary-document-mistral--1" in n]
    # Mistral histories parse with the openai-chat source ("mistral" is an alias for it).
    messages = convstore.parse(record["request"], "mistral")
    assert messages == openai_chat.parse(record["request"])
    rendered = convstore.render(messages, "mistral", model=record["model"])
    assert rendered.payload == mistral.encode(
        plan_messages(messages, target="mistral", model=record["model"])
    )


# -- golden payloads of the shared conversations ---------------------------------------------

GOLDEN_MODEL = dict(TARGET_MODELS)[mistral.TARGET]


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    rendered = convstore.render(CASES[case], mistral.TARGET, model=GOLDEN_MODEL)
    assert set(rendered.payload) == {"messages"}
    _check(rendered.payload["messages"])
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    assert_golden(mistral.TARGET, case, actual)
