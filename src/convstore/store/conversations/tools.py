"""Tool definitions kept with a conversation, in its metadata.

An imported request's tools belong with its history: a later render offers the model the same
tools. They are kept under the reserved metadata key `TOOLS_KEY` as the JSON form of
`ToolDefinition`s (no schema of their own), so any conversation can carry them and every store
operation (load, fork, list filters) treats them like other metadata.

Invariant: what `stored_tools` reads back is exactly what `tools_metadata` wrote; a value under
the key that is not a list of tool definitions raises `InvalidInputError` rather than being
ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from convstore.errors import InvalidInputError, InvalidMessageError
from convstore.model import TOOL_DEFINITIONS, Conversation, ToolDefinition

__all__ = ["MODEL_KEY", "SOURCE_KEY", "TOOLS_KEY", "stored_tools", "tools_metadata"]

TOOLS_KEY: Final = "convstore.tools"
"""Reserved metadata key holding a conversation's tool definitions."""

MODEL_KEY: Final = "convstore.model"
"""Reserved metadata key holding the model an imported request was sent to."""

SOURCE_KEY: Final = "convstore.source"
"""Reserved metadata key holding the wire format an imported request was in."""


def tools_metadata(tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The metadata entry that keeps ``tools`` with a conversation (empty for no tools)."""
    if not tools:
        return {}
    return {TOOLS_KEY: TOOL_DEFINITIONS.dump_python(list(tools), mode="json", exclude_none=True)}


def stored_tools(conversation: Conversation) -> list[ToolDefinition]:
    """The tool definitions kept with ``conversation`` (``[]`` when none were)."""
    value = conversation.metadata.get(TOOLS_KEY)
    if value is None:
        return []
    try:
        return TOOL_DEFINITIONS.validate_python(value)
    except (ValueError, InvalidMessageError) as exc:
        raise InvalidInputError(
            f"metadata[{TOOLS_KEY!r}] of conversation {conversation.id} is not a list of tool "
            f"definitions: {exc}"
        ) from exc
