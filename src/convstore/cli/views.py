"""Readable text views of conversations, for ``convstore show`` and ``convstore demo``.

Invariants: pure formatting (no I/O, no store calls); every part kind is shown, none skipped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, assert_never

from convstore.model import (
    Branch,
    ContentOutput,
    Conversation,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
)

__all__ = ["conversation_view"]

_WIDTH: Final = 96


def _clip(text: str, width: int = _WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _file(part: FilePart) -> str:
    name = f" {part.filename!r}" if part.filename else ""
    if part.attachment is not None:
        where = f"blob sha256:{part.attachment.sha256[:12]}… {part.attachment.size:,} bytes"
    elif part.uri is not None:
        where = f"external {part.uri}"
    elif part.data is not None:
        where = f"inline {len(part.data):,} bytes (not yet stored)"
    else:
        where = "pending stream"
    return f"file {part.media_type}{name} [{where}]"


def _output(output: ToolOutput) -> str:
    match output:
        case JsonOutput(value=value):
            return _clip(json.dumps(value, ensure_ascii=False), _WIDTH - 20)
        case ErrorOutput(message=message):
            return "error: " + _clip(message, _WIDTH - 20)
        case ContentOutput(parts=parts):
            shown = [_clip(p.text, 40) if isinstance(p, TextPart) else _file(p) for p in parts]
            return " | ".join(shown)
        case _:
            assert_never(output)


def _part(part: Part, calls: set[str]) -> str:
    match part:
        case TextPart(text=text):
            return "text: " + _clip(text)
        case ThinkingPart():
            origin = "/".join(x for x in (part.provider, part.model) if x) or "unknown origin"
            artefacts = [
                label
                for label, value in (
                    ("signature", part.signature),
                    ("redacted", part.redacted_data),
                    ("encrypted", part.encrypted_content),
                    ("reasoning id", part.reasoning_id),
                )
                if value
            ]
            extra = f" [{', '.join(artefacts)}]" if artefacts else ""
            return f"thinking ({origin}){extra}: " + _clip(part.text or "…", 60)
        case ToolCallPart():
            args = part.raw_arguments or json.dumps(part.arguments, ensure_ascii=False)
            return f"tool call {part.id} {part.name}({_clip(args, 60)})"
        case ToolResultPart():
            flag = " synthetic" if part.synthetic else ""
            if part.call_id not in calls:
                flag += " ANSWERS NO CALL"
            return f"tool result {part.call_id} [{part.result_kind}{flag}]: {_output(part.output)}"
        case FilePart():
            return _file(part)
        case _:
            assert_never(part)


def _message(message: Message, calls: set[str]) -> list[str]:
    origin = "/".join(x for x in (message.provider, message.model) if x)
    head = f"#{message.seq} {message.role.value}" + (f" ({origin})" if origin else "")
    if message.id is not None:
        head += f"  id={message.id}"
    return [head, *(f"    {_part(p, calls)}" for p in message.parts)]


def conversation_view(conversation: Conversation, branches: Sequence[Branch] = ()) -> str:
    """The active path of a conversation as readable text, with its branches."""
    lines = [
        f"conversation {conversation.id}",
        f"  title: {conversation.title or '-'}   tenant: {conversation.tenant or '-'}",
        f"  created: {conversation.created_at:%Y-%m-%d %H:%M:%S} UTC   "
        f"messages: {len(conversation.messages)}   head: #{conversation.head_seq or '-'}   "
        f"revision: {conversation.revision}",
    ]
    calls = {call.id for call in conversation.tool_calls}
    if len(branches) > 1:
        tips = ", ".join(f"#{b.head_seq}{' (active)' if b.active else ''}" for b in branches)
        shown = next((b for b in branches if b.head_seq == conversation.head_seq), None)
        which = "the active one" if shown is None or shown.active else f"#{conversation.head_seq}"
        lines.append(f"  branches: {tips}  (shown: {which}; --head SEQ shows another)")
    lines.append("")
    for message in conversation.messages:
        lines.extend(_message(message, calls))
    orphans = conversation.orphan_results
    if orphans:
        lines += ["", f"results answering no call ({len(orphans)}; renders drop them):"]
        lines.extend(f"  #{seq} tool result {part.call_id}" for seq, part in orphans)
    if conversation.tool_calls:
        lines += ["", "tool calls:"]
        for call in conversation.tool_calls:
            kind = f" {call.result_kind}" if call.result_kind else ""
            lines.append(f"  {call.id:<28} {call.name:<20} {call.status.value}{kind} (#{call.seq})")
    files = [f for m in conversation.messages for f in m.files if f.attachment is not None]
    if files:
        lines += ["", "attachments:"]
        unique = {f.attachment.sha256: f for f in files if f.attachment is not None}
        for sha, part in unique.items():
            assert part.attachment is not None
            lines.append(f"  sha256:{sha}  {part.media_type:<18} {part.attachment.size:>10,} bytes")
    for compaction in conversation.compactions:
        lines += ["", f"compaction through #{compaction.through_seq}: {_clip(compaction.summary)}"]
    return "\n".join(lines)
