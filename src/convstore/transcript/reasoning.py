"""Which reasoning goes back to which target, and in what form.

Invariants:

- Reasoning is replayed as reasoning only to the provider family that produced it, and, for
  targets whose signatures are model-bound (the capabilities table says which), only to the
  same model. Everywhere else it is dropped, or, with ``reasoning="text"``, turned into plain
  text wrapped in ``<thinking>`` tags (empty, whitespace-only or opaque-only reasoning is
  always dropped).
- Signed reasoning is replayed at most once per render: its first replayable occurrence. A
  repeat (same Responses reasoning item id, or same signature / redacted data / encrypted
  content) is left out whatever the policy, because its content already reaches the model
  through the first one, and providers refuse the artefact twice (a Responses item id is sent
  once per request; Anthropic checks thinking blocks against the model's own output sequence).
- Where the target takes reasoning only at the start of an assistant message
  (``capabilities.reasoning_leads_message``), reasoning that follows content which itself
  followed reasoning of the same message cannot be replayed where it stands: the policy applies
  to it as to any unreplayable reasoning.
- The decision for every thinking part is recorded in the diagnostics.
"""

from __future__ import annotations

from typing import Literal

from convstore.capabilities import Capabilities, ReasoningReplay
from convstore.model import ThinkingPart
from convstore.transcript.diagnostics import ReasoningNote
from convstore.transcript.plan import Reasoning, Text, is_blank

__all__ = ["ReasoningDecisions", "ReasoningPolicy", "decide_reasoning"]

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


def _not_replayed(
    part: ThinkingPart, seq: int | None, policy: ReasoningPolicy, reason: str
) -> tuple[Text | None, ReasoningNote]:
    if policy == "text" and not is_blank(part.text):
        text = Text(f"<thinking>\n{part.text}\n</thinking>")
        return text, ReasoningNote(seq, part.provider, part.model, "text", reason)
    return None, ReasoningNote(seq, part.provider, part.model, "dropped", reason)


def decide_reasoning(
    part: ThinkingPart,
    seq: int | None,
    caps: Capabilities,
    model: str | None,
    policy: ReasoningPolicy,
) -> tuple[Reasoning | Text | None, ReasoningNote]:
    """What ``part`` becomes for this target on its own, and the note recording it.

    Decides for one part without the rest of the render: `ReasoningDecisions` adds the rules
    that depend on what else the render replays and where.
    """
    keep, reason = _replayable(part, caps, model)
    if keep:
        return Reasoning(part), ReasoningNote(seq, part.provider, part.model, "kept", reason)
    return _not_replayed(part, seq, policy, reason)


def _replay_key(part: ThinkingPart) -> tuple[str, str] | None:
    """What identifies ``part``'s artefacts on the wire; ``None`` for unsigned reasoning.

    A Responses reasoning item is its id (an item is sent once, whatever else it carries);
    other signed reasoning is its signature, redacted data or encrypted content.
    """
    if part.reasoning_id:
        return "reasoning item", part.reasoning_id
    if part.signature:
        return "signature", part.signature
    if part.redacted_data:
        return "redacted data", part.redacted_data
    if part.encrypted_content:
        return "encrypted content", part.encrypted_content
    return None


class ReasoningDecisions:
    """The reasoning decisions of one render, which remember what was already replayed."""

    def __init__(
        self,
        caps: Capabilities,
        model: str | None,
        policy: ReasoningPolicy,
        notes: list[ReasoningNote],
    ) -> None:
        self._caps = caps
        self._model = model
        self._policy = policy
        self._notes = notes
        self._replayed: set[tuple[str, str]] = set()

    def decide(
        self, part: ThinkingPart, seq: int | None, *, after_content: bool
    ) -> Reasoning | Text | None:
        """What ``part`` becomes, recorded in the diagnostics.

        ``after_content``: the assistant message it joins already holds content after
        reasoning (see ``Capabilities.reasoning_leads_message``).
        """
        kept, note = decide_reasoning(part, seq, self._caps, self._model, self._policy)
        if isinstance(kept, Reasoning):
            key = _replay_key(part)
            if key is not None and key in self._replayed:
                kind, value = key
                kept, note = (
                    None,
                    ReasoningNote(
                        seq,
                        part.provider,
                        part.model,
                        "dropped",
                        f"repeats reasoning already replayed in this render (same {kind} "
                        f"{value[:24]!r}); sent once",
                    ),
                )
            elif after_content and self._caps.reasoning_leads_message:
                kept, note = _not_replayed(
                    part,
                    seq,
                    self._policy,
                    f"{self._caps.target} takes reasoning back only at the start of an "
                    "assistant message, and this follows other content of its message",
                )
            elif key is not None:
                self._replayed.add(key)
        self._notes.append(note)
        return kept
