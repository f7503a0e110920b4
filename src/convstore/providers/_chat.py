"""Chat Completions encoding shared by its dialects: ``openai-chat``, ``mistral`` and ``kimi``.

A `Plan` becomes ``{"messages": [...]}``. The three targets speak one wire format and differ in
a handful of places; each difference is a field of `ChatDialect` (data, or a small hook for
media), so the target modules only declare their dialect and call `encode_chat`.

Invariants:

- Messages come out in plan order: system prompts first (one message per prompt, so prompts
  keep their boundaries), then one message per user and assistant turn, then one ``tool``
  message per result straight after the assistant message that made the calls.
- Tool messages carry a string: Chat Completions tool content is text, and the planner has
  already replaced media in results with text references and moved the media to the
  injected user message after the step's tool messages.
- Ids and names are sent exactly as the plan projected them (``wire_id``/``wire_name``).
- No message is ever empty: an assistant turn left with nothing a dialect can carry is
  omitted, and media a dialect cannot carry becomes a bracketed text note. Every such
  decision, and every dialect rule that inserts or flags a message, is recorded in the plan's
  diagnostics.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, assert_never

from convstore.providers._encoding import (
    arguments_text,
    note_media_as_text,
    note_reasoning_dropped,
    result_text,
)
from convstore.providers._wire_tools import chat_tools
from convstore.transcript.plan import (
    AssistantTurn,
    Call,
    Media,
    Plan,
    Reasoning,
    Result,
    Text,
    ToolTurn,
    UserTurn,
)

__all__ = [
    "AssistantContent",
    "ChatDialect",
    "MediaHook",
    "ReasoningField",
    "WireMessage",
    "document_filename",
    "encode_chat",
    "image_url_part",
]

WireMessage = dict[str, Any]
"""One Chat Completions message as JSON."""

MediaHook = Callable[[Media], dict[str, Any] | None]
"""Maps a file to the user-message content part a dialect sends, or ``None`` when it cannot."""


class AssistantContent(StrEnum):
    """How a dialect shapes an assistant message's ``content``."""

    STRING = "string"
    """A string (a list of text parts when the turn has several texts); ``null`` when the
    message only carries tool calls (OpenAI, Kimi)."""
    CHUNKS = "chunks"
    """Always a list of chunks, ``[]`` when the message only carries tool calls (Mistral)."""


class ReasoningField(StrEnum):
    """Where a dialect carries reasoning replayed to the provider that produced it."""

    NONE = "none"
    """Nowhere: Chat Completions has no input field for it (OpenAI); it is dropped."""
    THINKING_CHUNK = "thinking_chunk"
    """A ``{"type": "thinking"}`` chunk inside ``content`` (Mistral Magistral)."""
    REASONING_CONTENT = "reasoning_content"
    """The ``reasoning_content`` message field (Kimi, like DeepSeek)."""
    THINKING_BLOCKS = "thinking_blocks"
    """LiteLLM's ``thinking_blocks`` message field: Anthropic thinking blocks with their
    signatures (and redacted blocks), for a Claude model behind a Chat Completions gateway. A
    capabilities row selects it (``Capabilities.chat_reasoning``), not a dialect."""


@dataclass(frozen=True, slots=True)
class ChatDialect:
    """Everything in which one Chat Completions dialect differs from the others."""

    target: str
    """Render target name, used in diagnostics."""
    media_part: MediaHook
    """User-message content part for a file."""
    assistant_content: AssistantContent
    """Shape of assistant ``content``."""
    reasoning: ReasoningField
    """Where replayed reasoning goes."""
    tool_message_name: bool = False
    """Whether tool messages carry the tool ``name`` (documented by Mistral and Kimi)."""
    tool_call_index: bool = False
    """Whether each tool call carries its ``index`` within the message (Mistral)."""
    prefix_flag: bool = False
    """Whether assistant messages carry Mistral's ``prefix`` flag: ``false`` everywhere except
    on a trailing assistant message, which Mistral only serves as a prefix."""
    bridge_after_tool: str | None = None
    """Text of an assistant message inserted between a tool message and a user message, for
    dialects that refuse a user message right after a tool message (Mistral)."""
    call_reasoning_placeholder: str | None = None
    """``reasoning_content`` sent on an assistant message with tool calls that has no
    reasoning of its own, for dialects whose thinking models require the field there (Kimi)."""


