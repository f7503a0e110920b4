"""The record of every repair and projection a render made.

A render never changes history silently: each decision the planner or an encoder takes that
alters what the provider sees is recorded here, so an operator can tell canonical-state
corruption from a planning decision from a projection, after the fact.

Invariants:

- Plain frozen dataclasses, JSON-ready through `Diagnostics.to_dict`.
- Identifiers are canonical ids unless the field says ``wire``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "CompactionNote",
    "Diagnostics",
    "DroppedResult",
    "MediaNote",
    "MediaPlacementName",
    "ReasoningNote",
    "SchemaNote",
    "SyntheticResult",
    "WindowNote",
]


@dataclass(frozen=True, slots=True)
class SyntheticResult:
    """A result the planner made for a call that had none."""

    call_id: str
    wire_id: str
    reason: Literal["cancelled", "interrupted", "pending", "missing"]


@dataclass(frozen=True, slots=True)
class DroppedResult:
    """A stored result left out of (or turned into text in) the render."""

    call_id: str
    seq: int | None
    reason: Literal["duplicate", "orphan"]
    action: Literal["dropped", "text"]
    kept_seq: int | None = None
    """For a duplicate: the seq of the result that was kept."""


@dataclass(frozen=True, slots=True)
class ReasoningNote:
    """What happened to one thinking part."""

    seq: int | None
    provider: str | None
    model: str | None
    action: Literal["kept", "dropped", "text"]
    reason: str


MediaPlacementName = Literal[
    "user", "assistant", "native", "nested", "sibling", "user_message", "text", "text_note"
]
"""Where a file ended up: in a user or assistant message, inside a tool result (``native`` or
``nested``), moved after the results (``sibling``/``user_message``), sent decoded as text (a
text document without a native slot: ``text``), or replaced by a note (``text_note``)."""


@dataclass(frozen=True, slots=True)
class MediaNote:
    """Where one file went."""

    seq: int | None
    media_type: str
    placement: MediaPlacementName
    call_id: str | None = None
    label: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionNote:
    """How a compaction record was applied."""

    requested_through_seq: int
    effective_through_seq: int
    messages_replaced: int
    reason: str | None = None
    """Why the boundary moved, when it did."""


@dataclass(frozen=True, slots=True)
class SchemaNote:
    """One constraint of a tool's parameter schema the target could not take as written."""

    tool: str
    """Canonical tool name."""
    path: str
    """Where in the schema (``/properties/x/items``; ``""`` for the root)."""
    keyword: str
    """The JSON Schema keyword concerned (``*`` for the whole node)."""
    detail: str
    """What happened to it (dropped, rewritten, replaced)."""


@dataclass(frozen=True, slots=True)
class WindowNote:
    """What a ``last=N`` window kept and cut."""

    last: int
    """The requested number of newest non-system messages."""
    kept_seqs: list[int | None]
    """Seqs of the non-system messages kept, oldest first."""
    cut_seqs: list[int | None]
    """Seqs of the non-system messages cut, oldest first."""
    system_kept: int
    """System messages kept although they were older than the window."""
    summary: bool
    """Whether a compaction summary stands in for (part of) what was cut."""
    dropped_results: list[str] = field(default_factory=list)
    """Canonical ids of results in the window whose call it cut (dropped)."""
    widened: int = 0
    """Messages kept beyond ``last`` so the window starts at its turn's user message (a window
    never separates a result from its call nor starts mid-turn; ``last=0`` keeps one turn)."""


@dataclass(slots=True)
class Diagnostics:
    """Everything one render did to the stored history."""

    target: str
    model: str | None
    canonical_call_ids: list[str] = field(default_factory=list)
    """Every call id the render emitted, in order."""
    id_map: dict[str, str] = field(default_factory=dict)
    """Canonical call id -> wire id."""
    name_map: dict[str, str] = field(default_factory=dict)
    """Canonical tool name -> wire name, for every name that had to change."""
    synthetic_results: list[SyntheticResult] = field(default_factory=list)
    dropped_results: list[DroppedResult] = field(default_factory=list)
    reasoning: list[ReasoningNote] = field(default_factory=list)
    media: list[MediaNote] = field(default_factory=list)
    compaction: CompactionNote | None = None
    window: WindowNote | None = None
    """What a ``last=N`` window cut (``None``: the whole history was rendered)."""
    tools: list[SchemaNote] = field(default_factory=list)
    """Tool-schema constraints rewritten or dropped for the target."""
    notes: list[str] = field(default_factory=list)
    """Other decisions, in words (e.g. a placeholder first user turn)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict."""
        return asdict(self)
