"""Responses back in: render -> a response built with the provider SDK's own types ->
`parse_response(..., rendered=)` -> `complete_tool_call` with the id the application holds.

Every target, with a dotted tool name (renamed on every target but Gemini) and the targets that
project ids (Mistral's nine characters, Kimi's ``functions.name:index``).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from convstore import (
    ConversationStore,
    JsonOutput,
    Message,
    Rendered,
    ThinkingPart,
    ToolCallPart,
    ToolCallStatus,
    ToolDefinition,
    Usage,
    parse_response,
    render,
)
from tests.providers.conversations import TARGET_MODELS
from tests.support.wire_rules import check_payload

SEARCH = ToolDefinition(
    name="web.search",
    description="Search the web.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
SOURCES = {"openai-chat": "openai-chat", "mistral": "mistral", "kimi": "kimi"}


def _history() -> list[Message]:
    return [
        Message.system("Search when unsure."),
        Message.user("Who won?"),
        Message.assistant(
            ToolCallPart(
                id="call_0123456789abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJ_long",
                name="web.search",
                arguments={"q": "winner"},
            ),
            provider="anthropic",
            model="claude-sonnet-4-5",
        ),
        Message.tool_result(
            "call_0123456789abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJ_long", "Team A", name="web.search"
        ),
        Message.assistant("Team A.", provider="anthropic", model="claude-sonnet-4-5"),
        Message.user("And the score?"),
    ]


def _wire_name(rendered: Rendered) -> str:
    return rendered.diagnostics.name_map.get("web.search", "web.search")


def _new_call_id(target: str, rendered: Rendered) -> str:
    match target:
        case "mistral":
            return "Zx8Qw2Er5"
        case "kimi":
            return f"functions.{_wire_name(rendered)}:{len(rendered.diagnostics.id_map)}"
        case "anthropic":
            return "toolu_01NewCall"
        case "gemini":
            return "gem-call-7"
        case _:
            return "call_new_7"


def _response(target: str, model: str, rendered: Rendered, call_id: str) -> Any:
    """A provider response with one new call, built with that provider's SDK types."""
    name = _wire_name(rendered)
    arguments = '{"q": "score"}'
    match target:
        case "openai-chat" | "kimi":
            from openai.types.chat import ChatCompletion

            return ChatCompletion.model_validate(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": None,
                                "tool_calls": [
                                    {
                                        "id": call_id,
                                        "type": "function",
                                        "function": {"name": name, "arguments": arguments},
                                    }
                                ],
                            },
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 120,
                        "completion_tokens": 30,
                        "total_tokens": 150,
                        "prompt_tokens_details": {"cached_tokens": 100},
                        "completion_tokens_details": {"reasoning_tokens": 12},
                    },
                }
            )
        case "mistral":
            from mistralai.client.models import ChatCompletionResponse

            return ChatCompletionResponse.model_validate(
                {
                    "id": "cmpl-1",
                    "object": "chat.completion",
                    "model": model,
                    "created": 1,
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": "",
                                "tool_calls": [
                                    {
                                        "id": call_id,
                                        "type": "function",
                                        "function": {"name": name, "arguments": arguments},
                                    }
                                ],
                            },
                        }
                    ],
                }
            )
        case "openai-responses":
            from openai.types.responses import Response

            return Response.model_validate(
                {
                    "id": "resp_1",
                    "object": "response",
                    "created_at": 1,
                    "model": model,
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                    "output": [
                        {
                            "type": "function_call",
                            "id": "fc_1",
                            "call_id": call_id,
                            "name": name,
                            "arguments": arguments,
                            "status": "completed",
                        }
                    ],
                    "usage": {
                        "input_tokens": 120,
                        "output_tokens": 30,
                        "total_tokens": 150,
                        "input_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 12},
                    },
                }
            )
        case "anthropic":
            from anthropic.types import Message as AnthropicMessage

            return AnthropicMessage.model_validate(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "stop_reason": "tool_use",
                    "stop_sequence": None,
                    "content": [
                        {"type": "tool_use", "id": call_id, "name": name, "input": {"q": "score"}}
                    ],
                    "usage": {
                        "input_tokens": 20,
                        "output_tokens": 30,
                        "cache_read_input_tokens": 100,
                        "cache_creation_input_tokens": 0,
                    },
                }
            )
        case "gemini":
            from google.genai import types

            return types.GenerateContentResponse(
                candidates=[
                    types.Candidate(
                        content=types.Content(
                            role="model",
                            parts=[
                                types.Part(
                                    function_call=types.FunctionCall(
                                        id=call_id, name=name, args={"q": "score"}
                                    ),
                                    thought_signature=b"sig-bytes",
                                )
                            ],
                        ),
                        finish_reason=types.FinishReason.STOP,
                    )
                ],
                model_version=model,
                usage_metadata=types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=120,
                    candidates_token_count=18,
                    thoughts_token_count=12,
                    cached_content_token_count=100,
                ),
            )
    raise AssertionError(target)


