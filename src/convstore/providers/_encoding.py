"""Mechanics every provider encoder shares.

Invariants:

- JSON text sent to a provider (tool arguments, JSON results in string-only slots) is compact
  and keeps non-ASCII characters as they are.
- A call whose model-produced arguments were not a JSON object is replayed with its original
  text wherever the target takes arguments as text.
- What an encoder decides on its own (a file sent as a text note, reasoning it drops) is
  recorded in the plan's diagnostics the same way by every encoder (`note_media_as_text`,
  `note_reasoning_dropped`).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from convstore.model import ThinkingPart
from convstore.transcript.diagnostics import Diagnostics, MediaNote, ReasoningNote
from convstore.transcript.plan import (
    Call,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    ResultBody,
    Text,
)

__all__ = [
    "arguments_text",
    "json_text",
    "note_media_as_text",
    "note_reasoning_dropped",
    "result_text",
]


def json_text(value: Any) -> str:
    """Compact JSON text, non-ASCII kept as is.

    The text ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` gives, from the
    Rust serializer pydantic already ships (several times faster on the render path).
    """
    return to_json(value).decode()


def arguments_text(call: Call) -> str:
    """The arguments as the JSON text a Chat/Responses-style target expects."""
    if call.raw_arguments is not None and not call.arguments:
        return call.raw_arguments
    return json_text(call.arguments)


def result_text(body: ResultBody) -> str:
    """A result as one string, for targets whose tool results are text only.

    Strings are sent as they are, other JSON values as JSON text, content parts joined by
    newlines (the planner has already replaced media with text references for such targets).
    """
    match body:
        case JsonBody(value=str() as text):
            return text
        case JsonBody(value=value):
            return json_text(value)
        case ErrorBody(message=message):
            return message
        case ContentBody(parts=parts):
            return "\n".join(p.text if isinstance(p, Text) else _media_reference(p) for p in parts)


def _media_reference(media: Media) -> str:
    return f"[{media.label or media.media_type}]"


def note_media_as_text(
    diagnostics: Diagnostics, media: Media, reason: str, call_id: str | None = None
) -> None:
    """Record a file the encoder sent as a text note instead (``reason`` says why)."""
    diagnostics.media.append(
        MediaNote(None, media.media_type, "text_note", call_id, media.label or None, reason)
    )


def note_reasoning_dropped(diagnostics: Diagnostics, part: ThinkingPart, reason: str) -> None:
    """Record reasoning the encoder left out (``reason`` says why)."""
    diagnostics.reasoning.append(ReasoningNote(None, part.provider, part.model, "dropped", reason))
