"""Parsing Anthropic Messages request histories and response bodies into canonical messages.

The wire rules and their sources are stated in `convstore.providers.anthropic` (the encoder).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import JsonValue

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
)
from convstore.providers._parsing import (
    CallIds,
    Json,
    decode_base64,
    inline_file,
    parse_arguments,
    root_object,
)
from convstore.providers._usage import with_usage

__all__ = [
    "OPAQUE_BLOCK_KEY",
    "PROVIDER",
    "TARGET",
    "Block",
    "parse",
    "parse_response",
]

TARGET: Final = "anthropic"
"""Render target and parse source name."""

PROVIDER: Final = "anthropic"
"""Provider family recorded on parsed assistant messages and thinking parts."""

OPAQUE_BLOCK_KEY: Final = "anthropic_block"
"""``TextPart.provider_details`` key holding a content block convstore keeps verbatim."""

_PDF: Final = "application/pdf"
_PLAIN_TEXT: Final = "text/plain"
# The media types an ``image`` block's base64 source accepts (Base64ImageSource.media_type).
_IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_THINKING_BLOCKS: Final = frozenset({"thinking", "redacted_thinking"})

Block = dict[str, Any]
"""One wire content block."""


# --------------------------------------------------------------------------------------------
# parse: wire -> canonical
# --------------------------------------------------------------------------------------------


def parse(payload: Mapping[str, Any]) -> list[Message]:
    """Canonical messages from a Messages request body (``system`` and ``messages``).

    Raises:
        MalformedPayloadError: the payload is not Anthropic Messages JSON.
    """
    root = root_object(payload, TARGET)
    reader = _Reader(root.str_or_none("model"))
    messages: list[Message] = []
    system = root.get("system")
    if system is not None:
        messages.extend(_system_message(system))
    for node in root.require("messages").items():
        messages.extend(reader.message(node))
    return messages


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a response body, with the token usage it reports."""
    return with_usage(_response_message(body), body, TARGET)


def _response_message(body: Mapping[str, Any]) -> Message:
    """The assistant message of a Messages response body (``"type": "message"``).

    Raises:
        MalformedPayloadError: the body is not a Messages response (an error body included).
    """
    root = root_object(body, TARGET)
    kind = root.str_or_none("type")
    if kind is not None and kind != "message":
        raise root.fail(f"expected a message response, got type {kind!r}")
    role = root.str_or_none("role")
    if role is not None and role != "assistant":
        raise root.fail(f"a response message has role 'assistant', got {role!r}")
    model = root.str_or_none("model")
    parts = _Reader(model).assistant_parts(root.require("content"))
    details: dict[str, JsonValue] = {}
    for key, detail in (("id", "response_id"), ("stop_reason", "stop_reason")):
        value = root.str_or_none(key)
        if value is not None:
            details[detail] = value
    return Message(
        role=Role.ASSISTANT,
        parts=[*parts],
        provider=PROVIDER,
        model=model,
        provider_details=details or None,
    )


def _system_message(node: Json) -> list[Message]:
    """A ``system`` value (a string or text blocks) as one system message; none when empty."""
    if isinstance(node.value, str):
        texts = [node.value]
    else:
        texts = []
        for block in node.items():
            kind = _block_type(block)
            if kind != "text":
                raise block.fail(f"a system prompt holds text blocks only, got {kind!r}")
            texts.append(block.require("text").string())
    parts: list[Part] = [TextPart(text=text) for text in texts if text]
    return [Message(role=Role.SYSTEM, parts=parts)] if parts else []


def _block_type(block: Json) -> str:
    block.object()
    return block.require("type").string()


def _blocks(content: Json) -> Iterator[Json]:
    """The content blocks of a ``content`` value; a string is shorthand for one text block."""
    if isinstance(content.value, str):
        yield Json({"type": "text", "text": content.value}, content.source, content.path)
    else:
        yield from content.items()


def _opaque(block: Json) -> TextPart:
    """A block convstore does not model, kept verbatim (see the module docstring)."""
    return TextPart(text="", provider_details={OPAQUE_BLOCK_KEY: block.object()})


def _media(block: Json, kind: Literal["image", "document"]) -> list[TextPart | FilePart]:
    """An ``image`` or ``document`` block as files (and text, for a content-source document)."""
    source = block.require("source")
    source_type = source.require("type").string()
    title = block.str_or_none("title") if kind == "document" else None
    match source_type:
        case "base64":
            data_node = source.require("data")
            data = decode_base64(data_node.string(), data_node)
            return [inline_file(data, source.str_or_none("media_type"), title, data_node)]
        case "url":
            url = source.require("url").string()
            # A document URL source is a PDF by definition (URLPDFSource); an image URL's type is
            # guessed from its name.
            media_type = _PDF if kind == "document" else None
            return [FilePart.from_uri(url, media_type=media_type, filename=title)]
        case "text" if kind == "document":
            text = source.require("data").string()
            declared = source.str_or_none("media_type") or _PLAIN_TEXT
            return [FilePart.from_bytes(text.encode(), media_type=declared, filename=title)]
        case "content" if kind == "document":
            # A custom-content document: its text and images are what the model saw.
            parts: list[TextPart | FilePart] = []
            for inner in _blocks(source.require("content")):
                parts.extend(_result_content_block(inner))
            return parts
        case _:
            # file-id sources (Files API) and source types added later: kept, not rendered.
            return [_opaque(block)]


