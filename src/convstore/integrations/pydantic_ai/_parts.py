"""pydantic-ai messages (their JSON dump) → canonical convstore messages.

Works on the ``ModelMessagesTypeAdapter`` JSON of one message, so it follows pydantic-ai's
stored format (a contract the framework keeps across versions) rather than its classes.

Invariants:

- A `ModelResponse` is one ``assistant`` message: text, thinking, tool calls and files map to
  the canonical parts; provider-executed (native) tool parts and anything unknown stay only in
  the native record.
- A `ModelRequest` is a run of messages, one per role in part order: its ``instructions``
  (the agent's ``instructions=``, when they differ from the previous request's) and system
  prompts → ``system``; user prompts, retry feedback and retry prompts without a tool →
  ``user``; tool returns and tool retry prompts → ``tool`` results. A request with no canonical
  part still yields one empty ``user`` message, so every entry has a message to carry its id.
- Bytes are pydantic's JSON bytes (``ser_json_bytes='base64'``): the URL-safe alphabet
  (``-`` and ``_``), which pydantic writes for every `BinaryContent`.
- A thinking part keeps its signature as the canonical artefact of its provider (Anthropic
  signature or redacted data, OpenAI Responses reasoning id and encrypted content, Gemini
  thought signature), so a render for the model that made it replays it.
- Tool returns holding files become `ContentOutput` (files as blobs); ``failed``/``retried``
  returns and tool retry prompts become `ErrorOutput`; any other return is `JsonOutput` of the
  returned JSON.
"""

from __future__ import annotations

import json
from typing import Final

from pydantic import JsonValue

from convstore.errors import ConvstoreError
from convstore.integrations._core.native_blobs import Alphabet, InlineFile, decode_inline
from convstore.integrations._core.role_runs import RoleRuns
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
    Usage,
)

__all__ = ["ALPHABET", "canonical_messages", "rename_calls"]

_URL_KINDS: Final = frozenset({"image-url", "document-url", "audio-url", "video-url"})
_ERROR_OUTCOMES: Final = frozenset({"failed", "retried"})

Node = dict[str, JsonValue]


ALPHABET: Final[Alphabet] = "urlsafe"
"""The base64 alphabet of pydantic's JSON bytes, which `ModelMessagesTypeAdapter` dumps."""


def canonical_messages(
    entry_id: str, message: Node, *, previous_instructions: str | None = None
) -> list[Message]:
    """The canonical messages for one dumped `ModelMessage` (ids and native set by the caller).

    ``previous_instructions``: the instructions of the request before this one; a request
    repeating them adds no system message (pydantic-ai sets them on every request).
    """
    if message.get("kind") == "response":
        return [_response(message)]
    runs = RoleRuns()
    instructions = message.get("instructions")
    if isinstance(instructions, str) and instructions and instructions != previous_instructions:
        runs.add(Role.SYSTEM, [TextPart(text=instructions)])
    for part in _nodes(message.get("parts")):
        mapped = _request_part(part)
        if mapped is not None:
            runs.add(*mapped)
    if not runs:
        runs.add(Role.USER, [])
    return [
        Message(role=role, parts=parts, id=message_id)
        for message_id, role, parts in runs.named(entry_id)
    ]


def rename_calls(messages: list[Message]) -> list[Message]:
    """``messages`` with each call id qualified by its message id.

    Results in the batch point at the renamed calls; results of earlier calls keep their ids.
    """
    renamed: dict[str, str] = {}
    out: list[Message] = []
    for message in messages:
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                new_id = f"{part.id}@{message.id}"[:255]
                renamed[part.id] = new_id
                parts.append(part.model_copy(update={"id": new_id, "provider_id": part.id}))
            elif isinstance(part, ToolResultPart) and part.call_id in renamed:
                parts.append(part.model_copy(update={"call_id": renamed[part.call_id]}))
            else:
                parts.append(part)
        out.append(message.model_copy(update={"parts": parts}))
    return out


def _nodes(value: JsonValue) -> list[Node]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _file(node: Node) -> FilePart | None:
    """A canonical file for a `BinaryContent` or `*Url` node; `None` for anything else."""
    kind = node.get("kind")
    media_type = node.get("media_type")
    declared = media_type if isinstance(media_type, str) else None
    if kind == "binary" and isinstance(data := node.get("data"), str):
        raw = decode_inline(data, ALPHABET)
        return InlineFile(raw, declared).part() if raw is not None else None
    if kind in _URL_KINDS and isinstance(url := node.get("url"), str):
        try:
            return FilePart.from_uri(url, media_type=declared)
        except (ConvstoreError, ValueError):
            return None  # a URL convstore will not hold as a reference stays native-only
    return None


