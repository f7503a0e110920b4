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
- A lifecycle belongs to a path: `path_lifecycles` derives every call's state on any path from
  that path's messages alone, as a read of another branch needs it;
  `convstore.store.history.branches` keeps the stored rows of the active path to the same rule,
  asking `answers` and `unanswered` here, so the rule has one home.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from convstore.model import Message, Role, ToolCallStatus, ToolOutput, ToolResultPart

__all__ = [
    "Outcome",
    "PathLifecycle",
    "answers",
    "on_result",
    "path_lifecycles",
    "status_for",
    "unanswered",
]


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


def answers(stored_at: datetime | None, cancelled_at: datetime | None) -> bool:
    """Whether a result after its call on a path answers it.

    A result stored after the call was cancelled does not: it was refused, or kept as history
    only. One stored before the cancellation still answers the call on its branch.
    """
    return cancelled_at is None or (stored_at is not None and stored_at < cancelled_at)


def unanswered(*, cancelled: bool, user_after: bool) -> ToolCallStatus:
    """The status of a call no result on its path answers.

    A call ever cancelled is cancelled; otherwise a later user message on the path interrupts
    it; otherwise it is pending.
    """
    if cancelled:
        return ToolCallStatus.CANCELLED
    return ToolCallStatus.INTERRUPTED if user_after else ToolCallStatus.PENDING


@dataclass(frozen=True, slots=True)
class PathLifecycle:
    """Where a call stands on one path, derived from that path's messages."""

    status: ToolCallStatus
    result_kind: str | None
    result_seq: int | None
    result_idx: int | None
    completed_at: datetime | None
    """When it left ``pending``: its result's, its interrupting user turn's, or its
    cancellation's time."""


def path_lifecycles(
    path: Sequence[Message],
    made_at: Mapping[str, int],
    cancelled: Mapping[str, datetime],
) -> dict[str, PathLifecycle]:
    """The lifecycle of every call made on ``path`` (root → end, in order), by call id.

    The rule `convstore.store.history.branches` keeps stored lifecycles to: the first result after a
    call on the path completes it, unless it was stored after the call was cancelled (then it
    is history); otherwise a call ever cancelled is cancelled; otherwise a later user message
    interrupts it; otherwise it is pending. ``made_at`` gives the seq of the message each
    stored call belongs to (a call part elsewhere with the same id is not that call);
    ``cancelled`` when calls were cancelled. One pass, linear in the path.
    """
    fresh: dict[str, int] = {}
    """Calls made and not answered, with no user turn since."""
    interrupted: dict[str, datetime | None] = {}
    """Calls made and not answered, by the time of the first user turn after them."""
    decided: dict[str, PathLifecycle] = {}
    for message in path:
        seq = message.seq or 0
        match message.role:
            case Role.ASSISTANT:
                for call in message.tool_calls:
                    if made_at.get(call.id) == seq:
                        fresh[call.id] = seq
            case Role.TOOL:
                for idx, part in enumerate(message.parts):
                    if not isinstance(part, ToolResultPart):
                        continue
                    call_id = part.call_id
                    if call_id not in fresh and call_id not in interrupted:
                        continue
                    stored_at = message.created_at
                    if not answers(stored_at, cancelled.get(call_id)):
                        continue
                    fresh.pop(call_id, None)
                    interrupted.pop(call_id, None)
                    decided[call_id] = PathLifecycle(
                        status_for(part.output), part.output.kind, seq, idx, stored_at
                    )
            case Role.USER:
                for call_id in fresh:
                    interrupted[call_id] = message.created_at
                fresh.clear()
            case Role.SYSTEM:
                pass
    for call_id, interrupted_at in [*((c, None) for c in fresh), *interrupted.items()]:
        cancelled_at = cancelled.get(call_id)
        status = unanswered(cancelled=cancelled_at is not None, user_after=call_id in interrupted)
        at = cancelled_at if cancelled_at is not None else interrupted_at
        decided[call_id] = PathLifecycle(status, None, None, None, at)
    return decided
