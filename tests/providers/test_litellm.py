"""LiteLLM's Chat Completions extensions for Claude: ``reasoning_content`` and ``thinking_blocks``.

LiteLLM answers a Claude model's thinking as ``reasoning_content`` (the text) plus
``thinking_blocks`` (Anthropic blocks with signatures) and takes the blocks back on assistant
messages. convstore parses the blocks as signed Anthropic reasoning and renders them back to the
same model, through LiteLLM (``openai-chat`` with a ``claude*`` model) or to Anthropic directly.
"""

from __future__ import annotations

from typing import Any

from convstore import ThinkingPart, parse, parse_response, render
from tests.support.wire_rules import check_payload

MODEL = "anthropic/claude-sonnet-4-5"


def _assistant() -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "Let me check.",
        "reasoning_content": "The user wants the weather.",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "The user wants the weather.", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
        ],
        "tool_calls": [
            {"id": "toolu_01", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ],
    }


def _history() -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "Weather?"},
            _assistant(),
            {"role": "tool", "tool_call_id": "toolu_01", "content": "sunny"},
        ],
    }


def test_thinking_blocks_parse_as_signed_anthropic_reasoning() -> None:
    message = parse(_history(), "openai-chat")[1]
    thinking = [p for p in message.parts if isinstance(p, ThinkingPart)]
    assert [(t.text, t.signature, t.redacted_data) for t in thinking] == [
        ("The user wants the weather.", "c2ln", None),
        ("", None, "cmVkYWN0ZWQ="),
    ]  # reasoning_content repeats the blocks' text: read once
    assert {(t.provider, t.model) for t in thinking} == {("anthropic", MODEL)}


def test_reasoning_content_alone_still_parses() -> None:
    history = _history()
    del history["messages"][1]["thinking_blocks"]
    message = parse(history, "openai-chat")[1]
    (thinking,) = [p for p in message.parts if isinstance(p, ThinkingPart)]
    assert thinking.text == "The user wants the weather." and not thinking.signed


def test_thinking_blocks_render_back_through_litellm() -> None:
    rendered = render(parse(_history(), "openai-chat"), "openai-chat", model=MODEL)
    check_payload("openai-chat", MODEL, rendered.payload)
    assistant = rendered.payload["messages"][1]
    assert assistant["thinking_blocks"] == _assistant()["thinking_blocks"]


def test_thinking_blocks_render_to_anthropic_for_the_same_model() -> None:
    rendered = render(parse(_history(), "openai-chat"), "anthropic", model="claude-sonnet-4-5")
    check_payload("anthropic", "claude-sonnet-4-5", rendered.payload)
    blocks = rendered.payload["messages"][1]["content"]
    assert [b["type"] for b in blocks[:2]] == ["thinking", "redacted_thinking"]
    assert blocks[0]["signature"] == "c2ln"


def test_other_models_do_not_get_the_blocks() -> None:
    rendered = render(parse(_history(), "openai-chat"), "openai-chat", model="gpt-5")
    assert "thinking_blocks" not in rendered.payload["messages"][1]
    assert {n.action for n in rendered.diagnostics.reasoning} == {"dropped"}


def test_a_litellm_response_parses_with_its_blocks() -> None:
    body = {
        "id": "chatcmpl-1",
        "model": MODEL,
        "choices": [{"index": 0, "message": _assistant(), "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
    message = parse_response(body, "openai-chat")
    assert sum(isinstance(p, ThinkingPart) for p in message.parts) == 2
    assert message.usage is not None and message.usage.input_tokens == 10
