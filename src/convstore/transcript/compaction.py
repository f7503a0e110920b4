"""Applying a compaction record to a history without splitting a call from its result.

Invariants:

- The summary stands in for the messages up to the *effective* boundary; system messages are
  never compacted away.
- The effective boundary never separates a call from its first result: when the requested one
  would, it moves back to just before the call's message (keeping both), repeatedly, until no
  pair is split. Keeping is chosen over dropping because the summary was written without the
  result, and losing a result the model never saw summarised would lose information.
- Messages without a ``seq`` (never stored) are never compacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convstore.model import Compaction, Message, Role, ToolCallPart, ToolResultPart
from convstore.transcript.diagnostics import CompactionNote

__all__ = ["CompactedView", "apply_compaction"]


@dataclass(frozen=True, slots=True)
class CompactedView:
    """The messages a render sees, and the summary that precedes them."""

    messages: list[Message]
    summary: str | None
    note: CompactionNote | None


def _effective_boundary(messages: Sequence[Message], requested: int) -> tuple[int, str | None]:
    call_seq: dict[str, int] = {}
    first_result: dict[str, int] = {}
    for message in messages:
        if message.seq is None:
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                call_seq.setdefault(part.id, message.seq)
            elif isinstance(part, ToolResultPart):
                first_result.setdefault(part.call_id, message.seq)
    boundary, reason = requested, None
    moved = True
    while moved:
        moved = False
        for call_id, seq in call_seq.items():
            result = first_result.get(call_id)
            if result is not None and seq <= boundary < result:
                boundary = seq - 1
                reason = f"kept call {call_id!r} together with its result (seq {result})"
                moved = True
    return boundary, reason


def apply_compaction(messages: Sequence[Message], compaction: Compaction | None) -> CompactedView:
    """The view of ``messages`` a render uses under ``compaction``."""
    if compaction is None:
        return CompactedView(list(messages), None, None)
    boundary, reason = _effective_boundary(messages, compaction.through_seq)
    kept: list[Message] = []
    replaced = 0
    for message in messages:
        if message.seq is not None and message.seq <= boundary and message.role is not Role.SYSTEM:
            replaced += 1
        else:
            kept.append(message)
    note = CompactionNote(
        requested_through_seq=compaction.through_seq,
        effective_through_seq=boundary,
        messages_replaced=replaced,
        reason=reason,
    )
    return CompactedView(kept, compaction.summary if replaced else None, note)