def _content_parts(content: JsonValue) -> list[TextPart | FilePart]:
    """User-prompt or tool-return content as text and file parts, in order."""
    items = content if isinstance(content, list) else [content]
    parts: list[TextPart | FilePart] = []
    for item in items:
        if isinstance(item, str):
            parts.append(TextPart(text=item))
        elif isinstance(item, dict):
            file = _file(item)
            if file is not None:
                parts.append(file)
            elif item.get("kind") == "text-content" and isinstance(item.get("content"), str):
                parts.append(TextPart(text=_text(item["content"])))
            elif item.get("kind") not in ("cache-point", "uploaded-file", *_URL_KINDS, "binary"):
                parts.append(TextPart(text=_text(item)))
        elif item is not None:
            parts.append(TextPart(text=_text(item)))
    return parts


def _request_part(part: Node) -> tuple[Role, list[Part]] | None:
    kind = part.get("part_kind")
    if kind == "system-prompt":
        return Role.SYSTEM, [TextPart(text=_text(part.get("content")))]
    if kind == "user-prompt":
        return Role.USER, list(_content_parts(part.get("content")))
    if kind == "tool-return":
        return Role.TOOL, [_result(part, _return_output(part))]
    if kind == "retry-feedback":
        return Role.USER, [TextPart(text=_retry_text(part))]
    if kind == "retry-prompt":  # deprecated in pydantic-ai 2.x, still read from stored histories
        text = _retry_text(part)
        if isinstance(part.get("tool_name"), str):
            return Role.TOOL, [_result(part, ErrorOutput(message=text))]
        return Role.USER, [TextPart(text=text)]
    return None


def _result(part: Node, output: ToolOutput) -> ToolResultPart:
    call_id = part.get("tool_call_id")
    name = part.get("tool_name")
    return ToolResultPart(
        call_id=call_id if isinstance(call_id, str) and call_id else "unknown",
        name=name if isinstance(name, str) else None,
        output=output,
    )


def _return_output(part: Node) -> ToolOutput:
    content = part.get("content")
    if part.get("outcome") in _ERROR_OUTCOMES:
        return ErrorOutput(message=_text(content) or "tool failed")
    items = content if isinstance(content, list) else [content]
    if any(isinstance(item, dict) and _file(item) is not None for item in items):
        return ContentOutput(parts=_content_parts(content))
    return JsonOutput(value=content)


def _retry_text(part: Node) -> str:
    content = part.get("content")
    return _text(content) if content is not None else "retry"


def _response(message: Node) -> Message:
    provider = message.get("provider_name")
    model = message.get("model_name")
    parts: list[Part] = []
    for part in _nodes(message.get("parts")):
        kind = part.get("part_kind")
        if kind == "text":
            parts.append(TextPart(text=_text(part.get("content"))))
        elif kind == "thinking":
            parts.append(_thinking(part, model))
        elif kind == "tool-call":
            parts.append(_call(part))
        elif kind == "file" and isinstance(content := part.get("content"), dict):
            file = _file(content)
            if file is not None:
                parts.append(file)
    return Message(
        role=Role.ASSISTANT,
        parts=parts,
        provider=_family(provider),
        model=model[:255] if isinstance(model, str) else None,
        usage=_usage(message.get("usage")),
    )


def _family(provider: JsonValue) -> str | None:
    """Convstore's provider family for a pydantic-ai ``provider_name``."""
    if not isinstance(provider, str) or not provider:
        return None
    if provider.startswith("google"):  # google-gla, google-vertex
        return "gemini"
    return provider[:64]


def _thinking(part: Node, model: JsonValue) -> ThinkingPart:
    """A thinking part with its provider's replay artefact where convstore's model has a slot."""
    text = _text(part.get("content") or "")
    signature = part.get("signature")
    signature = signature if isinstance(signature, str) and signature else None
    reasoning_id = part.get("id")
    reasoning_id = reasoning_id if isinstance(reasoning_id, str) and reasoning_id else None
    family = _family(part.get("provider_name"))
    redacted = family == "anthropic" and reasoning_id == "redacted_thinking"
    openai = family == "openai"
    return ThinkingPart(
        text=text,
        provider=family,
        model=model[:255] if isinstance(model, str) and family is not None else None,
        signature=None if redacted or openai else signature,
        redacted_data=signature if redacted else None,
        reasoning_id=reasoning_id if openai else None,
        encrypted_content=signature if openai else None,
    )


def _call(part: Node) -> ToolCallPart:
    args = part.get("args")
    arguments: dict[str, JsonValue] = {}
    raw: str | None = None
    if isinstance(args, dict):
        arguments = args
    elif isinstance(args, str) and args:
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            arguments = parsed
        else:
            raw = args
    call_id = part.get("tool_call_id")
    name = part.get("tool_name")
    return ToolCallPart(
        id=call_id if isinstance(call_id, str) and call_id else "unknown",
        name=name if isinstance(name, str) and name else "unknown",
        arguments=arguments,
        raw_arguments=raw,
    )


def _usage(usage: JsonValue) -> Usage | None:
    if not isinstance(usage, dict):
        return None

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cached_tokens=count("cache_read_tokens"),
        reasoning_tokens=count("output_reasoning_tokens"),
    )
