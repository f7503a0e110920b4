"""kimi: encoding plans into Moonshot's Kimi Chat Completions dialect."""

from __future__ import annotations

import base64
import copy
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
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from convstore.providers import kimi, openai_chat
from convstore.transcript.plan import (
    AssistantTurn,
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
    PartShapes,
    assert_golden,
    call,
    chat_message_shapes,
    check_messages,
    plan,
    validate_openai,
)
from .conversations import CASES, TARGET_MODELS

KIMI_SHAPES = chat_message_shapes(
    user_parts={"text": TEXT, "image_url": IMAGE_URL},
    assistant_content=PartShapes({"text": TEXT}, string=True),
    assistant_extra=["reasoning_content"],
    tool_extra=["name"],
)
KIMI_ID = re.compile(r"functions\.(?P<name>[A-Za-z0-9_-]+):(?P<index>\d+)")


def placeholder_note(ids: str) -> str:
    return (
        f"kimi: sent a placeholder reasoning_content with calls {ids}: they had no reasoning "
        "from this provider, and its thinking models require the field there"
    )


def _check(messages: list[dict[str, Any]]) -> None:
    check_messages(messages, KIMI_SHAPES)
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    for index, tool_call in enumerate(calls):
        match = KIMI_ID.fullmatch(tool_call["id"])
        assert match is not None, tool_call["id"]
        assert match["name"] == tool_call["function"]["name"]
        assert int(match["index"]) == index  # counted across the whole transcript
    for message in messages:
        if message["role"] == "assistant" and "tool_calls" in message:
            assert message["reasoning_content"].strip() or message["reasoning_content"] == " "
        validate_openai(message)  # reasoning_content and the tool name are Kimi's additions


def _encode(turns: list[Any], **kwargs: Any) -> tuple[list[dict[str, Any]], Any]:
    p = plan("kimi", turns, model="kimi-k2-thinking", **kwargs)
    messages = kimi.encode(p)["messages"]
    _check(messages)
    return messages, p.diagnostics


def test_kimi_reasoning_is_replayed_and_calls_get_a_placeholder_otherwise() -> None:
    own = ThinkingPart(text="I need the weather.", provider="kimi", model="kimi-k2-thinking")
    first = call("functions.get_weather:0", "get_weather", {"city": "Beijing"})
    second = call("functions.get_weather:1", "get_weather", {"city": "Paris"})
    messages, diagnostics = _encode(
        [
            UserTurn([Text("Weather in Beijing?")]),
            AssistantTurn([Reasoning(own), first]),
            ToolTurn([Result(first, JsonBody("Sunny"))]),
            AssistantTurn([Text("Sunny. Paris too?"), second]),
            ToolTurn([Result(second, JsonBody({"sky": "rain"}))]),
            AssistantTurn([Reasoning(own), Text("Rain in Paris.")]),
        ],
        system=["You are Kimi."],
    )
    assert messages == [
        {"role": "system", "content": "You are Kimi."},
        {"role": "user", "content": "Weather in Beijing?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "functions.get_weather:0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Beijing"}'},
                }
            ],
            "reasoning_content": "I need the weather.",
        },
        {
            "role": "tool",
            "tool_call_id": "functions.get_weather:0",
            "content": "Sunny",
            "name": "get_weather",
        },
        {
            "role": "assistant",
            "content": "Sunny. Paris too?",
            "tool_calls": [
                {
                    "id": "functions.get_weather:1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
            "reasoning_content": " ",
        },
        {
            "role": "tool",
            "tool_call_id": "functions.get_weather:1",
            "content": '{"sky":"rain"}',
            "name": "get_weather",
        },
        {
            "role": "assistant",
            "content": "Rain in Paris.",
            "reasoning_content": "I need the weather.",
        },
    ]
    assert diagnostics.notes == [placeholder_note("functions.get_weather:1")]


def test_user_images_go_inline_other_media_becomes_a_note() -> None:
    messages, diagnostics = _encode(
        [
            UserTurn(
                [
                    Text("What is this?"),
                    Media("image/png", data=PNG, label="aaaaaa"),
                    Media("application/pdf", data=PDF, label="bbbbbb"),
                ]
            )
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
                },
                {
                    "type": "text",
                    "text": "[bbbbbb (application/pdf) omitted: user messages cannot carry it]",
                },
            ],
        }
    ]
    assert [(n.media_type, n.placement) for n in diagnostics.media] == [
        ("application/pdf", "text_note")
    ]


def test_a_reasoning_only_turn_is_omitted() -> None:
    # Kimi refuses an assistant message without content or tool calls, whatever its reasoning.
    opaque = ThinkingPart(provider="kimi", provider_details={"opaque": True})
    readable = ThinkingPart(text="Thinking...", provider="kimi")
    messages, diagnostics = _encode(
        [UserTurn([Text("hi")]), AssistantTurn([Reasoning(opaque), Reasoning(readable)])]
    )
    assert messages == [{"role": "user", "content": "hi"}]
    assert [n.action for n in diagnostics.reasoning] == ["dropped"]
    assert diagnostics.notes == [
        "kimi: omitted an assistant turn that had nothing this target can carry"
    ]


