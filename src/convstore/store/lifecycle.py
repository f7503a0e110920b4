"""The tool-call lifecycle as a pure function: what a new result does to a call.

::

    pending ──result──▶ complete | error       (error iff the output is an ErrorOutput)
       │  └─later user turn──▶ interrupted ──late result──▶ complete | error
       └─cancel_tool_calls──▶ cancelled        (terminal: a result for it is a conflict)

Invariants:

- ``complete``, ``error`` and ``cancelled`` are terminal. A result equal to the stored one is a
  duplicate (no change); a different one is a conflict.
- Equality is value equality of the typed outputs, so key order in a JSON object or a file
  part rebuilt from the same bytes never makes a false conflict.
"""

from __future__ import annotations

import enum

from convstore.model import ToolCallStatus, ToolOutput

__all__ = ["Outcome", "on_result", "status_for"]


class Outcome(enum.Enum):
    """What storing a result does to its call."""

    COMPLETES = "completes"
    """The call takes the result: it becomes ``complete`` or ``error``."""
    DUPLICATE = "duplicate"
    """The call already holds an equal result; nothing changes."""
    CONFLICT = "conflict"
    """The call is terminal with a different result, or was cancelled."""


def status_for(output: ToolOutput) -> ToolCallStatus:
    """The terminal status a result gives its call."""
    return ToolCallStatus.ERROR if output.kind == "error" else ToolCallStatus.COMPLETE


def on_result(status: ToolCallStatus, stored: ToolOutput | None, new: ToolOutput) -> Outcome:
    """The outcome of storing ``new`` for a call in ``status`` that holds ``stored``."""
    match status:
        case ToolCallStatus.PENDING | ToolCallStatus.INTERRUPTED:
            return Outcome.COMPLETES
        case ToolCallStatus.COMPLETE | ToolCallStatus.ERROR:
            return Outcome.DUPLICATE if stored == new else Outcome.CONFLICT
        case ToolCallStatus.CANCELLED:
            return Outcome.CONFLICT
