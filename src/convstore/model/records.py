"""What a message carries beside its parts: the integration's own record and token usage.

Invariants:

- `NativeRecord.data` is JSON and round-trips exactly (JSON equality): the store may move inline
  bytes out of it into blobs, but reading it back gives the same JSON. Canonical parts, not the
  native record, drive lifecycles and rendering; the record is what an integration hands back to
  its framework verbatim.
- `Usage` counts are non-negative integers; a provider that does not report a count leaves it 0.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue

from convstore.model._base import CanonicalModel

__all__ = ["NativeRecord", "Usage"]

_TOKENS = Annotated[int, Field(ge=0, le=2**63 - 1)]


class NativeRecord(CanonicalModel):
    """The exact record a framework or application handed in for a message."""

    format: Annotated[str, Field(min_length=1, max_length=64)]
    """Who wrote it and in what shape: ``openai-agents``, ``ai-sdk-ui``, ``pydantic-ai``, ..."""
    data: JsonValue
    """The record as JSON, returned exactly as stored."""


class Usage(CanonicalModel):
    """Tokens a model call consumed, as the provider reported them."""

    input_tokens: _TOKENS = 0
    """Prompt tokens, cached ones included."""
    output_tokens: _TOKENS = 0
    """Generated tokens, reasoning included."""
    cached_tokens: _TOKENS = 0
    """Prompt tokens served from the provider's cache."""
    reasoning_tokens: _TOKENS = 0
    """Generated tokens spent on reasoning."""
