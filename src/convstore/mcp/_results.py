"""The JSON shapes the MCP tools return (CONTRACT.md v4), as typed dicts.

Each tool's ``outputSchema`` is derived from these, and the SDK checks every successful result
against it before it leaves the server, so a shape and what is sent cannot drift apart.

Invariants: every key listed here is always present (``None`` where there is nothing), ids and
seqs are the store's own (provenance a client can pass back), and no value holds bytes:
attachments are named by their SHA-256.
"""

from __future__ import annotations

from typing import Any, NotRequired

# pydantic reads a TypedDict from typing_extensions on every Python (the stdlib one before 3.12
# is refused), and the SDK derives each outputSchema through pydantic.
from typing_extensions import TypedDict

__all__ = [
    "ConversationItem",
    "ConversationRef",
    "FileView",
    "ListResult",
    "MessageView",
    "ReadResult",
    "SearchHitView",
    "SearchResult",
    "ToolCallDetail",
    "ToolCallView",
    "ToolResultView",
]


class SearchHitView(TypedDict):
    """One search hit: where it is (conversation, seq, message id) and the matched text."""

    conversation_id: str
    conversation_title: str | None
    seq: int | None
    message_id: str | None
    role: str | None
    snippet: str
    on_active_path: bool


class SearchResult(TypedDict):
    """``search_conversations``: hits, best first."""

    hits: list[SearchHitView]


class ConversationItem(TypedDict):
    """One conversation of a listing."""

    id: str
    title: str | None
    created_at: str
    updated_at: str


class ListResult(TypedDict):
    """``list_conversations``: newest first, and the cursor of the next page (``None``: last)."""

    conversations: list[ConversationItem]
    next_cursor: str | None


class FileView(TypedDict):
    """An attachment by name, media type and content hash (``None`` for an external URI)."""

    name: str | None
    media_type: str
    sha256: str | None


class ToolCallView(TypedDict):
    """A call an assistant message made, with its status on the path read."""

    id: str
    name: str
    arguments: dict[str, Any]
    status: str


class ToolResultView(TypedDict):
    """What a tool message answered: the call, its status and kind, the output as text."""

    call_id: str
    status: str
    kind: str
    text: str


class MessageView(TypedDict):
    """One message of a window."""

    seq: int
    message_id: str | None
    role: str
    text: str
    tool_calls: list[ToolCallView]
    tool_result: ToolResultView | None
    files: list[FileView]
    more_tool_results: NotRequired[list[ToolResultView]]
    """Only on a tool message that answered several calls: every result after the first."""


class ConversationRef(TypedDict):
    """The conversation a window belongs to."""

    id: str
    title: str | None


class ReadResult(TypedDict):
    """``read_conversation``: the conversation and its messages, oldest first."""

    conversation: ConversationRef
    messages: list[MessageView]


class ToolCallDetail(TypedDict):
    """``get_tool_call``: a call, its lifecycle and its whole output."""

    id: str
    name: str
    arguments: dict[str, Any]
    status: str
    result_kind: str | None
    output_text: str | None
    files: list[FileView]
