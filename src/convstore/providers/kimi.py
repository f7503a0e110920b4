"""Render target ``kimi``: Moonshot's Kimi Chat Completions dialect.

Only an encoder: stored Kimi histories parse with the ``openai-chat`` source, which reads
``functions.{name}:{index}`` ids and ``reasoning_content``.

Invariants (sources in ``docs/providers/kimi.md``):

- Tool-call ids arrive projected as ``functions.{name}:{index}`` with the index counting calls
  across the transcript (the planner's ``IdStyle.KIMI``), the form Kimi models emit.
- Kimi reasoning is replayed in ``reasoning_content``. With thinking enabled Kimi refuses an
  assistant message with tool calls that lacks it (``thinking is enabled but reasoning_content
  is missing in assistant tool call message``) and treats ``""`` as missing, so such a message
  without reasoning of Kimi's own (from another provider, or none) gets a single space.
- Tool messages name their tool; user messages carry images only.
"""

from __future__ import annotations

from typing import Any, Final

from convstore.providers._chat import (
    AssistantContent,
    ChatDialect,
    ReasoningField,
    encode_chat,
    image_url_part,
)
from convstore.transcript.plan import Media, Plan

__all__ = ["DIALECT", "TARGET", "encode"]

TARGET: Final = "kimi"


def _media_part(media: Media) -> dict[str, Any] | None:
    if media.media_type.startswith("image/"):
        return image_url_part(media)
    return None


DIALECT: Final = ChatDialect(
    target=TARGET,
    media_part=_media_part,
    assistant_content=AssistantContent.STRING,
    reasoning=ReasoningField.REASONING_CONTENT,
    tool_message_name=True,
    call_reasoning_placeholder=" ",
)
"""Kimi's differences from OpenAI Chat Completions."""


def encode(plan: Plan) -> dict[str, Any]:
    """The ``{"messages": [...]}`` request fragment for Kimi."""
    return encode_chat(plan, DIALECT)
