"""Wire facts shared by OpenAI's two formats (Chat Completions and Responses).

Invariants: data only; each fact is used by both `openai_chat` and `openai_responses`.
"""

from __future__ import annotations

from typing import Final

__all__ = ["AUDIO_FORMATS", "FILE_ID_PREFIX"]

AUDIO_FORMATS: Final[dict[str, str]] = {"wav": "audio/wav", "mp3": "audio/mpeg"}
"""``input_audio.format`` values and their media types (OpenAI audio input guide)."""

FILE_ID_PREFIX: Final = "openai://files/"
"""How a Files API reference (``file_id``) is kept as a `FilePart` URI, and recognised again."""
