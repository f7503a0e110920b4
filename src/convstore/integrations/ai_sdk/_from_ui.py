"""AI SDK ``UIMessage`` dicts to canonical messages: `from_ui_messages`.

The inbound half of `convstore.integrations.ai_sdk` (its docstring states the invariants):
untrusted JSON read through `Json`, so anything that is not UIMessage JSON fails with its path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

from convstore.integrations.ai_sdk._keys import (
    ADAPTER_KEY,
    KINDS_KEY,
    OWN_KEY,
    JsonDict,
    ResolveUrl,
)
from convstore.json_input import Json, decode_base64, inline_file, parse_data_url
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

__all__ = ["from_ui_messages"]

_SOURCE: Final = "ai-sdk-ui"
_DENIED: Final = "Tool call execution denied."
_ANSWERED: Final = frozenset({"output-available", "output-error", "output-denied"})


def from_ui_messages(
    ui: Sequence[Mapping[str, Any]], *, resolve_url: ResolveUrl | None = None
) -> list[Message]:
    """Canonical messages from AI SDK ``UIMessage`` dicts, ready for ``store.append``.

    An assistant UI message becomes one assistant message per step, each followed by a tool
    message holding the results its tool parts carry. UI-only parts (``data-*``, sources,
    ``custom``, steering) have no canonical form and are not kept.

    Args:
        ui: the UI messages, as ``useChat`` sends or persists them.
        resolve_url: maps the application's own file URLs (those ``file_url`` produced) back to
            stored `FilePart` objects; other URLs stay ``FilePart(uri=...)`` and ``data:``
            URLs become inline bytes.

    Raises:
        MalformedPayloadError: anything that is not UIMessage JSON, with its path.
    """
    # Untrusted JSON: the annotation is what callers should pass, not what they may.
    given: Any = ui
    root = Json(list(given) if isinstance(given, list | tuple) else given, _SOURCE)
    reader = _Reader(resolve_url)
    out: list[Message] = []
    for node in root.items():
        out.extend(reader.message(node))
    return out


@dataclass
class _Reader:
    resolve_url: ResolveUrl | None

    def message(self, node: Json) -> list[Message]:
        node.object()
        ui_id = node.require("id").string()
        role = node.require("role").string()
        parts = list(node.require("parts").items())
        if role == "system":
            texts = [TextPart(text=p.require("text").string()) for p in parts if _type(p) == "text"]
            return [Message(role=Role.SYSTEM, id=ui_id, parts=list(texts))]
        if role == "user":
            content = [c for p in parts if (c := self.content(p)) is not None]
            return [Message(role=Role.USER, id=ui_id, parts=list(content))]
        if role == "assistant":
            return self.assistant(ui_id, parts, _result_kinds(node))
        raise node.require("role").fail(f"unknown role {role!r}")

    def content(self, node: Json) -> TextPart | FilePart | None:
        kind = _type(node)
        if kind == "text":
            details = _own(node, "providerMetadata").get("providerDetails")
            return TextPart(text=node.require("text").string(), provider_details=details)
        if kind == "file":
            return self.file(
                node.require("url"),
                node.str_or_none("mediaType"),
                node.str_or_none("filename"),
            )
        return None

    def file(self, url_node: Json, media_type: str | None, filename: str | None) -> FilePart:
        url = url_node.string()
        inline = parse_data_url(url, url_node)
        if inline is not None:
            declared, data = inline
            return inline_file(data, declared or media_type, filename, url_node)
        if self.resolve_url is not None:
            resolved = self.resolve_url(url)
            if resolved is not None:
                return resolved
        return FilePart.from_uri(url, media_type=media_type, filename=filename)

    def assistant(self, ui_id: str, parts: list[Json], kinds: Mapping[str, Any]) -> list[Message]:
        out: list[Message] = []
        step: list[Part] = []
        results: list[ToolResultPart] = []

        def flush() -> None:
            if step:
                out.append(Message(role=Role.ASSISTANT, parts=list(step)))
            if results:
                out.append(Message(role=Role.TOOL, parts=list(results)))
            step.clear()
            results.clear()

        for node in parts:
            kind = _type(node)
            if kind == "step-start":
                flush()
            elif kind in ("text", "file"):
                part = self.content(node)
                if part is not None and not (isinstance(part, TextPart) and not part.text):
                    step.append(part)
            elif kind == "reasoning":
                step.append(_thinking(node))
            elif kind.startswith("tool-") or kind == "dynamic-tool":
                call = _tool_call(node, kind)
                step.append(call)
                result = self.result(node, call, kinds.get(call.id))
                if result is not None:
                    results.append(result)
        flush()
        if not out:  # an empty turn is still a turn: keep it, and its id
            out.append(Message(role=Role.ASSISTANT))
        return [
            message.model_copy(update={"id": ui_id if n == 0 else f"{ui_id}-{n}"})
            for n, message in enumerate(out)
        ]

    def result(self, node: Json, call: ToolCallPart, kind: Any) -> ToolResultPart | None:
        state = node.require("state").string()
        if state not in _ANSWERED:
            return None
        output: ToolOutput
        if state == "output-error":
            output = ErrorOutput(message=node.require("errorText").string())
        elif state == "output-denied":
            approval = node.get("approval")
            reason = approval.str_or_none("reason") if approval is not None else None
            output = ErrorOutput(message=reason or _DENIED)
        elif kind == "content":
            output = self.content_output(node.require("output"))
        else:
            value: JsonValue = node.object().get("output")
            output = JsonOutput(value=value)
        return ToolResultPart(call_id=call.id, output=output, name=call.name)

    def content_output(self, node: Json) -> ContentOutput:
        if isinstance(node.value, dict) and node.value.get("type") == "content":
            node = node.require("value")  # the AI SDK's own ToolResultOutput shape
        parts: list[TextPart | FilePart] = []
        for item in node.items():
            kind = _type(item)
            if kind == "text":
                parts.append(TextPart(text=item.require("text").string()))
            elif kind in ("file", "image-url", "file-url"):
                parts.append(
                    self.file(
                        item.require("url"),
                        item.str_or_none("mediaType"),
                        item.str_or_none("filename"),
                    )
                )
            elif kind in ("media", "image-data", "file-data"):
                data = decode_base64(item.require("data").string(), item)
                declared = item.str_or_none("mediaType")
                parts.append(inline_file(data, declared, item.str_or_none("filename"), item))
            else:
                raise item.fail(f"a content tool result cannot hold a {kind!r} part")
        return ContentOutput(parts=parts)


def _type(node: Json) -> str:
    return node.require("type").string()


def _own(node: Json, key: str) -> JsonDict:
    metadata = node.get(key)
    if metadata is None:
        return {}
    own = metadata.get(OWN_KEY)
    return own.object() if own is not None else {}


def _result_kinds(node: Json) -> Mapping[str, Any]:
    metadata = node.object().get("metadata")
    if not isinstance(metadata, dict):
        return {}
    adapter = metadata.get(ADAPTER_KEY)
    kinds = adapter.get(KINDS_KEY) if isinstance(adapter, dict) else None
    return kinds if isinstance(kinds, dict) else {}


def _tool_call(node: Json, kind: str) -> ToolCallPart:
    name = node.require("toolName").string() if kind == "dynamic-tool" else kind[len("tool-") :]
    own = _own(node, "callProviderMetadata")
    raw = node.object().get("input")
    if raw is None:
        raw = node.object().get("rawInput")
    arguments: JsonDict = raw if isinstance(raw, dict) else {}
    raw_arguments = own.get("rawArguments")
    if raw_arguments is None and raw is not None and not isinstance(raw, dict):
        raw_arguments = raw if isinstance(raw, str) else _json_text(raw)
    return ToolCallPart(
        id=node.require("toolCallId").string(),
        name=name,
        arguments=arguments,
        raw_arguments=raw_arguments,
        provider_id=own.get("providerId"),
        provider_details=own.get("providerDetails"),
    )


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _thinking(node: Json) -> ThinkingPart:
    metadata = node.get("providerMetadata")
    namespaces: JsonDict = metadata.object() if metadata is not None else {}
    anthropic = namespaces.get("anthropic") or {}
    google = namespaces.get("google") or namespaces.get("vertex") or {}
    openai = namespaces.get("openai") or {}
    own = namespaces.get(OWN_KEY) or {}
    provider = own.get("provider")
    if provider is None:
        provider = (
            "anthropic" if anthropic else "gemini" if google else "openai" if openai else None
        )
    others = {k: v for k, v in namespaces.items() if k not in _KNOWN_NAMESPACES}
    details = own.get("providerDetails")
    if others:
        details = {**(details or {}), "providerMetadata": others}
    return ThinkingPart(
        text=node.require("text").string() if node.has("text") else "",
        provider=provider,
        model=own.get("model"),
        signature=anthropic.get("signature") or google.get("thoughtSignature"),
        redacted_data=anthropic.get("redactedData"),
        reasoning_id=openai.get("itemId"),
        encrypted_content=openai.get("reasoningEncryptedContent"),
        summary=own.get("summary"),
        rides_on=own.get("ridesOn"),
        provider_details=details,
    )


_KNOWN_NAMESPACES: Final = frozenset({"anthropic", "google", "vertex", "openai", OWN_KEY})