def encode_chat(plan: Plan, dialect: ChatDialect) -> dict[str, Any]:
    """The ``{"messages": [...]}`` request fragment for ``plan`` in ``dialect``.

    ``tools`` is added when the plan has tool definitions.
    """
    payload: dict[str, Any] = {"messages": _ChatEncoder(plan, dialect).messages()}
    if plan.tools:
        payload["tools"] = chat_tools(plan)
    return payload


def image_url_part(media: Media) -> dict[str, Any]:
    """An ``image_url`` part: a ``data:`` URL of the bytes, or the external URL."""
    return {"type": "image_url", "image_url": {"url": media.data_url}}


_NOT_FILENAME: Final = re.compile(r"[^A-Za-z0-9._-]+")


def document_filename(media: Media) -> str:
    """The file's name, or one made from its label and media type when it has none.

    OpenAI refuses an inline ``file`` part without a ``filename``, so one is always sent.
    """
    if media.filename:
        return media.filename
    stem = _NOT_FILENAME.sub("-", media.label).strip("-") or "document"
    return stem + (mimetypes.guess_extension(media.media_type) or "")


class _ChatEncoder:
    """One plan's encoding; records its own decisions in the plan's diagnostics."""

    def __init__(self, plan: Plan, dialect: ChatDialect) -> None:
        self._plan = plan
        self._dialect = dialect
        chosen = plan.capabilities.chat_reasoning
        self._reasoning_field = ReasoningField(chosen) if chosen else dialect.reasoning

    def messages(self) -> list[WireMessage]:
        out: list[WireMessage] = [{"role": "system", "content": text} for text in self._plan.system]
        for turn in self._plan.turns:
            match turn:
                case UserTurn():
                    out.append(self._user(turn))
                case AssistantTurn():
                    message = self._assistant(turn)
                    if message is not None:
                        out.append(message)
                case ToolTurn():
                    out.extend(self._tool(result) for result in turn.results)
                case _:
                    assert_never(turn)
        if self._dialect.bridge_after_tool is not None:
            out = self._bridge_tool_to_user(out, self._dialect.bridge_after_tool)
        if self._dialect.prefix_flag:
            self._flag_trailing_prefix(out)
        return out

    # users

    def _user(self, turn: UserTurn) -> WireMessage:
        match turn.parts:
            case [Text(text=text)]:
                # A lone text goes as a plain string, as every corpus request sends it.
                return {"role": "user", "content": text}
        content: list[dict[str, Any]] = []
        for part in turn.parts:
            match part:
                case Text(text=text):
                    content.append(_text_part(text))
                case Media():
                    content.append(self._user_media(part))
                case _:
                    assert_never(part)
        return {"role": "user", "content": content}

    def _user_media(self, media: Media) -> dict[str, Any]:
        mapped = self._dialect.media_part(media)
        if mapped is not None:
            return mapped
        return _text_part(self._media_note(media, "user messages cannot carry it"))

    # assistants

    def _assistant(self, turn: AssistantTurn) -> WireMessage | None:
        texts: list[str] = []
        chunks: list[dict[str, Any]] = []  # CHUNKS dialects: texts and thinking, in order
        reasoning: list[str] = []  # REASONING_CONTENT dialects
        blocks: list[dict[str, Any]] = []  # THINKING_BLOCKS rows
        calls: list[Call] = []
        for part in turn.parts:
            match part:
                case Text(text=text):
                    texts.append(text)
                    chunks.append(_text_part(text))
                case Media():
                    note = self._media_note(part, "assistant messages cannot carry files")
                    texts.append(note)
                    chunks.append(_text_part(note))
                case Reasoning():
                    self._reasoning(part, chunks, reasoning, blocks)
                case Call():
                    calls.append(part)
                case _:
                    assert_never(part)
        content = self._assistant_content(texts, chunks)
        if not content and not calls:
            # Reasoning alone is no message: providers refuse an empty assistant message.
            self._note("omitted an assistant turn that had nothing this target can carry")
            return None
        message: WireMessage = {"role": "assistant", "content": content}
        if self._dialect.prefix_flag:
            message["prefix"] = False
        if calls:
            message["tool_calls"] = [self._call(call, index) for index, call in enumerate(calls)]
        self._set_reasoning_content(message, reasoning)
        if blocks:
            message["thinking_blocks"] = blocks
        return message

    def _assistant_content(
        self, texts: list[str], chunks: list[dict[str, Any]]
    ) -> str | list[dict[str, Any]] | None:
        match self._dialect.assistant_content:
            case AssistantContent.STRING:
                if not texts:
                    return None
                if len(texts) == 1:
                    return texts[0]
                return [_text_part(text) for text in texts]  # keeps the texts' boundaries
            case AssistantContent.CHUNKS:
                return chunks  # [] beside tool calls
            case _:
                assert_never(self._dialect.assistant_content)

    def _reasoning(
        self,
        part: Reasoning,
        chunks: list[dict[str, Any]],
        reasoning: list[str],
        blocks: list[dict[str, Any]],
    ) -> None:
        thinking = part.part
        if self._reasoning_field is ReasoningField.THINKING_BLOCKS:
            if thinking.redacted_data:
                blocks.append({"type": "redacted_thinking", "data": thinking.redacted_data})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": thinking.text,
                        "signature": thinking.signature or "",
                    }
                )
            return
        if not thinking.text:
            self._reasoning_dropped(part, "no readable text, and this target takes no artefacts")
            return
        match self._reasoning_field:
            case ReasoningField.NONE:
                self._reasoning_dropped(part, "Chat Completions has no reasoning input")
            case ReasoningField.THINKING_CHUNK:
                chunks.append(
                    {"type": "thinking", "thinking": [{"type": "text", "text": thinking.text}]}
                )
            case ReasoningField.REASONING_CONTENT:
                reasoning.append(thinking.text)
            case ReasoningField.THINKING_BLOCKS:
                raise AssertionError("handled above")
            case _:
                assert_never(self._reasoning_field)

    def _set_reasoning_content(self, message: WireMessage, reasoning: list[str]) -> None:
        if self._reasoning_field is not ReasoningField.REASONING_CONTENT:
            return
        if reasoning:
            message["reasoning_content"] = "\n".join(reasoning)
        elif "tool_calls" in message and self._dialect.call_reasoning_placeholder is not None:
            message["reasoning_content"] = self._dialect.call_reasoning_placeholder
            ids = ", ".join(call["id"] for call in message["tool_calls"])
            self._note(
                f"sent a placeholder reasoning_content with calls {ids}: they had no reasoning "
                "from this provider, and its thinking models require the field there"
            )

    def _call(self, call: Call, index: int) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "id": call.wire_id,
            "type": "function",
            "function": {"name": call.wire_name, "arguments": arguments_text(call)},
        }
        if self._dialect.tool_call_index:
            wire["index"] = index
        return wire

    # tools

    def _tool(self, result: Result) -> WireMessage:
        message: WireMessage = {
            "role": "tool",
            "tool_call_id": result.call.wire_id,
            "content": result_text(result.body),
        }
        if self._dialect.tool_message_name:
            message["name"] = result.call.wire_name
        return message

    # dialect rules over the whole message list

    def _bridge_tool_to_user(self, messages: list[WireMessage], text: str) -> list[WireMessage]:
        bridged: list[WireMessage] = []
        for index, message in enumerate(messages):
            bridged.append(message)
            following = messages[index + 1] if index + 1 < len(messages) else None
            if message["role"] == "tool" and following is not None and following["role"] == "user":
                bridge: WireMessage = {"role": "assistant", "content": [_text_part(text)]}
                if self._dialect.prefix_flag:
                    bridge["prefix"] = False
                bridged.append(bridge)
                self._note(
                    f"inserted an assistant message {text!r} after the tool message for "
                    f"{message['tool_call_id']} (a user message may not follow a tool message)"
                )
        return bridged

    def _flag_trailing_prefix(self, messages: list[WireMessage]) -> None:
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and "tool_calls" not in last:
            last["prefix"] = True
            self._note(
                "marked the trailing assistant message prefix=true (this target only serves a "
                "request ending with an assistant message as a prefix to continue)"
            )

    # diagnostics

    def _note(self, text: str) -> None:
        self._plan.diagnostics.notes.append(f"{self._dialect.target}: {text}")

    def _media_note(self, media: Media, why: str) -> str:
        note_media_as_text(self._plan.diagnostics, media, f"{self._dialect.target}: {why}")
        return f"[{media.label or 'file'} ({media.media_type}) omitted: {why}]"

    def _reasoning_dropped(self, part: Reasoning, reason: str) -> None:
        note_reasoning_dropped(
            self._plan.diagnostics, part.part, f"{self._dialect.target}: {reason}"
        )


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}
