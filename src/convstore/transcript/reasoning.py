"""Which reasoning goes back to which target, and in what form.

Invariants:

- Reasoning is replayed as reasoning only to the provider family that produced it, and, for
  targets whose signatures are model-bound (the capabilities table says which), only to the
  same model. Everywhere else it is dropped, or, with ``reasoning="text"``, turned into plain
  text wrapped in ``<thinking>`` tags (empty or opaque-only reasoning is always dropped).
- The decision for every thinking part is recorded in the diagnostics.
"""

from __future__ import annotations

from typing import Literal

from convstore.capabilities import Capabilities, ReasoningReplay
from convstore.model import ThinkingPart
from convstore.transcript.diagnostics import ReasoningNote
from convstore.transcript.plan import Reasoning, Text

__all__ = ["ReasoningPolicy", "decide_reasoning"]

ReasoningPolicy = Literal["drop", "text"]


def _replayable(part: ThinkingPart, caps: Capabilities, model: str | None) -> tuple[bool, str]:
    if not caps.replays_reasoning:
        return False, f"{caps.target} has no way to receive reasoning back"
    if part.provider != caps.family:
        return False, f"produced by {part.provider or 'an unknown provider'}, not {caps.family}"
    if caps.reasoning_requires_signature and not part.signed:
        return False, f"unsigned; {caps.target} only accepts signed reasoning back"
    same_model = caps.same_model(part.model, model)
    if caps.reasoning_replay is ReasoningReplay.SAME_MODEL and part.signed and not same_model:
        return False, (
            f"signed by model {part.model!r}; {caps.target} accepts it only from the same model"
        )
    return True, f"produced by {caps.family}" + (" with the same model" if same_model else "")


def decide_reasoning(
    part: ThinkingPart,
    seq: int | None,
    caps: Capabilities,
    model: str | None,
    policy: ReasoningPolicy,
) -> tuple[Reasoning | Text | None, ReasoningNote]:
    """What ``part`` becomes for this target, and the note recording it."""
    keep, reason = _replayable(part, caps, model)
    if keep:
        return Reasoning(part), ReasoningNote(seq, part.provider, part.model, "kept", reason)
    if policy == "text" and part.text.strip():
        text = Text(f"<thinking>\n{part.text}\n</thinking>")
        return text, ReasoningNote(seq, part.provider, part.model, "text", reason)
    return None, ReasoningNote(seq, part.provider, part.model, "dropped", reason)
