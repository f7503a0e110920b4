"""OpenAI Chat Completions (``/v1/chat/completions``): parse source and render target.

``parse`` reads a request body (or a stored ``{"messages": [...]}`` history), ``parse_response``
a ``chat.completion`` body, ``encode`` renders a `Plan`. The source also reads the Chat
Completions dialects spoken by Mistral and Kimi (and DeepSeek), because applications store
those histories in the same shape.

Parse invariants:

- Every message is kept, in order, whatever the history's validity: calls without results,
  results without calls, repeated results, same-role runs and an assistant-first history all
  parse. Each wire message becomes one canonical message; ``system`` and ``developer``
  messages become ``role="system"``.
- Calls get canonical ids from `CallIds`; the wire id (``call_...``, Mistral's nine
  characters, Kimi's ``functions.{name}:{index}``) is kept as ``provider_id``.
- Reasoning in ``reasoning_content`` (DeepSeek, Kimi; ``reasoning`` as some gateways name
  it) and in Mistral ``thinking`` chunks becomes a `ThinkingPart` whose ``provider`` is the
  family inferred from the payload's model name, so it can be replayed to that provider.
- Inline media (``data:`` URLs, ``input_audio``, ``file.file_data``) become inline
  `FilePart` s; URLs stay references. When the declared media type is contradicted by a
  signature the bytes carry, the bytes win (they are what any provider will see); a declared
  type whose mandatory signature the bytes lack is malformed.
- Tool messages are text on this wire: their content becomes ``JsonOutput(value=<str>)``
  (never guessed to be JSON or an error); a (non-standard) content list holding files becomes
  a `ContentOutput`.
- Empty texts carry nothing and are not kept. Malformed input raises `MalformedPayloadError`
  with its JSON path; nothing else escapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import JsonValue

from convstore.media_types import (
    guess_from_name,
)
from convstore.model import (
    ContentOutput,
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
from convstore.providers._chat import (
    AssistantContent,
    ChatDialect,
    ReasoningField,
    document_filename,
    encode_chat,
    image_url_part,
)
from convstore.providers._openai import AUDIO_FORMATS, FILE_ID_PREFIX
from convstore.providers._parsing import (
    CallIds,
    Json,
    decode_base64,
    inline_file,
    inline_file_data,
    parse_arguments,
    parse_data_url,
    root_object,
)
from convstore.providers._usage import with_usage
from convstore.transcript.plan import Media, Plan

__all__ = ["DIALECT", "SOURCE", "TARGET", "encode", "parse", "parse_response", "provider_family"]

TARGET: Final = "openai-chat"
SOURCE: Final = "openai-chat"

# Which provider family a model name belongs to, first match wins; "openai" otherwise.
_FAMILIES: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (("kimi", "moonshot"), "kimi"),
    (("claude",), "anthropic"),  # a Claude model behind a gateway (LiteLLM)
    (("deepseek",), "deepseek"),
    (("mistral", "magistral", "codestral", "ministral", "pixtral", "devstral"), "mistral"),
)

# The inverse of AUDIO_FORMATS, plus the alias audio/mp3 (normalize_media_type keeps it).
_FORMAT_OF_AUDIO: Final[dict[str, str]] = {media: fmt for fmt, media in AUDIO_FORMATS.items()} | {
    "audio/mp3": "mp3"
}

_FileOrText = TextPart | FilePart


def provider_family(model: str | None) -> str:
    """The provider family (``openai``, ``mistral``, ``kimi``, ``deepseek``) of a model name."""
    name = (model or "").lower()
    for markers, family in _FAMILIES:
        if any(marker in name for marker in markers):
            return family
    return "openai"


# ---------------------------------------------------------------------------------------------
# encode


def _media_part(media: Media) -> dict[str, Any] | None:
    if media.media_type.startswith("image/"):
        return image_url_part(media)
    if media.data is None:
        return None  # files and audio go inline only
    if media.media_type == "application/pdf":
        return {
            "type": "file",
            "file": {"file_data": media.data_url, "filename": document_filename(media)},
        }
    audio_format = _FORMAT_OF_AUDIO.get(media.media_type)
    if audio_format is not None:
        return {
            "type": "input_audio",
            "input_audio": {"data": media.base64, "format": audio_format},
        }
    return None


DIALECT: Final = ChatDialect(
    target=TARGET,
    media_part=_media_part,
    assistant_content=AssistantContent.STRING,
    reasoning=ReasoningField.NONE,
)
"""OpenAI Chat Completions itself: the baseline the other dialects differ from."""


def encode(plan: Plan) -> dict[str, Any]:
    """The ``{"messages": [...]}`` request fragment for OpenAI Chat Completions."""
    return encode_chat(plan, DIALECT)


# ---------------------------------------------------------------------------------------------
# parse


def parse(payload: Mapping[str, Any]) -> list[Message]:
    """Canonical messages from a Chat Completions request body or stored history."""
    root = root_object(payload, SOURCE)
    parser = _Parser(root.str_or_none("model"))
    return [parser.message(node) for node in root.require("messages").items()]


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a response body, with the token usage it reports."""
    return with_usage(_response_message(body), body, SOURCE)


