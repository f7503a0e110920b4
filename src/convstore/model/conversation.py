"""A loaded conversation, its tool-call lifecycles and its compaction records.

Invariants:

- A tool call moves ``pending`` → ``complete`` | ``error`` | ``cancelled`` | ``interrupted``.
  ``interrupted`` means a later user turn arrived with no result; a late result may still
  complete it. ``complete``, ``error`` and ``cancelled`` are terminal.
- ``result_kind`` and ``output`` are ``None`` exactly while no result is stored, and
  ``result_kind`` always names ``output``'s class.
- These are read models: the store builds them; applications do not construct them to write.
- A result that answers no call of the loaded path (a typo, an imported history) is kept as
  history and dropped by every render; `Conversation.orphan_results` lists them, so an
  application can see what will not be sent.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, NamedTuple

from pydantic import AwareDatetime, Field, JsonValue

from convstore.errors import ToolCallNotFoundError
from convstore.model._base import CanonicalModel
from convstore.model.messages import Message
from convstore.model.outputs import ResultKind, ToolOutput
from convstore.model.parts import ToolResultPart

__all__ = ["Branch", "Compaction", "Conversation", "OrphanResult", "ToolCall", "ToolCallStatus"]


class ToolCallStatus(StrEnum):
    """Where a tool call is in its lifecycle."""

    PENDING = "pending"
    COMPLETE = "complete"
    ERROR = "error"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def terminal(self) -> bool:
        """Whether no further result may change it."""
        return self in (ToolCallStatus.COMPLETE, ToolCallStatus.ERROR, ToolCallStatus.CANCELLED)


class ToolCall(CanonicalModel):
    """One tool call and its lifecycle."""

    id: str
    """Canonical call id, unique within the conversation."""
    name: str
    """Tool name."""
    arguments: dict[str, JsonValue]
    """Arguments object."""
    status: ToolCallStatus
    """Lifecycle state."""
    result_kind: ResultKind | None = None
    """Kind of the stored output, or ``None`` while no result is stored."""
    output: ToolOutput | None = None
    """The stored output, rehydrated as the class it was stored as."""
    provider_id: str | None = None
    """The provider's own id for the call."""
    seq: int
    """Sequence number of the assistant message that made the call."""
    result_seq: int | None = None
    """Sequence number of the tool message holding the (first) result."""
    created_at: AwareDatetime
    """When the call was stored."""
    completed_at: AwareDatetime | None = None
    """When it reached its current non-pending status."""


class OrphanResult(NamedTuple):
    """A stored tool result that answers no tool call of the loaded conversation."""

    seq: int | None
    """Sequence number of the tool message holding it."""
    part: ToolResultPart
    """The result itself (``part.call_id`` names the call it claims to answer)."""


class Compaction(CanonicalModel):
    """A summary that stands in for messages up to ``through_seq`` when rendering."""

    through_seq: Annotated[int, Field(ge=1)]
    """Last sequence number the summary covers."""
    summary: str
    """The summary text."""
    created_at: AwareDatetime
    """When it was recorded."""


class Branch(CanonicalModel):
    """The tip of one path through a conversation's message tree."""

    head_seq: int
    """The newest message of the path."""
    active: bool
    """Whether this is the conversation's active path (what ``load`` returns)."""
    created_at: AwareDatetime
    """When the tip was stored."""


class Conversation(CanonicalModel):
    """A conversation as loaded from the store."""

    id: str
    """Conversation id."""
    title: str | None = None
    """Optional title."""
    tenant: str | None = None
    """Owning tenant, if the application scopes by tenant."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Application metadata (JSON object)."""
    created_at: AwareDatetime
    """Creation time (UTC)."""
    updated_at: AwareDatetime
    """Time of the last write (UTC)."""
    revision: str = ""
    """Changes on every write to the conversation; pass it back as ``expected_revision=``."""
    state: dict[str, JsonValue] = Field(default_factory=dict)
    """Application state (JSON object), changed by ``update_state`` merge patches."""
    head_seq: int | None = None
    """The newest message of the active path (``None``: no messages)."""
    messages: list[Message] = Field(default_factory=list)
    """The active path, oldest first (only a window of it when loaded with ``last=N``)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls made or answered by the loaded messages, in call order."""
    compactions: list[Compaction] = Field(default_factory=list)
    """Compaction records, oldest first; the newest one applies when rendering."""

    def get_tool_call(self, call_id: str) -> ToolCall:
        """The tool call with that canonical id; raises `ToolCallNotFoundError`."""
        found = self.get_tool_call_or_none(call_id)
        if found is None:
            raise ToolCallNotFoundError(self.id, call_id)
        return found

    def get_tool_call_or_none(self, call_id: str) -> ToolCall | None:
        """The tool call with that canonical id, or ``None``."""
        return next((c for c in self.tool_calls if c.id == call_id), None)

    @property
    def orphan_results(self) -> list[OrphanResult]:
        """Results whose ``call_id`` names no call of `tool_calls`, in message order.

        Renders drop them (no provider accepts a result without its call), so they are listed
        here instead of vanishing silently; ``convstore show`` flags them.
        """
        known = {call.id for call in self.tool_calls}
        return [
            OrphanResult(message.seq, part)
            for message in self.messages
            for part in message.tool_results
            if part.call_id not in known
        ]

    @property
    def compaction(self) -> Compaction | None:
        """The compaction that applies (the newest), if any."""
        return self.compactions[-1] if self.compactions else None
