"""Anthropic Messages API: `parse` (wire -> canonical) and `encode` (plan -> wire).

The wire format is the JSON body of ``POST /v1/messages`` (``messages`` plus an optional
``system``) and the ``message`` object it answers with. Sources for every rule are in
``docs/providers/anthropic.md``.

Invariants of `parse` / `parse_response`:

- Every history a client could have stored is accepted, invalid ones included (orphan calls and
  results, repeated results, consecutive same-role messages, an assistant first); only data that
  is not Anthropic JSON at all (wrong types, unknown roles, missing required keys, bad base64)
  raises `MalformedPayloadError`.
- ``tool_result`` blocks of a user message become one ``tool`` message placed *before* the rest
  of that user message's content, which stays a ``user`` message.
- Opaque artefacts survive: thinking signatures, redacted thinking data, ``tool_use`` ids
  (``ToolCallPart.provider_id``) and ``caller``. Content blocks convstore does not model (server
  tool blocks such as ``server_tool_use`` / ``web_search_tool_result``, ``search_result``,
  ``container_upload``, file-id sources, and any block type Anthropic adds later) are kept
  verbatim as an empty `TextPart` whose ``provider_details["anthropic_block"]`` holds the block:
  stored, never lost, never rendered.
- ``cache_control`` and ``citations`` keys are ignored. Base64 media become inline `FilePart`s;
  when the bytes contradict the declared media type, the bytes win (Anthropic itself refuses the
  mismatch, so the declaration was the error).

Invariants of `encode`:

- Roles alternate: consecutive user turns (a tool turn and the user turns after it included) are
  one ``user`` message whose content starts with every ``tool_result`` in call order;
  consecutive assistant turns are one ``assistant`` message.
- In an assistant message that carries thinking, its one run of thinking blocks comes first,
  in the order the model produced it (content that came before the run moves after it, noted);
  the planner replays a signed block once and never after content that followed the run
  (``Capabilities.reasoning_leads_message``). An assistant turn made only of thinking is left
  out (Anthropic rejects a thinking block as the last block).
- No empty text block and no empty ``tool_result`` content is ever emitted; text-only results
  are a string, results with media a list of ``text``/``image``/``document`` blocks.
- Every change the encoder makes to what the planner handed it is written to the diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, assert_never

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
from convstore.providers._encoding import result_text
from convstore.providers._parsing import (
    CallIds,
    Json,
    decode_base64,
    inline_file,
    parse_arguments,
    root_object,
)
from convstore.transcript.diagnostics import Diagnostics, MediaNote, ReasoningNote
from convstore.transcript.plan import (
    AssistantTurn,
    Call,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    Plan,
    Reasoning,
    Result,
    ResultBody,
    Text,
    ToolTurn,
    UserTurn,
)

__all__ = ["OPAQUE_BLOCK_KEY", "TARGET", "encode", "parse", "parse_response"]

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
        canonical = self.ids.call(provider_id, name)
        caller = block.get("caller")
        return ToolCallPart(
            id=canonical,
            name=name,
            arguments=arguments,
            raw_arguments=raw,
            provider_id=provider_id or None,
            provider_details={"caller": caller.object()} if caller is not None else None,
        )

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


# --------------------------------------------------------------------------------------------
# encode: plan -> wire
# --------------------------------------------------------------------------------------------


def encode(plan: Plan) -> dict[str, Any]:
    """The ``messages`` (and ``system``) of a Messages request for ``plan``."""
    payload: dict[str, Any] = {"messages": _Encoder(plan).messages()}
    system = [text for text in plan.system if text]
    if len(system) == 1:
        payload["system"] = system[0]
    elif system:
        # Several prompts stay separate text blocks rather than being joined into one string.
        payload["system"] = [_text_block(text) for text in system]
    return payload


def _text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def _is_thinking(block: Block) -> bool:
    return block["type"] in _THINKING_BLOCKS


@dataclass
class _Entry:
    """One turn's content before turns of the same role are joined into one message."""

    role: Literal["user", "assistant"]
    blocks: list[Block]
    from_tool_turn: bool = False


