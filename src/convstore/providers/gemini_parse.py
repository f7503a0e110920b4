"""Parsing Gemini generateContent request histories and response bodies into canonical messages.

The wire rules and their sources are stated in `convstore.providers.gemini` (the encoder).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any, Final, Literal

from pydantic import JsonValue

from convstore.limits import MAX_JSON_DEPTH, json_depth
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
    ToolOutput,
    ToolResultPart,
)
from convstore.providers._encoding import json_text
from convstore.providers._parsing import (
    CallIds,
    Json,
    decode_base64,
    inline_file,
    is_base64,
    parse_arguments,
    root_object,
)
from convstore.providers._usage import with_usage

__all__ = [
    "TARGET",
    "Carrier",
    "Wire",
    "parse",
    "parse_response",
]

TARGET: Final = "gemini"
"""Render target and parse source name; also the provider family recorded on messages."""

Wire = dict[str, Any]
"""A JSON object as sent on the wire."""

Carrier = Literal["text", "tool_call", "file"]
"""The kinds of part a thought signature can ride on (`ThinkingPart.rides_on`)."""

_DATA_KEYS: Final = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
)
"""The ``data`` oneof of a Part: exactly one is set."""

_CALL_ID_PREFIX: Final = "gemini_call"


# -- parsing ---------------------------------------------------------------------------------


def parse(payload: Mapping[str, Any]) -> list[Message]:
    """Canonical messages from a ``generateContent`` request body (or a stored history).

    ``systemInstruction`` becomes a system message; ``model`` (optional) is recorded as the
    producing model of the model contents; other request keys are ignored.
    """
    root = root_object(payload, TARGET)
    model = _model_name(root.str_or_none("model"))
    messages: list[Message] = []
    system = _field(root, "systemInstruction")
    if system is not None:
        messages.extend(_system_message(system))
    ids = CallIds(_CALL_ID_PREFIX)
    for content in root.require("contents").items():
        messages.extend(_content_messages(content, ids, model))
    return messages


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a response body, with the token usage it reports."""
    return with_usage(_response_message(body), body, TARGET)


def _response_message(body: Mapping[str, Any]) -> Message:
    """The assistant message of a ``generateContent`` response (its first candidate).

    A response without candidates (a blocked prompt, which carries ``promptFeedback``) gives an
    empty assistant message whose ``provider_details`` say why.
    """
    root = root_object(body, TARGET)
    model = _model_name(_text(root, "modelVersion"))
    response_id = _text(root, "responseId")
    details: dict[str, JsonValue] = {}
    if response_id is not None:
        details["response_id"] = response_id
    candidates = _field(root, "candidates")
    first = next(candidates.items(), None) if candidates is not None else None
    if first is None:
        feedback = _field(root, "promptFeedback")
        if feedback is None:
            raise root.fail("missing 'candidates'")
        block_reason = _text(feedback, "blockReason")
        details["block_reason"] = block_reason or "unspecified"
        return _assistant([], model, details)
    first.object()
    finish_reason = _text(first, "finishReason")
    if finish_reason is not None:
        details["finish_reason"] = finish_reason
    content = _field(first, "content")
    parts: list[Json] = []
    if content is not None:
        role = _role_of(content)
        if role not in (None, "model"):
            raise content.fail(f"a response candidate's role must be 'model', got {role!r}")
        parts = _parts_of(content)
    # Responses carry no call ids (the Gemini API leaves them out); the response id keeps the
    # positional ids of different responses apart.
    ids = CallIds(f"gemini_{response_id or uuid.uuid4().hex[:12]}")
    return _assistant(_model_parts(parts, ids, model), model, details)


def _assistant(
    parts: list[TextPart | FilePart | ThinkingPart | ToolCallPart],
    model: str | None,
    details: dict[str, JsonValue],
) -> Message:
    return Message(
        role=Role.ASSISTANT,
        parts=list(parts),
        provider=TARGET,
        model=model,
        provider_details=details or None,
    )


@cache
def _spellings(name: str) -> tuple[str, ...]:
    """``name`` (lowerCamelCase) and its snake_case form."""
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)
    return (name,) if snake == name else (name, snake)


def _field(node: Json, name: str) -> Json | None:
    """The field ``name`` of an object, spelt in camelCase or snake_case."""
    return node.get(*_spellings(name))