def _response_message(body: Mapping[str, Any]) -> Message:
    """The assistant message of a ``chat.completion`` body (its first choice)."""
    root = root_object(body, SOURCE)
    choices = root.require("choices")
    first = next(choices.items(), None)
    if first is None:
        raise choices.fail("a completion needs at least one choice")
    message = first.require("message")
    role = message.str_or_none("role")
    if role not in (None, "assistant"):
        raise message.fail(f"a completion's message must be the assistant's, got {role!r}")
    details: dict[str, JsonValue] = {}
    for key, node in (
        ("response_id", root.get("id")),
        ("finish_reason", first.get("finish_reason")),
    ):
        if node is not None:
            details[key] = node.string()
    return _Parser(root.str_or_none("model")).assistant(message, details)


class _Parser:
    """Parses the messages of one payload, sharing its model and its call ids."""

    def __init__(self, model: str | None) -> None:
        self._model = model
        self._family = provider_family(model)
        self._ids = CallIds("call")

    def message(self, node: Json) -> Message:
        role_node = node.require("role")
        match role := role_node.string():
            case "system" | "developer":
                details: dict[str, JsonValue] | None = (
                    {"role": role} if role == "developer" else None
                )
                texts = self._texts(node.get("content"))
                return Message(role=Role.SYSTEM, parts=list(texts), provider_details=details)
            case "user":
                return Message(role=Role.USER, parts=list(self._file_or_texts(node.get("content"))))
            case "assistant":
                return self.assistant(node, {})
            case "tool":
                return self._tool(node)
            case "function":
                return self._legacy_function_result(node)
            case _:
                raise role_node.fail(f"unknown role {role!r}")

    # assistant

    def assistant(self, node: Json, details: dict[str, JsonValue]) -> Message:
        parts: list[Part] = []
        blocks = node.get("thinking_blocks")
        reasoning = node.get("reasoning_content", "reasoning")
        if blocks is not None:
            # LiteLLM: the signed blocks; its reasoning_content is their text joined, so it is
            # not read a second time.
            parts.extend(self._thinking_block(block) for block in blocks.items())
        elif reasoning is not None and reasoning.string().strip():
            parts.append(self._thinking(reasoning.string(), "reasoning_content"))
        parts.extend(self._assistant_content(node.get("content")))
        refusal = node.get("refusal")
        if refusal is not None and refusal.string():
            parts.append(TextPart(text=refusal.string(), provider_details={"refusal": True}))
        calls = node.get("tool_calls")
        if calls is not None:
            parts.extend(self._call(call) for call in calls.items())
        legacy = node.get("function_call")
        if legacy is not None:
            parts.append(self._function_call(legacy, None, None))
        details = {**details, **self._assistant_details(node)}
        return Message(
            role=Role.ASSISTANT,
            parts=parts,
            provider=self._family,
            model=self._model,
            provider_details=details or None,
        )

    def _assistant_content(self, node: Json | None) -> list[TextPart | ThinkingPart]:
        if node is None:
            return []
        if isinstance(node.value, str):
            return [TextPart(text=node.value)] if node.value else []
        parts: list[TextPart | ThinkingPart] = []
        for item in node.items():
            match kind := item.require("type").string():
                case "text":
                    text = item.require("text").string()
                    if text:
                        parts.append(TextPart(text=text))
                case "refusal":
                    refusal = item.require("refusal").string()
                    if refusal:
                        parts.append(TextPart(text=refusal, provider_details={"refusal": True}))
                case "thinking":  # Mistral Magistral: a chunk holding text (and reference) chunks
                    text = _thinking_text(item.require("thinking"))
                    if text.strip():
                        parts.append(self._thinking(text, "thinking_chunk", provider="mistral"))
                case _:
                    raise item.fail(f"unsupported assistant content part type {kind!r}")
        return parts

    def _assistant_details(self, node: Json) -> dict[str, JsonValue]:
        details: dict[str, JsonValue] = {}
        if (name := node.str_or_none("name")) is not None:
            details["name"] = name
        if (audio := node.get("audio")) is not None:
            details["audio_id"] = audio.require("id").string()
        if (prefix := node.get("prefix")) is not None and prefix.boolean():
            details["prefix"] = True
        return details

    def _thinking_block(self, block: Json) -> ThinkingPart:
        match kind := block.require("type").string():
            case "thinking":
                signature = block.str_or_none("signature")
                return ThinkingPart(
                    text=block.str_or_none("thinking") or "",
                    signature=signature or None,
                    provider=self._family,
                    model=self._model,
                    provider_details={"carrier": "thinking_blocks"},
                )
            case "redacted_thinking":
                return ThinkingPart(
                    text="",
                    redacted_data=block.require("data").string(),
                    provider=self._family,
                    model=self._model,
                    provider_details={"carrier": "thinking_blocks"},
                )
            case _:
                raise block.fail(f"unsupported thinking block type {kind!r}")

    def _thinking(self, text: str, carrier: str, *, provider: str | None = None) -> ThinkingPart:
        return ThinkingPart(
            text=text,
            provider=provider or self._family,
            model=self._model,
            provider_details={"carrier": carrier},
        )

    def _call(self, node: Json) -> ToolCallPart:
        provider_id = node.str_or_none("id")
        match kind := node.str_or_none("type") or "function":
            case "function":
                return self._function_call(node.require("function"), provider_id, None)
            case "custom":  # free-form input tools: the input is text, kept verbatim
                custom = node.require("custom")
                name = _name(custom)
                text = custom.require("input").string()
                return self._ids.call_part(provider_id, name, {}, text, {"type": "custom"})
            case _:
                raise node.fail(f"unsupported tool call type {kind!r}")

    def _function_call(
        self, function: Json, provider_id: str | None, details: dict[str, JsonValue] | None
    ) -> ToolCallPart:
        name = _name(function)
        arguments, raw_text = parse_arguments(function.get("arguments"))
        return self._ids.call_part(provider_id, name, arguments, raw_text, details)

    # tool results

    def _tool(self, node: Json) -> Message:
        provider_id = node.require("tool_call_id").string()
        name = node.str_or_none("name")
        call_id = self._ids.result(provider_id, name)
        return self._result(call_id, name, node)

    def _legacy_function_result(self, node: Json) -> Message:
        name = _name(node)
        return self._result(self._ids.result(None, name), name, node)

    def _result(self, call_id: str, name: str | None, node: Json) -> Message:
        part = ToolResultPart(
            call_id=call_id,
            output=self._output(node.require("content")),
            name=name or self._ids.name_of(call_id),
        )
        return Message(role=Role.TOOL, parts=[part])

    def _output(self, content: Json) -> ToolOutput:
        if isinstance(content.value, str):
            return JsonOutput(value=content.value)
        parts = list(self._file_or_texts(content))
        if any(isinstance(p, FilePart) for p in parts):
            return ContentOutput(parts=parts)
        return JsonOutput(value="\n".join(p.text for p in parts if isinstance(p, TextPart)))

    # user content

    def _texts(self, node: Json | None) -> list[TextPart]:
        """Text-only content: a string or a list of text parts."""
        parts: list[TextPart] = []
        for part in self._file_or_texts(node):
            if not isinstance(part, TextPart):
                assert node is not None  # no content has no parts
                raise node.fail("only text is allowed in this message's content")
            parts.append(part)
        return parts

    def _file_or_texts(self, node: Json | None) -> list[_FileOrText]:
        if node is None:
            return []
        if isinstance(node.value, str):
            return [TextPart(text=node.value)] if node.value else []
        parts: list[_FileOrText] = []
        for item in node.items():
            part = self._content_part(item)
            if part is not None:
                parts.append(part)
        return parts

    def _content_part(self, item: Json) -> _FileOrText | None:
        match kind := item.require("type").string():
            case "text":
                text = item.require("text").string()
                return TextPart(text=text) if text else None
            case "image_url":
                image = item.require("image_url")
                url = (
                    image.string()
                    if isinstance(image.value, str)
                    else image.require("url").string()
                )
                return _file_from_url(url, image, None)
            case "input_audio":
                audio = item.require("input_audio")
                data = decode_base64(audio.require("data").string(), audio)
                audio_format = audio.require("format").string()
                return inline_file(data, AUDIO_FORMATS.get(audio_format.lower()), None, audio)
            case "file":
                return _file_part(item.require("file"))
            case "document_url":  # Mistral: a URL or data: URL string
                url = item.require("document_url").string()
                return _file_from_url(url, item, item.str_or_none("document_name"))
            case _:
                raise item.fail(f"unsupported content part type {kind!r}")


