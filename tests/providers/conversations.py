"""Canonical conversations every target's golden tests render (one golden file per case).

Each case is a stored-looking history (with ``seq``) exercising one rendering rule. Files are
inline bytes so a render needs no blob store; bytes are fixed (not random) so goldens are
stable.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from convstore import (
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

__all__ = ["CASES", "GIF", "JPEG", "PDF", "PNG", "TARGET_MODELS"]

PNG: Final = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
JPEG: Final = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(16))
GIF: Final = b"GIF89a" + bytes(range(12))
PDF: Final = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n"

TARGET_MODELS: Final = (
    ("openai-chat", "gpt-5"),
    ("openai-responses", "gpt-5"),
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-flash"),
    ("mistral", "mistral-medium-latest"),
    ("kimi", "kimi-k2-thinking"),
)
"""Every target, and both Gemini generations."""

_T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _stored(messages: list[Message]) -> list[Message]:
    return [m.model_copy(update={"seq": i, "created_at": _T0}) for i, m in enumerate(messages, 1)]


def _call(call_id: str, tool: str, **arguments: object) -> ToolCallPart:
    return ToolCallPart(id=call_id, name=tool, arguments=arguments)


def _result(call_id: str, output: object, name: str | None = None) -> Message:
    if not isinstance(output, JsonOutput | ContentOutput | ErrorOutput):
        output = JsonOutput(value=output)
    return Message(
        role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, output=output, name=name)]
    )


PARALLEL_CALLS = _stored(
    [
        Message.system("You are a family-history assistant."),
        Message.user("Alice, Bob and Daisy: who is the youngest?"),
        Message.assistant(
            "Looking all three up.",
            _call("call_alice", "lookup_person", name="Alice"),
            _call("call_bob", "lookup_person", name="Bob"),
            _call("call_daisy", "lookup_person", name="Daisy"),
        ),
        _result("call_alice", {"age": 41}),
        _result("call_bob", {"age": 43}),
        _result("call_daisy", "7 years old"),
        Message.assistant("Daisy is the youngest."),
        Message.user("Thanks!"),
    ]
)

IMAGE_AND_PDF_RESULTS = _stored(
    [
        Message.user("Fetch the chart and the report."),
        Message.assistant(
            _call("call_chart", "get_file", name="chart.png"),
            _call("call_report", "get_file", name="report.pdf"),
        ),
        _result(
            "call_chart",
            ContentOutput(
                parts=[
                    TextPart(text="Here is the chart:"),
                    FilePart.from_bytes(PNG, filename="chart.png"),
                ]
            ),
        ),
        _result(
            "call_report", ContentOutput(parts=[FilePart.from_bytes(PDF, filename="report.pdf")])
        ),
        Message.user("Describe both."),
    ]
)

MULTIPLE_IMAGES = _stored(
    [
        Message.user("Show me the three photos."),
        Message.assistant(_call("call_photos", "get_photos", album="trip")),
        _result(
            "call_photos",
            ContentOutput(
                parts=[
                    TextPart(text="First:"),
                    FilePart.from_bytes(PNG),
                    TextPart(text="Second:"),
                    FilePart.from_bytes(JPEG),
                    FilePart.from_bytes(GIF),
                    TextPart(text='{"count": 3}'),
                ]
            ),
        ),
        Message.user("Which is brightest?"),
    ]
)

INTERRUPTED_CALL = _stored(
    [
        Message.user("Book a table for two at eight."),
        Message.assistant(
            "Checking availability.",
            _call("call_book", "book_table", people=2, time="20:00"),
            _call("call_menu", "get_menu"),
        ),
        _result("call_menu", ErrorOutput(message="menu service unavailable")),
        Message.user("Actually, cancel that and tell me a joke."),
    ]
)

PROVIDER_SWITCH = _stored(
    [
        Message.system("Be concise."),
        Message.user("What's the weather in Paris and Rome?"),
        Message(
            role=Role.ASSISTANT,
            provider="anthropic",
            model="claude-sonnet-4-5",
            parts=[
                ThinkingPart(
                    text="I should check Paris first.",
                    provider="anthropic",
                    model="claude-sonnet-4-5",
                    signature="EqQBCkgIBxABGAIqQAnthropicSignature",
                ),
                _call("toolu_01ParisWeather", "get_weather", city="Paris"),
            ],
        ),
        _result("toolu_01ParisWeather", {"temp_c": 18}),
        Message(
            role=Role.ASSISTANT,
            provider="openai",
            model="gpt-5",
            parts=[
                ThinkingPart(
                    text="Now Rome.",
                    provider="openai",
                    model="gpt-5",
                    reasoning_id="rs_0abc",
                    encrypted_content="gAAAAAencrypted",
                    summary=["Now Rome."],
                ),
                ToolCallPart(
                    id="call_RomeWeather",
                    name="get_weather",
                    arguments={"city": "Rome"},
                    provider_details={"item_id": "fc_0abc"},
                ),
            ],
        ),
        _result("call_RomeWeather", {"temp_c": 24}),
        Message(
            role=Role.ASSISTANT,
            provider="gemini",
            model="gemini-3-pro-preview",
            parts=[
                ThinkingPart(
                    provider="gemini",
                    model="gemini-3-pro-preview",
                    signature="CiQBR2VtaW5pVGhvdWdodFNpZ25hdHVyZQ==",
                    rides_on="text",
                ),
                TextPart(text="Paris 18°C, Rome 24°C."),
            ],
        ),
        Message.user("And tomorrow?"),
        Message(
            role=Role.ASSISTANT,
            provider="gemini",
            model="gemini-3-pro-preview",
            parts=[_call("call_forecast", "get_forecast", days=1)],
        ),
        _result("call_forecast", {"paris": 17, "rome": 25}),
    ]
)

KIMI_AND_OVERLONG_IDS = _stored(
    [
        Message.user("Weather twice, please."),
        Message.assistant(
            _call("functions.get_weather:0", "get_weather", city="Oslo"),
            _call("call_" + "x" * 90, "get_weather", city="Lima"),
        ),
        _result("functions.get_weather:0", {"temp_c": -3}),
        _result("call_" + "x" * 90, {"temp_c": 19}),
        Message.user("Again for Oslo."),
        Message.assistant(_call("functions.get_weather:0~2", "get_weather", city="Oslo")),
        _result("functions.get_weather:0~2", {"temp_c": -2}),
    ]
)

DOTTED_TOOL_NAMES = _stored(
    [
        Message.user("Read the config and search the web."),
        Message.assistant(
            _call("call_1", "fs.read_file", path="/etc/app.toml"),
            _call("call_2", "web.search", q="app.toml format"),
        ),
        _result("call_1", "port = 8080", name="fs.read_file"),
        _result("call_2", ["https://toml.io"], name="web.search"),
        Message.user("Summarise."),
    ]
)

CASES: Final[dict[str, list[Message]]] = {
    "parallel_calls": PARALLEL_CALLS,
    "image_and_pdf_results": IMAGE_AND_PDF_RESULTS,
    "multiple_images_in_one_result": MULTIPLE_IMAGES,
    "interrupted_call": INTERRUPTED_CALL,
    "provider_switch_signed_reasoning": PROVIDER_SWITCH,
    "kimi_style_and_overlong_ids": KIMI_AND_OVERLONG_IDS,
    "dotted_tool_names": DOTTED_TOOL_NAMES,
}