def _text(node: Json, name: str) -> str | None:
    """The optional string field ``name``, spelt in camelCase or snake_case."""
    return node.str_or_none(*_spellings(name))


def _model_name(name: str | None) -> str | None:
    """A model name without its resource path (``models/gemini-3-pro`` -> ``gemini-3-pro``)."""
    if not name:
        return None
    return name.rsplit("/", 1)[-1] or None


def _system_message(node: Json) -> list[Message]:
    if isinstance(node.value, str):  # SDKs accept a bare string as the system instruction
        return [Message.system(node.value)] if node.value else []
    texts: list[TextPart] = []
    for part in _parts_of(node):
        kind = _data_kind(part)
        if kind != "text":
            raise part.fail(f"a system instruction holds text only, got {kind or 'no data'}")
        texts.append(TextPart(text=part.require("text").string()))
    return [Message(role=Role.SYSTEM, parts=list(texts))] if texts else []


def _parts_of(content: Json) -> list[Json]:
    parts = _field(content, "parts")
    if parts is None:
        return []
    checked = list(parts.items())
    for part in checked:
        part.object()
    return checked


def _role_of(content: Json) -> str | None:
    role = content.str_or_none("role")
    return role.lower() if role else None


def _content_messages(content: Json, ids: CallIds, model: str | None) -> list[Message]:
    content.object()
    parts = _parts_of(content)
    if not parts:
        return []  # an empty content says nothing (the API refuses them in requests)
    role = _role_of(content)
    if role is None:
        # The API reads an unset role as the user's; a content with a call or a thought can only
        # be the model's, so those are read as such.
        model_only = any(_data_kind(p) == "functionCall" or _is_thought(p) for p in parts)
        role = "model" if model_only else "user"
    match role:
        case "model":
            return [_assistant(_model_parts(parts, ids, model), model, {})]
        case "user" | "function":  # "function" is the role early Gemini API versions used
            return _user_messages(parts, ids)
        case _:
            raise content.fail(f"unknown role {role!r}; expected 'user' or 'model'")


def _data_kind(part: Json) -> str | None:
    """Which member of the Part ``data`` oneof is set (``None`` for a signature-only part)."""
    present = [key for key in _DATA_KEYS if _field(part, key) is not None]
    if len(present) > 1:
        raise part.fail(f"a part holds exactly one of its data fields, got {', '.join(present)}")
    if present:
        return present[0]
    obj = part.object()
    known = {"thought", "thoughtSignature", "thought_signature"}
    if not any(obj.get(k) is not None for k in known):
        keys = ", ".join(sorted(obj)) or "none"
        raise part.fail(f"unsupported part (keys: {keys})")
    return None


def _is_thought(part: Json) -> bool:
    thought = part.get("thought")
    return thought is not None and thought.boolean()


def _signature(part: Json) -> str | None:
    node = _field(part, "thoughtSignature")
    if node is None:
        return None
    signature = node.string()
    if not is_base64(signature):
        raise node.fail("a thoughtSignature is bytes, sent as base64; this is not base64")
    return signature


def _model_parts(
    parts: list[Json], ids: CallIds, model: str | None
) -> list[TextPart | FilePart | ThinkingPart | ToolCallPart]:
    out: list[TextPart | FilePart | ThinkingPart | ToolCallPart] = []
    for part in parts:
        kind = _data_kind(part)
        signature = _signature(part)
        if _is_thought(part) or kind is None:
            text = part.require("text").string() if kind == "text" else ""
            if kind not in ("text", None):
                raise part.fail(f"a thought part holds text, got {kind}")
            out.append(_thinking(model, text=text, signature=signature))
            continue
        carried, carrier = _model_data(part, kind, ids)
        if signature is not None:
            out.append(_thinking(model, signature=signature, rides_on=carrier))
        out.append(carried)
    return out


def _thinking(
    model: str | None,
    *,
    text: str = "",
    signature: str | None = None,
    rides_on: Carrier | None = None,
) -> ThinkingPart:
    return ThinkingPart(
        text=text, provider=TARGET, model=model, signature=signature, rides_on=rides_on
    )