class _Encoder:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.diagnostics: Diagnostics = plan.diagnostics

    def note(self, text: str) -> None:
        self.diagnostics.notes.append(f"{TARGET}: {text}")

    def messages(self) -> list[Block]:
        entries = [entry for entry in self.entries() if entry.blocks]
        messages = self.join(entries)
        for message in messages:
            if message["role"] == "assistant":
                message["content"] = self.thinking_first(message["content"])
        self.check_open_tool_loop(messages)
        return messages

    def entries(self) -> Iterator[_Entry]:
        for index, turn in enumerate(self.plan.turns):
            match turn:
                case UserTurn(parts=parts):
                    yield _Entry("user", [self.user_block(p) for p in parts])
                case AssistantTurn():
                    yield self.assistant_entry(turn, index)
                case ToolTurn(results=results):
                    yield _Entry("user", [self.tool_result(r) for r in results], True)
                case _:
                    assert_never(turn)

    def join(self, entries: list[_Entry]) -> list[Block]:
        """One message per run of same-role entries (Anthropic would merge them anyway)."""
        messages: list[Block] = []
        previous: _Entry | None = None
        for entry in entries:
            if previous is not None and previous.role == entry.role:
                messages[-1]["content"].extend(entry.blocks)
                if not previous.from_tool_turn:
                    self.note(f"consecutive {entry.role} turns were sent as one message")
            else:
                messages.append({"role": entry.role, "content": list(entry.blocks)})
            previous = entry
        return messages

    # -- assistant ----------------------------------------------------------------------------

    def assistant_entry(self, turn: AssistantTurn, index: int) -> _Entry:
        blocks: list[Block] = []
        for part in turn.parts:
            match part:
                case Text(text=text):
                    if text:
                        blocks.append(_text_block(text))
                case Media():
                    # The planner turns assistant files into text for Anthropic (its table row
                    # takes none); this only guards the wire rule.
                    blocks.append(self.media_note(part, "assistant message", None))
                case Reasoning(part=thinking):
                    block = self.thinking_block(thinking)
                    if block is not None:
                        blocks.append(block)
                case Call():
                    blocks.append(self.tool_use(part))
                case _:
                    assert_never(part)
        if blocks and all(_is_thinking(b) for b in blocks):
            # Anthropic rejects an assistant message whose last block is thinking; reasoning
            # alone, with nothing it led to, carries nothing the model needs back.
            self.note(f"assistant turn {index} holds only thinking and was left out")
            return _Entry("assistant", [])
        return _Entry("assistant", blocks)

    def thinking_block(self, part: ThinkingPart) -> Block | None:
        if part.redacted_data:
            return {"type": "redacted_thinking", "data": part.redacted_data}
        if part.signature:
            return {"type": "thinking", "thinking": part.text, "signature": part.signature}
        self.diagnostics.reasoning.append(
            ReasoningNote(
                None, part.provider, part.model, "dropped", "a thinking block needs a signature"
            )
        )
        return None

    def tool_use(self, call: Call) -> Block:
        if call.raw_arguments is not None and not call.arguments:
            self.note(
                f"call {call.call_id!r} had arguments that are not a JSON object; "
                "its input was sent as {}"
            )
        return {
            "type": "tool_use",
            "id": call.wire_id,
            "name": call.wire_name,
            "input": call.arguments,
        }

    def thinking_first(self, blocks: list[Block]) -> list[Block]:
        """The message's one run of thinking blocks first, in its own order (stable otherwise).

        Content before the run (a text-only turn the plan merged with a thinking turn) moves
        after it, which leaves the thinking sequence as the model produced it. A thinking block
        after content that followed the run cannot stand anywhere valid: the planner already
        applied the reasoning policy to such reasoning (``reasoning_leads_message``), so one
        reaching this point (a hand-built plan, turns joined here) is dropped and recorded.
        """
        first = next((i for i, b in enumerate(blocks) if _is_thinking(b)), None)
        if first is None:
            return blocks
        end = first
        while end < len(blocks) and _is_thinking(blocks[end]):
            end += 1
        before, run, after = blocks[:first], blocks[first:end], blocks[end:]
        stray = sum(1 for b in after if _is_thinking(b))
        if stray:
            after = [b for b in after if not _is_thinking(b)]
            self.diagnostics.reasoning.extend(
                ReasoningNote(
                    None,
                    PROVIDER,
                    None,
                    "dropped",
                    f"{TARGET} encoder: a thinking block after other content of its assistant "
                    "message cannot be replayed",
                )
                for _ in range(stray)
            )
        if before:
            self.note("thinking blocks were moved to the start of an assistant message")
        return run + before + after

    def check_open_tool_loop(self, messages: list[Block]) -> None:
        """Warn when the request ends in a tool loop whose call turn has no leading thinking.

        With ``thinking`` enabled, Anthropic requires the final assistant message (the one whose
        ``tool_use`` blocks the last user message answers) to start with a thinking block. The
        request's thinking setting is not part of the history, and a signature cannot be made
        up, so this is recorded for the caller, who must then send the request without thinking.
        """
        if len(messages) < 2:
            return
        last, before = messages[-1], messages[-2]
        answers_tools = last["role"] == "user" and last["content"][0]["type"] == "tool_result"
        if (
            answers_tools
            and before["role"] == "assistant"
            and not _is_thinking(before["content"][0])
        ):
            self.note(
                "if this request enables thinking, Anthropic rejects it: the assistant message "
                "whose tool calls the last user message answers does not start with a thinking "
                "block (send it with thinking disabled)"
            )

    # -- user and tool results ----------------------------------------------------------------

    def user_block(self, part: Text | Media) -> Block:
        match part:
            case Text(text=text):
                return _text_block(text)
            case Media():
                return self.media_block(part) or self.media_note(part, "user message", None)
            case _:
                assert_never(part)

    def tool_result(self, result: Result) -> Block:
        block: Block = {"type": "tool_result", "tool_use_id": result.call.wire_id}
        content = self.result_content(result)
        if content:
            block["content"] = content
        block["is_error"] = result.is_error
        return block

    def result_content(self, result: Result) -> str | list[Block]:
        """A string for text-only results; text, image and document blocks otherwise."""
        body: ResultBody = result.body
        match body:
            case ContentBody(parts=parts) if any(isinstance(p, Media) for p in parts):
                blocks: list[Block] = []
                for part in parts:
                    if isinstance(part, Text):
                        if part.text:
                            blocks.append(_text_block(part.text))
                    else:
                        block = self.media_block(part)
                        blocks.append(
                            block or self.media_note(part, "tool result", result.call.call_id)
                        )
                return blocks
            case JsonBody() | ErrorBody() | ContentBody():
                return result_text(body)
            case _:
                assert_never(body)

    # -- media --------------------------------------------------------------------------------

    def media_block(self, media: Media) -> Block | None:
        """An ``image`` or ``document`` block, or ``None`` when no Anthropic block takes it."""
        source: Block
        if media.media_type in _IMAGE_TYPES:
            source = self.binary_source(media)
            return {"type": "image", "source": source}
        if media.media_type == _PDF:
            source = self.binary_source(media)
        elif media.media_type == _PLAIN_TEXT and media.data is not None:
            source = {"type": "text", "media_type": _PLAIN_TEXT, "data": self.decoded(media)}
        else:
            return None
        document: Block = {"type": "document", "source": source}
        if media.filename:
            document["title"] = media.filename
        return document

    @staticmethod
    def binary_source(media: Media) -> Block:
        if media.uri is not None:
            return {"type": "url", "url": media.uri}
        return {"type": "base64", "media_type": media.media_type, "data": media.base64}

    def decoded(self, media: Media) -> str:
        assert media.data is not None
        try:
            return media.data.decode()
        except UnicodeDecodeError:
            self.note(
                f"file {media.label or media.media_type} is not UTF-8; invalid bytes replaced"
            )
            return media.data.decode(errors="replace")

    def media_note(self, media: Media, where: str, call_id: str | None) -> Block:
        """A file no block can carry here, as a text note recorded in the diagnostics."""
        label = media.label or media.filename or media.media_type
        reason = f"{TARGET} cannot take {media.media_type} in a {where}"
        self.diagnostics.media.append(
            MediaNote(None, media.media_type, "text_note", call_id, media.label or None, reason)
        )
        return _text_block(f"[file {label} ({media.media_type}) omitted: {reason}]")