# -- through the parser and the planner ------------------------------------------------------

KIMI_HISTORY: dict[str, Any] = {
    # Shaped like the examples in Kimi's tool-call and thinking-model guides.
    "model": "kimi-k2-thinking",
    "messages": [
        {"role": "system", "content": "You are Kimi."},
        {"role": "user", "content": "What's the weather in Beijing and Shanghai?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "Two cities: two calls.",
            "tool_calls": [
                {
                    "id": "functions.get_weather:0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Beijing"}'},
                },
                {
                    "id": "functions.get_weather:1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Shanghai"}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "functions.get_weather:0",
            "name": "get_weather",
            "content": "Sunny, 25°C",
        },
        {
            "role": "tool",
            "tool_call_id": "functions.get_weather:1",
            "name": "get_weather",
            "content": "Rain, 18°C",
        },
        {
            "role": "assistant",
            "content": "Beijing is sunny; Shanghai is rainy.",
            "reasoning_content": "Both answers are in.",
        },
        {"role": "user", "content": "And tomorrow?"},
    ],
}


def test_a_kimi_history_round_trips() -> None:
    parsed = openai_chat.parse(KIMI_HISTORY)
    thinking = parsed[2].parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.provider, thinking.model, thinking.text) == (
        "kimi",
        "kimi-k2-thinking",
        "Two cities: two calls.",
    )
    p = plan_messages(parsed, target="kimi", model="kimi-k2-thinking")
    messages = kimi.encode(p)["messages"]
    _check(messages)
    expected = copy.deepcopy(KIMI_HISTORY["messages"])
    expected[2]["content"] = None  # "" beside tool calls carries nothing; null is its spelling
    assert messages == expected
    assert p.diagnostics.notes == []
    assert [n.action for n in p.diagnostics.reasoning] == ["kept", "kept"]


def test_a_foreign_history_gets_kimi_ids_and_placeholders() -> None:
    history = [
        Message.user("Weather in Oslo, then a chart."),
        Message.assistant(
            ThinkingPart(
                text="Call the tool.", provider="anthropic", model="claude-x", signature="sig"
            ),
            ToolCallPart(id="toolu_01", name="get_weather", arguments={"city": "Oslo"}),
            provider="anthropic",
            model="claude-x",
        ),
        Message(
            role=Role.TOOL,
            parts=[ToolResultPart(call_id="toolu_01", output=JsonOutput(value="Snow"))],
        ),
        Message.assistant(
            ToolCallPart(id="toolu_02", name="make.chart"),
            ToolCallPart(id="toolu_03", name="get_report"),
            provider="anthropic",
            model="claude-x",
        ),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResultPart(
                    call_id="toolu_02",
                    output=ContentOutput(parts=[TextPart(text="chart:"), FilePart.from_bytes(PNG)]),
                ),
                ToolResultPart(
                    call_id="toolu_03", output=ContentOutput(parts=[FilePart.from_bytes(PDF)])
                ),
            ],
        ),
    ]
    # kimi-k2.5: a multimodal Kimi (the K2 models read text only)
    p = plan_messages(history, target="kimi", model="kimi-k2.5")
    messages = kimi.encode(p)["messages"]
    _check(messages)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "assistant", "tool", "tool", "user",
    ]  # fmt: skip
    assert [c["id"] for m in messages for c in m.get("tool_calls", [])] == [
        "functions.get_weather:0",
        "functions.make_chart:1",
        "functions.get_report:2",
    ]
    assert p.diagnostics.id_map == {
        "toolu_01": "functions.get_weather:0",
        "toolu_02": "functions.make_chart:1",
        "toolu_03": "functions.get_report:2",
    }
    assert messages[1]["reasoning_content"] == " "  # the Anthropic reasoning cannot go to Kimi
    assert messages[3]["reasoning_content"] == " "
    chart, report, injected = messages[4:]
    label = chart["content"].removeprefix("chart:\nSee file ").removesuffix(".")
    assert chart["name"] == "make_chart"
    assert re.fullmatch(r"\[file \w+ \(application/pdf\) omitted: .*\]", report["content"])
    assert injected["content"][0] == {"type": "text", "text": f"This is file {label}:"}
    assert injected["content"][1]["type"] == "image_url"
    assert p.diagnostics.notes == [
        placeholder_note("functions.get_weather:0"),
        placeholder_note("functions.make_chart:1, functions.get_report:2"),
    ]


def test_public_parse_and_render_use_this_module() -> None:
    messages = convstore.parse(KIMI_HISTORY, "kimi")
    assert messages == openai_chat.parse(KIMI_HISTORY)
    rendered = convstore.render(messages, "kimi", model="kimi-k2-thinking")
    assert rendered.payload["messages"][3:5] == KIMI_HISTORY["messages"][3:5]


# -- golden payloads of the shared conversations ---------------------------------------------

GOLDEN_MODEL = dict(TARGET_MODELS)[kimi.TARGET]


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    rendered = convstore.render(CASES[case], kimi.TARGET, model=GOLDEN_MODEL)
    assert set(rendered.payload) == {"messages"}
    _check(rendered.payload["messages"])
    actual = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    assert_golden(kimi.TARGET, case, actual)
