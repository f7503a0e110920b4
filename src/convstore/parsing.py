"""`parse` and `parse_response`: provider wire JSON -> canonical messages.

Invariants:

- Histories are accepted as applications stored them, invalid ones included (calls without
  results, results without calls, repeats, same-role runs); malformed JSON is refused with a
  `MalformedPayloadError`, never a ``KeyError``/``TypeError``. So is JSON no provider could
  have received as JSON text: a lone surrogate in a string or key, a NaN or infinite number.
- Everything is kept, including opaque reasoning artefacts and provider ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from convstore.errors import MalformedPayloadError
from convstore.model import Message
from convstore.providers import source_for
from convstore.providers._parsing import check_json_text

__all__ = ["parse", "parse_response"]


def _object(payload: Any, what: str, source: str) -> Mapping[str, Any]:
    if not isinstance(payload, Mapping):
        raise MalformedPayloadError(f"{what} must be a JSON object, got {type(payload).__name__}")
    check_json_text(payload, source)
    return payload


def parse(payload: Mapping[str, Any], source: str, *, model: str | None = None) -> list[Message]:
    """The messages of a provider request payload (a stored history).

    ``source`` is ``openai-chat`` (also for Mistral and Kimi histories), ``openai-responses``,
    ``anthropic`` or ``gemini``. The system prompt (``system``, ``systemInstruction``,
    ``instructions`` or a system/developer message) becomes a ``system`` message.

    ``model`` names the model the history was sent to when the payload does not (Gemini puts
    it in the URL, not the body). It is recorded on assistant messages and their reasoning, so
    signed reasoning can later be replayed to that same model.
    """
    body = _object(payload, "a request payload", source)
    if model is not None and body.get("model") is None:
        body = {**body, "model": model}
    return source_for(source).parse(body)


def parse_response(body: Mapping[str, Any], source: str) -> Message:
    """The assistant message of a provider response body."""
    return source_for(source).parse_response(_object(body, "a response body", source))
