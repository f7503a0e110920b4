"""A whole conversation as one JSON document: the ``show --json`` document.

``convstore show --json``, the inspector's ``/conversations/{id}.json`` and every conversation
of an export (`convstore.store.transfer.export`) are this document; `convstore.cli.transfer` reads
it back. Its layout and invariants are described there.
"""

from __future__ import annotations

from typing import Any, Final

from convstore.model import TOOL_DEFINITIONS, Conversation
from convstore.model.serialization import MESSAGES_ADAPTER
from convstore.store.conversations.tools import TOOLS_KEY, stored_tools

__all__ = ["FORMAT", "VERSION", "conversation_document"]

FORMAT: Final = "convstore.conversation"
VERSION: Final = 1


def conversation_document(conversation: Conversation) -> dict[str, Any]:
    """The whole conversation (active path) as a JSON-compatible document."""
    metadata = {k: v for k, v in conversation.metadata.items() if k != TOOLS_KEY}
    tools = stored_tools(conversation)
    return {
        "format": FORMAT,
        "version": VERSION,
        "id": conversation.id,
        "title": conversation.title,
        "tenant": conversation.tenant,
        "metadata": metadata,
        "state": conversation.state,
        "tools": TOOL_DEFINITIONS.dump_python(tools, mode="json", exclude_none=True),
        "messages": MESSAGES_ADAPTER.dump_python(
            conversation.messages,
            mode="json",
            exclude_none=True,
            # The document names its conversation once; timestamps are the store's.
            exclude={"__all__": {"created_at", "conversation_id"}},
        ),
        "tool_calls": [
            call.model_dump(
                mode="json",
                include={"id", "name", "status", "result_kind", "seq", "result_seq"},
                exclude_none=True,
            )
            for call in conversation.tool_calls
        ],
        "compactions": [
            {"through_seq": c.through_seq, "summary": c.summary} for c in conversation.compactions
        ],
    }
