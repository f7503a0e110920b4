"""Stored conversations as the compact JSON the MCP tools return, and as Markdown.

Pure functions over loaded models: no I/O. A tool call's status is the one it has on the path
that was read (a result on another branch does not answer it). Thinking is never shown: it is the
model's scratch work, and the search leaves it out by default too.

Output text: a JSON result as compact JSON, a content result's text parts joined by newlines
(its files listed beside), an error's message. In a window, a result's text is cut at
`RESULT_TEXT_IN_WINDOW` characters (``get_tool_call`` returns it whole), so that one large tool
output does not crowd every message out of a client's context.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

from convstore import (
    ContentOutput,
    Conversation,
    ConversationSummary,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    SearchHit,
    TextPart,
    ToolCall,
    ToolOutput,
    ToolResultPart,
)
from convstore.mcp._results import (
    ConversationItem,
    FileView,
    MessageView,
    SearchHitView,
    ToolCallDetail,
    ToolCallView,
    ToolResultView,
)

__all__ = [
    "RESULT_TEXT_IN_WINDOW",
    "call_detail",
    "conversation_item",
    "file_view",
    "markdown",
    "message_view",
    "output_text",
    "search_hit_view",
]

RESULT_TEXT_IN_WINDOW: Final = 2_000


def search_hit_view(hit: SearchHit) -> SearchHitView:
    """A hit with its provenance."""
    return SearchHitView(
        conversation_id=hit.conversation_id,
        conversation_title=hit.conversation_title,
        seq=hit.seq,
        message_id=hit.message_id,
        role=None if hit.role is None else str(hit.role),
        snippet=hit.snippet,
        on_active_path=hit.on_active_path,
    )


def conversation_item(summary: ConversationSummary) -> ConversationItem:
    """A conversation of a listing (times in ISO 8601, UTC)."""
    return ConversationItem(
        id=summary.id,
        title=summary.title,
        created_at=summary.created_at.isoformat(),
        updated_at=summary.updated_at.isoformat(),
    )


def file_view(part: FilePart) -> FileView:
    """A file by name, media type and hash; never its bytes."""
    return FileView(name=part.filename, media_type=part.media_type, sha256=part.sha256)


def output_text(output: ToolOutput) -> str:
    """A tool output as text."""
    match output:
        case JsonOutput():
            return json.dumps(output.value, ensure_ascii=False, separators=(",", ":"))
        case ContentOutput():
            return "\n".join(p.text for p in output.parts if isinstance(p, TextPart))
        case ErrorOutput():
            return output.message


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters: get_tool_call has them all]"


def _status(conversation: Conversation, call_id: str) -> str:
    call = conversation.get_tool_call_or_none(call_id)
    # A call the window's path does not know (a result kept without its call) reads as unknown.
    return "unknown" if call is None else str(call.status)


def _result_view(conversation: Conversation, part: ToolResultPart) -> ToolResultView:
    return ToolResultView(
        call_id=part.call_id,
        status=_status(conversation, part.call_id),
        kind=str(part.result_kind),
        text=_cut(output_text(part.output), RESULT_TEXT_IN_WINDOW),
    )


def message_view(conversation: Conversation, message: Message) -> MessageView:
    """One stored message of ``conversation`` (its seq is set: it was loaded)."""
    assert message.seq is not None
    results = [_result_view(conversation, part) for part in message.tool_results]
    view = MessageView(
        seq=message.seq,
        message_id=message.id,
        role=str(message.role),
        text=message.text,
        tool_calls=[
            ToolCallView(
                id=part.id,
                name=part.name,
                arguments=dict(part.arguments),
                status=_status(conversation, part.id),
            )
            for part in message.tool_calls
        ],
        tool_result=results[0] if results else None,
        files=[file_view(part) for part in message.files],
    )
    if len(results) > 1:
        view["more_tool_results"] = results[1:]
    return view


def call_detail(call: ToolCall) -> ToolCallDetail:
    """A call with its lifecycle and whole output."""
    output = call.output
    return ToolCallDetail(
        id=call.id,
        name=call.name,
        arguments=dict(call.arguments),
        status=str(call.status),
        result_kind=None if call.result_kind is None else str(call.result_kind),
        output_text=None if output is None else output_text(output),
        files=[file_view(p) for p in output.files] if isinstance(output, ContentOutput) else [],
    )


def _markdown_message(conversation: Conversation, message: Message) -> Iterable[str]:
    label = f"### {message.role} · seq {message.seq}"
    if message.id is not None:
        label += f" · id `{message.id}`"
    yield label
    if message.text:
        yield message.text
    for part in message.tool_calls:
        arguments = json.dumps(part.arguments, ensure_ascii=False, separators=(",", ":"))
        status = _status(conversation, part.id)
        yield f"- tool call `{part.name}` (id `{part.id}`, {status}): `{arguments}`"
    for result in message.tool_results:
        text = _cut(output_text(result.output), RESULT_TEXT_IN_WINDOW)
        yield f"- result for `{result.call_id}` ({result.result_kind}):\n\n```\n{text}\n```"
    for file in message.files:
        yield f"- file {file.filename or '(unnamed)'} ({file.media_type}, sha256 {file.sha256})"


def markdown(conversation: Conversation) -> str:
    """The loaded path (or the newest part of it) as Markdown."""
    lines = [f"# {conversation.title or 'Untitled conversation'}", ""]
    shown = conversation.messages
    lines.append(f"Conversation `{conversation.id}`: the active path, {len(shown)} messages.")
    if shown and shown[0].parent_seq is not None:
        lines.append(
            f"Older messages (before seq {shown[0].seq}) are not shown: read_conversation "
            "with before_seq pages back."
        )
    for message in conversation.messages:
        lines.append("")
        lines.extend(_markdown_message(conversation, message))
    return "\n".join(lines) + "\n"
