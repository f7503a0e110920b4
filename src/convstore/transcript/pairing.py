"""Pairing: which stored result answers each tool call, found before the planner builds a turn.

One pass over the (compacted, windowed) history, in order: a call's first stored result wins
wherever it was stored; every later result for the same call is recorded in the diagnostics as
a duplicate (dropped). Results whose call is absent are left for the planner to treat as orphans.

Invariants: reads the messages only; the one side effect is the duplicate records it appends to
``diagnostics.dropped_results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from convstore.model import Message, Role, ToolCallPart, ToolResultPart
from convstore.transcript.diagnostics import Diagnostics, DroppedResult

__all__ = ["Pairing", "StoredResult"]

# Bound once: ``Role.USER`` is a class-attribute lookup through the enum's metaclass, which the
# pairing pass would otherwise pay per message on every render.
_USER: Final = Role.USER


class StoredResult(NamedTuple):
    """A call's first stored result and the seq of the message holding it.

    A tuple: the pairing pass builds one per result of the history, on every render.
    """

    seq: int | None
    part: ToolResultPart


class Pairing:
    """Which stored result answers each call, found before any turn is built."""

    def __init__(self, messages: Sequence[Message], diagnostics: Diagnostics) -> None:
        self.results: dict[str, StoredResult] = {}
        self.call_ids: set[str] = set()
        self.names: set[str] = set()
        self.last_user = -1
        """Index of the last user message: a call before it was followed by a user turn."""
        for index, message in enumerate(messages):
            if message.role is _USER:
                self.last_user = index
            for part in message.parts:
                kind = part.kind
                if kind == "tool_call":
                    assert isinstance(part, ToolCallPart)
                    self.call_ids.add(part.id)
                    self.names.add(part.name)
                elif kind == "tool_result":
                    assert isinstance(part, ToolResultPart)
                    first = self.results.get(part.call_id)
                    if first is None:
                        self.results[part.call_id] = StoredResult(message.seq, part)
                    else:
                        diagnostics.dropped_results.append(
                            DroppedResult(
                                part.call_id, message.seq, "duplicate", "dropped", first.seq
                            )
                        )

    def is_first(self, part: ToolResultPart) -> bool:
        """Whether ``part`` is the result that answers its call (not a later duplicate)."""
        stored = self.results.get(part.call_id)
        return stored is not None and stored.part is part