@pytest.mark.parametrize(
    ("target", "model"), TARGET_MODELS, ids=[f"{t}-{m}" for t, m in TARGET_MODELS]
)
async def test_round_trip_with_sdk_response_objects(
    target: str, model: str, store: ConversationStore
) -> None:
    conversation = await store.create_conversation()
    await store.append(conversation.id, _history())
    rendered = await store.render(conversation.id, target, model=model, tools=[SEARCH])
    check_payload(target, model, rendered.payload)
    call_id = _new_call_id(target, rendered)

    message = parse_response(
        _response(target, model, rendered, call_id), SOURCES.get(target, target), rendered=rendered
    )
    (call,) = message.tool_calls
    assert call.name == "web.search"  # the canonical name, whatever the wire name was
    assert call.arguments == {"q": "score"}
    assert message.usage is not None and message.usage.input_tokens == 120
    assert message.usage.output_tokens == 30
    if target != "mistral":
        assert message.usage.cached_tokens == 100
    if target == "gemini":  # the SDK's bytes signature arrives as the REST base64 text
        signatures = [p.signature for p in message.parts if isinstance(p, ThinkingPart)]
        assert signatures == [base64.b64encode(b"sig-bytes").decode()]

    await store.append(conversation.id, message)
    completed = await store.complete_tool_call(conversation.id, call.id, JsonOutput(value="2-1"))
    assert completed.status is ToolCallStatus.COMPLETE and completed.name == "web.search"

    again = await store.render(conversation.id, target, model=model, tools=[SEARCH])
    check_payload(target, model, again.payload)
    assert again.diagnostics.synthetic_results == []
    if target == "mistral":
        assert again.diagnostics.id_map[call.id] == call_id  # Mistral's own id goes back


def test_a_projected_id_in_a_response_maps_back_to_its_canonical_call() -> None:
    history = _history()[:4]
    canonical = history[2].tool_calls[0].id
    for target in ("mistral", "kimi", "openai-chat"):
        rendered = render(history, target, tools=[SEARCH])
        wire_id = rendered.diagnostics.id_map[canonical]
        assert wire_id != canonical  # projected: too long for every Chat dialect
        body = {
            "model": "m",
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": wire_id,
                                "type": "function",
                                "function": {"name": "web_search", "arguments": "{}"},
                            }
                        ],
                    }
                }
            ],
        }
        (call,) = parse_response(body, target, rendered=rendered).tool_calls
        assert (call.id, call.name, call.provider_id) == (canonical, "web.search", wire_id)


def test_a_new_id_colliding_with_a_canonical_one_gets_a_fresh_id() -> None:
    # An older Kimi session's call keeps its id; this render numbers calls from 0 again.
    history = [
        Message.user("hi"),
        Message.assistant(ToolCallPart(id="functions.web_search:5", name="web.search")),
        Message.tool_result("functions.web_search:5", "ok"),
    ]
    rendered = render(history, "kimi", tools=[SEARCH])
    assert rendered.diagnostics.id_map == {"functions.web_search:5": "functions.web_search:0"}
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "functions.web_search:5",
                            "type": "function",
                            "function": {"name": "web_search", "arguments": "{}"},
                        }
                    ],
                }
            }
        ]
    }
    (call,) = parse_response(body, "kimi", rendered=rendered).tool_calls
    assert call.id == "functions.web_search:5~2" and call.provider_id == "functions.web_search:5"


def test_usage_without_rendered_and_from_json() -> None:
    body = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": 5},
    }
    message = parse_response(body, "anthropic")
    assert message.usage == Usage(input_tokens=8, output_tokens=4)
    assert parse_response({**body, "usage": None}, "anthropic").usage is None


def test_a_bad_token_count_is_malformed() -> None:
    from convstore import MalformedPayloadError

    body = {
        "choices": [{"message": {"role": "assistant", "content": "x"}}],
        "usage": {"prompt_tokens": -1},
    }
    with pytest.raises(MalformedPayloadError):
        parse_response(body, "openai-chat")
