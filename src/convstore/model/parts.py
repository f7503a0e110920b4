"""Message parts: text, files, thinking, tool calls and tool results, as one tagged union.

Invariants:

- Every part has a literal ``kind``; `Part` is discriminated on it, so stored JSON maps to
  exactly one class.
- A tool call's ``id`` is canonical: unique within its conversation. The provider's own id
  travels separately (``provider_id``) because providers reuse ids across rounds and impose
  formats; renderers project ids per target.
- ``arguments`` is always a JSON object. Arguments a model produced that were not a JSON object
  are kept verbatim in ``raw_arguments`` (with ``arguments == {}``) so nothing is lost.
- Thinking keeps every opaque replay artefact a provider hands out; whether to send it back is
  decided at render time, never by dropping it on the way in.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from convstore.model._base import CanonicalModel
from convstore.model.content import FilePart, TextPart
from convstore.model.outputs import ResultKind, ToolOutput

__all__ = ["Part", "ThinkingPart", "ToolCallPart", "ToolResultPart"]


class ThinkingPart(CanonicalModel):
    """Model reasoning, with the provider artefacts needed to replay it to its origin."""

    kind: Literal["thinking"] = "thinking"
    """Discriminator."""
    text: str = ""
    """Readable reasoning (Anthropic thinking, joined OpenAI summaries, Gemini thought text,
    DeepSeek/Kimi ``reasoning_content``); empty when the provider only gave opaque data."""
    provider: str | None = None
    """Provider that produced it (``anthropic``, ``openai``, ``gemini``, ``kimi``, ...)."""
    model: str | None = None
    """Model that produced it; Anthropic and Gemini signatures are only valid for that model."""
    signature: str | None = None
    """Anthropic thinking signature, or Gemini ``thoughtSignature``."""
    redacted_data: str | None = None
    """Anthropic ``redacted_thinking`` data (encrypted; no readable text)."""
    reasoning_id: str | None = None
    """OpenAI Responses reasoning item id (``rs_...``)."""
    encrypted_content: str | None = None
    """OpenAI Responses ``encrypted_content``."""
    summary: list[str] | None = None
    """OpenAI Responses summary texts, kept separately for exact replay."""
    rides_on: Literal["text", "tool_call", "file"] | None = None
    """Gemini: the signature rode on the next part of this kind rather than on a thought part;
    the thinking part sits immediately before that carrier."""
    provider_details: dict[str, JsonValue] | None = None
    """Other opaque provider data."""

    @property
    def signed(self) -> bool:
        """Whether it carries artefacts that only its origin provider can verify."""
        return bool(self.signature or self.redacted_data or self.encrypted_content)


class ToolCallPart(CanonicalModel):
    """A model asking for a tool to be run."""

    kind: Literal["tool_call"] = "tool_call"
    """Discriminator."""
    id: Annotated[str, Field(min_length=1, max_length=255)]
    """Canonical call id, unique within the conversation."""
    name: Annotated[str, Field(min_length=1, max_length=255)]
    """Tool name as the model used it (renderers project it for targets that restrict names)."""
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    """Arguments as a JSON object."""
    raw_arguments: str | None = None
    """The provider's argument text when it was not a JSON object (then ``arguments == {}``)."""
    provider_id: Annotated[str, Field(max_length=255)] | None = None
    """The id the provider gave this call, when it differs from ``id`` or must be replayed."""
    provider_details: dict[str, JsonValue] | None = None
    """Opaque provider data (e.g. a Responses ``fc_`` item id)."""


class ToolResultPart(CanonicalModel):
    """The outcome of a tool call."""

    kind: Literal["tool_result"] = "tool_result"
    """Discriminator."""
    call_id: Annotated[str, Field(min_length=1, max_length=255)]
    """Canonical id of the call this answers."""
    output: ToolOutput
    """The typed output."""
    name: str | None = None
    """Tool name, when known (some targets need it even for a result without its call)."""
    synthetic: bool = False
    """Made by convstore rather than by a tool (e.g. a completion for an interrupted call)."""

    @property
    def result_kind(self) -> ResultKind:
        """``json``, ``content`` or ``error``: which output class this result holds."""
        return ResultKind(self.output.kind)

    @property
    def is_error(self) -> bool:
        """Whether the tool failed."""
        return self.output.kind == "error"


Part = Annotated[
    TextPart | FilePart | ThinkingPart | ToolCallPart | ToolResultPart,
    Field(discriminator="kind"),
]
"""Any message part, discriminated by ``kind``."""
