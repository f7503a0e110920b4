"""`render`: any history -> a request body fragment one provider accepts, with diagnostics.

Invariants:

- Pure: no I/O. Stored attachments are inlined from the ``attachments`` mapping (SHA-256 ->
  bytes) the caller fetched; `ConversationStore.render` fetches exactly the ones needed.
- Planning (`convstore.transcript.planner`) repairs the history once for every target; the
  target's encoder only maps shapes. Every repair is in ``Rendered.diagnostics``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from convstore.errors import InvalidInputError
from convstore.model import Conversation, Message, ToolDefinition
from convstore.providers import encoder_for
from convstore.transcript.diagnostics import Diagnostics
from convstore.transcript.planner import OrphanPolicy, plan_messages
from convstore.transcript.reasoning import ReasoningPolicy

__all__ = ["Rendered", "render"]


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered request fragment and the record of how it was made."""

    payload: dict[str, Any]
    """The request body fragment (JSON-serialisable): see `render` for its keys per target."""
    diagnostics: Diagnostics
    """Every repair and projection the render made."""


def render(
    source: Conversation | Sequence[Message],
    target: str,
    *,
    model: str | None = None,
    reasoning: ReasoningPolicy = "drop",
    orphan_results: OrphanPolicy = "drop",
    attachments: Mapping[str, bytes] | None = None,
    tools: Sequence[ToolDefinition] | None = None,
    last: int | None = None,
) -> Rendered:
    """Render ``source`` for ``target``.

    Args:
        source: a loaded `Conversation` (its tool-call lifecycles word synthetic results and
            its newest compaction applies) or plain messages.
        target: ``openai-chat``, ``openai-responses``, ``anthropic``, ``gemini``, ``mistral``
            or ``kimi``.
        model: the model the request is for; it selects the capabilities row (Gemini 2 and 3
            differ) and decides which signed reasoning may be replayed.
        reasoning: reasoning the target cannot accept back is dropped, or sent as text.
        orphan_results: results whose call is not in the render are dropped, or sent as text.
        attachments: bytes of stored attachments by SHA-256; one not given is rendered as a
            text note saying it is unavailable.
        tools: tool definitions to send in the target's ``tools`` field, renamed exactly as
            their calls are; each schema constraint the target cannot take is listed in
            ``diagnostics.tools``.
        last: render a window of the newest ``last`` non-system messages, widened back to
            the user message that starts their turn (never empty, never a result without its
            call): the system prompt is kept, a compaction summary stays
            (``diagnostics.window`` says what was kept, cut and widened). Not the same as
            ``ConversationStore.load(last=N)``, which is a window of stored messages.

    Returns:
        `Rendered`. Payload keys: ``messages`` (Chat Completions, Mistral, Kimi; Anthropic,
        plus ``system``), ``input`` plus ``instructions`` (Responses), ``contents`` plus
        ``systemInstruction`` (Gemini), the system keys only when there is a system prompt;
        ``tools`` when tools are given.
    """
    if last is not None and last < 0:
        raise InvalidInputError("last must be zero or positive")
    encode = encoder_for(target)
    if isinstance(source, Conversation):
        messages, tool_calls, compaction = source.messages, source.tool_calls, source.compaction
    else:
        messages, tool_calls, compaction = list(source), [], None
    plan = plan_messages(
        messages,
        target=target,
        model=model,
        tool_calls=tool_calls,
        compaction=compaction,
        attachments=attachments,
        reasoning=reasoning,
        orphan_results=orphan_results,
        tools=tools or (),
        last=last,
    )
    return Rendered(payload=encode(plan), diagnostics=plan.diagnostics)