def _result_content_block(block: Json) -> list[TextPart | FilePart]:
    """One block inside ``tool_result`` content (or a content-source document)."""
    kind = _block_type(block)
    match kind:
        case "text":
            return [TextPart(text=block.require("text").string())]
        case "image" | "document":
            return _media(block, kind)
        case _:
            return [_opaque(block)]


def _tool_output(content: Json | None, is_error: bool) -> ToolOutput:
    """The typed output of a ``tool_result``'s content (absent, a string, or blocks)."""
    if content is None:
        return ErrorOutput(message="") if is_error else JsonOutput(value="")
    if isinstance(content.value, str):
        text = content.value
        return ErrorOutput(message=text) if is_error else JsonOutput(value=text)
    parts: list[TextPart | FilePart] = []
    for block in content.items():
        parts.extend(_result_content_block(block))
    texts = [p.text for p in parts if isinstance(p, TextPart) and _is_plain_text(p)]
    if is_error:
        # An error output is text only: what else the error result carried is named, not kept.
        omitted: list[JsonValue] = [_describe(p) for p in parts if not _is_plain_text(p)]
        return ErrorOutput(
            message="\n".join(texts), details={"omitted": omitted} if omitted else None
        )
    if len(texts) == len(parts):
        return JsonOutput(value="\n".join(texts))
    return ContentOutput(parts=parts)


def _is_plain_text(part: TextPart | FilePart) -> bool:
    return isinstance(part, TextPart) and part.provider_details is None


def _describe(part: TextPart | FilePart) -> str:
    """A file's media type, or a kept block's type."""
    if isinstance(part, FilePart):
        return part.media_type
    block = (part.provider_details or {}).get(OPAQUE_BLOCK_KEY)
    return str(block.get("type")) if isinstance(block, dict) else "block"


@dataclass
class _Reader:
    """Parses the messages of one payload: call ids are canonical across the whole history."""

    model: str | None
    ids: CallIds = field(default_factory=lambda: CallIds(TARGET))

    def message(self, node: Json) -> list[Message]:
        node.object()
        role_node = node.require("role")
        role = role_node.string()
        content = node.require("content")
        match role:
            case "user":
                return self.user_messages(content)
            case "assistant":
                return [
                    Message(
                        role=Role.ASSISTANT,
                        parts=[*self.assistant_parts(content)],
                        provider=PROVIDER,
                        model=self.model,
                    )
                ]
            case "system":
                return _system_message(content)
            case _:
                raise role_node.fail(f"unknown role {role!r}")

    def user_messages(self, content: Json) -> list[Message]:
        """A tool message with the results (if any), then the rest of the user content."""
        results: list[ToolResultPart] = []
        rest: list[TextPart | FilePart] = []
        for block in _blocks(content):
            kind = _block_type(block)
            match kind:
                case "tool_result":
                    results.append(self.tool_result(block))
                case "text":
                    rest.append(TextPart(text=block.require("text").string()))
                case "image" | "document":
                    rest.extend(_media(block, kind))
                case "tool_use" | "thinking" | "redacted_thinking":
                    raise block.fail(f"a {kind} block cannot appear in a user message")
                case _:
                    rest.append(_opaque(block))
        messages: list[Message] = []
        if results:
            messages.append(Message(role=Role.TOOL, parts=[*results]))
        if rest or not results:
            messages.append(Message(role=Role.USER, parts=[*rest]))
        return messages

    def assistant_parts(
        self, content: Json
    ) -> list[TextPart | FilePart | ThinkingPart | ToolCallPart]:
        parts: list[TextPart | FilePart | ThinkingPart | ToolCallPart] = []
        for block in _blocks(content):
            kind = _block_type(block)
            match kind:
                case "text":
                    parts.append(TextPart(text=block.require("text").string()))
                case "thinking":
                    parts.append(
                        ThinkingPart(
                            text=block.require("thinking").string(),
                            signature=block.str_or_none("signature"),
                            provider=PROVIDER,
                            model=self.model,
                        )
                    )
                case "redacted_thinking":
                    parts.append(
                        ThinkingPart(
                            redacted_data=block.require("data").string(),
                            provider=PROVIDER,
                            model=self.model,
                        )
                    )
                case "tool_use":
                    parts.append(self.tool_call(block))
                case "image" | "document":
                    parts.extend(_media(block, kind))
                case "tool_result":
                    raise block.fail("a tool_result block cannot appear in an assistant message")
                case _:
                    parts.append(_opaque(block))
        return parts

    def tool_call(self, block: Json) -> ToolCallPart:
        provider_id = block.require("id").string()
        name = block.require("name").string()
        arguments, raw = parse_arguments(block.get("input"))
        caller = block.get("caller")
        details: dict[str, JsonValue] | None = (
            {"caller": caller.object()} if caller is not None else None
        )
        # An empty id is no id: the same canonical id either way, and none is stored.
        return self.ids.call_part(provider_id or None, name, arguments, raw, details)

    def tool_result(self, block: Json) -> ToolResultPart:
        provider_id = block.require("tool_use_id").string()
        is_error_node = block.get("is_error")
        is_error = is_error_node.boolean() if is_error_node is not None else False
        canonical = self.ids.result(provider_id)
        return ToolResultPart(
            call_id=canonical,
            output=_tool_output(block.get("content"), is_error),
            name=self.ids.name_of(canonical),
        )
