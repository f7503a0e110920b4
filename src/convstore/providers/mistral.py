"""Render target ``mistral``: Mistral's Chat Completions dialect (``/v1/chat/completions``).

Only an encoder: stored Mistral histories parse with the ``openai-chat`` source, which reads
this dialect's ``document_url`` parts, ``prefix`` flag, ``content: []`` and thinking chunks.

Invariants (sources in ``docs/providers/mistral.md``):

- Tool-call ids arrive projected to exactly nine ASCII letters and digits (the planner's
  ``IdStyle.MISTRAL``); Mistral refuses any other id.
- Assistant ``content`` is always a list of chunks (``[]`` beside tool calls) and every
  assistant message carries ``prefix: false``, as the accepted corpus requests do; a request
  that ends with an assistant message marks it ``prefix: true``, the only way Mistral serves one.
- A user message never follows a tool message directly: Mistral answers
  ``Unexpected role 'user' after role 'tool'``, so an assistant ``"OK"`` goes between them,
  exactly as the accepted corpus requests do.
- Tool messages name their tool; PDFs in user messages are ``document_url`` chunks; replayed
  Magistral reasoning is a ``thinking`` chunk.
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

TARGET: Final = "mistral"


def _media_part(media: Media) -> dict[str, Any] | None:
    if media.media_type.startswith("image/"):
        return image_url_part(media)
    if media.media_type == "application/pdf":
        chunk: dict[str, Any] = {"type": "document_url", "document_url": media.data_url}
        if media.filename:
            chunk["document_name"] = media.filename
        return chunk
    return None


DIALECT: Final = ChatDialect(
    target=TARGET,
    media_part=_media_part,
    assistant_content=AssistantContent.CHUNKS,
    reasoning=ReasoningField.THINKING_CHUNK,
    tool_message_name=True,
    tool_call_index=True,
    prefix_flag=True,
    bridge_after_tool="OK",
)
"""Mistral's differences from OpenAI Chat Completions."""


def encode(plan: Plan) -> dict[str, Any]:
    """The ``{"messages": [...]}`` request fragment for Mistral."""
    return encode_chat(plan, DIALECT)