def _thinking_text(node: Json) -> str:
    """The text of a Mistral thinking chunk's inner chunks (reference chunks carry none)."""
    chunks = [chunk for chunk in node.items() if chunk.require("type").string() == "text"]
    return "".join(chunk.require("text").string() for chunk in chunks)


def _name(node: Json) -> str:
    name_node = node.require("name")
    name = name_node.string()
    if not name:
        raise name_node.fail("a tool name cannot be empty")
    return name


def _file_part(node: Json) -> FilePart:
    """OpenAI's ``file`` part: inline ``file_data`` or an uploaded ``file_id``."""
    filename = node.str_or_none("filename")
    data = node.get("file_data")
    if data is not None:
        return inline_file_data(data, filename)
    file_id = node.require("file_data", "file_id").string()
    # An uploaded file lives at OpenAI; keep the reference as the openai-responses source does.
    return FilePart.from_uri(
        FILE_ID_PREFIX + file_id, media_type=_guess(filename), filename=filename
    )


def _file_from_url(url: str, node: Json, filename: str | None) -> FilePart:
    decoded = parse_data_url(url, node)
    if decoded is None:
        return FilePart.from_uri(url, media_type=_guess(filename), filename=filename)
    declared, data = decoded
    return inline_file(data, declared, filename, node)


def _guess(filename: str | None) -> str | None:
    return guess_from_name(filename) if filename else None
