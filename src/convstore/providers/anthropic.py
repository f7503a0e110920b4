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

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from convstore.model import (
    ThinkingPart,
)
from convstore.providers._encoding import (
    note_media_as_text,
    note_reasoning_dropped,
    result_text,
)
from convstore.providers._wire_tools import anthropic_tools
from convstore.providers.anthropic_parse import (
    _IMAGE_TYPES,
    _PDF,
    _PLAIN_TEXT,
    _THINKING_BLOCKS,
    OPAQUE_BLOCK_KEY,
    PROVIDER,
    TARGET,
    Block,
    parse,
    parse_response,
)
from convstore.transcript.diagnostics import Diagnostics, ReasoningNote
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
    if plan.tools:
        payload["tools"] = anthropic_tools(plan)
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
        note_reasoning_dropped(self.diagnostics, part, "a thinking block needs a signature")
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
        note_media_as_text(self.diagnostics, media, reason, call_id)
        return _text_block(f"[file {label} ({media.media_type}) omitted: {reason}]")
