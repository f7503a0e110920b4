"""Windows: the newest ``last=N`` messages of a history, cut so a provider accepts them.

``ConversationStore.load(last=N)`` returns a window of *messages* (what the store holds); a
render with ``last=N`` needs a *transcript* window, planned here:

- N counts non-system messages, newest first; system messages are always kept (older ones
  stay at the front, as the system prompt).
- The window then widens back to the start of the turn holding its oldest message: the user
  message before it (or the first message, when none comes before). A window cut inside a turn
  would separate results from their calls, or begin with a tool result or an assistant message
  that no provider takes as a request's first message. So ``last=N`` keeps at least N messages
  (at least one turn, even for ``last=0``), and is never empty while the history has a
  non-system message; how many were added is `WindowNote.widened`. Where the turns it reaches
  hold nothing a provider is sent (blank text only), it reaches back a turn at a time until
  one does.
- A result in the window whose call was cut anyway (a stored history whose results came after a
  later user message) is dropped, and listed (`WindowNote.dropped_results`): no provider takes a
  result without its call. Calls left without a result get the planner's synthetic results as
  always.
- A compaction summary (applied before the window) stays: it stands in for what the
  compaction covered, which the window cut as well.

Invariants: pure and deterministic; the input messages are not changed (a tool message that
loses results is a copy); every cut is in the returned `WindowNote`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convstore.model import FilePart, Message, Role, TextPart, ToolCallPart, ToolResultPart
from convstore.transcript.diagnostics import WindowNote
from convstore.transcript.plan import is_blank

__all__ = ["Window", "apply_window"]


@dataclass(frozen=True, slots=True)
class Window:
    """The messages a windowed render plans, and what the window did."""

    messages: list[Message]
    note: WindowNote


def apply_window(messages: Sequence[Message], last: int, *, summary: bool) -> Window:
    """The newest ``last`` non-system messages, from the start of their turn, and every system one.

    ``summary`` says whether a compaction summary stands before the messages (it is kept).
    """
    conversation = [m for m in messages if m.role is not Role.SYSTEM]
    requested = max(len(conversation) - max(last, 0), 0)
    cut_count = _turn_start(conversation, min(requested, len(conversation) - 1))
    # A window whose turns hold nothing a provider is sent (blank text, results whose call was
    # cut) would be an empty request: it reaches back a turn at a time until one has content.
    while cut_count > 0 and not any(_has_content(m) for m in conversation[cut_count:]):
        cut_count = _turn_start(conversation, cut_count - 1)
    cut, kept = conversation[:cut_count], conversation[cut_count:]
    cut_calls = {part.id for message in cut for part in message.tool_calls}
    dropped: list[str] = []
    replaced: dict[int, Message | None] = {}
    for message in kept:
        if message.role is not Role.TOOL or not cut_calls:
            continue
        parts = [
            p
            for p in message.parts
            if not (isinstance(p, ToolResultPart) and p.call_id in cut_calls)
        ]
        if len(parts) != len(message.parts):
            dropped.extend(
                p.call_id
                for p in message.parts
                if isinstance(p, ToolResultPart) and p.call_id in cut_calls
            )
            replaced[id(message)] = message.model_copy(update={"parts": parts}) if parts else None
    kept_ids = {id(m) for m in kept}
    first_kept = next((i for i, m in enumerate(messages) if id(m) in kept_ids), len(messages))
    out: list[Message] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            out.append(message)
        elif id(message) in kept_ids:
            windowed = replaced.get(id(message), message)
            if windowed is not None:
                out.append(windowed)
    note = WindowNote(
        last=last,
        kept_seqs=[m.seq for m in kept],
        cut_seqs=[m.seq for m in cut],
        system_kept=sum(1 for m in messages[:first_kept] if m.role is Role.SYSTEM) if cut else 0,
        summary=summary,
        dropped_results=dropped,
        widened=requested - cut_count,
    )
    return Window(out, note)


def _has_content(message: Message) -> bool:
    """Whether a render sends something of ``message`` on its own: text, a file or a call."""
    return any(
        isinstance(part, FilePart | ToolCallPart)
        or (isinstance(part, TextPart) and not is_blank(part.text))
        for part in message.parts
    )


def _turn_start(conversation: Sequence[Message], oldest: int) -> int:
    """Index of the user message starting the turn of ``conversation[oldest]`` (0: none before)."""
    for index in range(max(oldest, 0), 0, -1):
        if conversation[index].role is Role.USER:
            return index
    return 0