def _model_data(
    part: Json, kind: str, ids: CallIds
) -> tuple[TextPart | FilePart | ToolCallPart, Carrier]:
    match kind:
        case "text":
            return TextPart(text=part.require("text").string()), "text"
        case "functionCall":
            return _call(part.require(*_spellings("functionCall")), ids), "tool_call"
        case "inlineData" | "fileData":
            return _file(part, kind), "file"
        case "executableCode" | "codeExecutionResult":
            return _code_text(part, kind), "text"
        case _:
            raise part.fail(f"a model content cannot hold {kind}")


def _call(node: Json, ids: CallIds) -> ToolCallPart:
    name = node.require("name").string()
    provider_id = node.str_or_none("id")
    arguments, raw = parse_arguments(node.get("args"))
    return ids.call_part(provider_id, name, arguments, raw)


def _file(part: Json, kind: str) -> FilePart:
    node = part.require(*_spellings(kind))
    node.object()
    media_type = _text(node, "mimeType")
    filename = _text(node, "displayName")
    if kind == "fileData":
        uri = node.require(*_spellings("fileUri")).string()
        return FilePart.from_uri(uri, media_type=media_type, filename=filename)
    data_node = node.require("data")
    data = decode_base64(data_node.string(), data_node)
    return inline_file(data, media_type, filename, data_node)


def _code_text(part: Json, kind: str) -> TextPart:
    """Code-execution parts as readable text, the original part kept for fidelity."""
    node = part.require(*_spellings(kind))
    obj = node.object()
    if kind == "executableCode":
        language = (node.str_or_none("language") or "").lower()
        language = "" if language == "language_unspecified" else language
        text = f"```{language}\n{node.require('code').string()}\n```"
    else:
        text = node.str_or_none("output") or ""
    return TextPart(text=text, provider_details={"gemini_part": {kind: obj}})


def _user_messages(parts: list[Json], ids: CallIds) -> list[Message]:
    results: list[ToolResultPart] = []
    others: list[TextPart | FilePart] = []
    for part in parts:
        kind = _data_kind(part)
        match kind:
            case "functionResponse":
                results.append(_result(part.require(*_spellings(kind)), ids))
            case "text":
                others.append(TextPart(text=part.require("text").string()))
            case "inlineData" | "fileData":
                others.append(_file(part, kind))
            case "executableCode" | "codeExecutionResult":
                others.append(_code_text(part, kind))
            case "functionCall":
                raise part.fail("a user content cannot hold a functionCall")
            case _:
                continue  # a stray signature on a user part: the API never sends one
    messages: list[Message] = []
    if results:
        messages.append(Message(role=Role.TOOL, parts=list(results)))
    if others:
        messages.append(Message(role=Role.USER, parts=list(others)))
    return messages


def _result(node: Json, ids: CallIds) -> ToolResultPart:
    name = node.require("name").string()
    provider_id = node.str_or_none("id")
    response_node = node.require("response")
    response = response_node.object()
    if json_depth(response) > MAX_JSON_DEPTH:  # it may be turned into JSON text below
        raise response_node.fail(f"nests deeper than {MAX_JSON_DEPTH} levels")
    nested = _field(node, "parts")
    files = [_nested_file(p) for p in nested.items()] if nested is not None else []
    return ToolResultPart(
        call_id=ids.result(provider_id, name),
        output=_result_output(response, files),
        name=name,
    )


def _nested_file(part: Json) -> FilePart:
    part.object()
    kind = next((k for k in ("inlineData", "fileData") if _field(part, k) is not None), None)
    if kind is None:
        raise part.fail("a function response part holds inlineData or fileData")
    return _file(part, kind)


def _result_output(response: dict[str, Any], files: list[FilePart]) -> ToolOutput:
    if files:
        text = _response_text(response)
        content: list[TextPart | FilePart] = [TextPart(text=text)] if text else []
        return ContentOutput(parts=[*content, *files])
    if len(response) == 1:
        [(key, value)] = response.items()
        if key == "error" and isinstance(value, str):
            return ErrorOutput(message=value)
        if key == "output" and not isinstance(value, dict):
            return JsonOutput(value=value)
    return JsonOutput(value=response)


def _response_text(response: dict[str, Any]) -> str | None:
    """The text that accompanies nested media: ``output`` text, else the object as JSON."""
    if not response:
        return None
    output = response.get("output")
    if len(response) == 1 and isinstance(output, str):
        return output
    return json_text(response)
