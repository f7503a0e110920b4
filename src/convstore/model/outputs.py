"""Typed tool outputs and the `result_kind` that names which one a result holds.

Invariants:

- Exactly three kinds: ``json`` (any JSON value), ``content`` (ordered text and file parts, for
  multimodal results) and ``error``. The kind is the output's discriminator, and the store keeps
  it in its own column, so a loaded result rehydrates into the same class that was stored.
- An `ErrorOutput` is the only way to mark a result as failed: ``status == "error"`` follows
  from it, never from a separate flag.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, JsonValue

from convstore.model._base import CanonicalModel
from convstore.model.content import FilePart, TextPart

__all__ = ["ContentOutput", "ErrorOutput", "JsonOutput", "ResultKind", "ToolOutput"]


class ResultKind(StrEnum):
    """Which typed output a tool result holds."""

    JSON = "json"
    CONTENT = "content"
    ERROR = "error"


class JsonOutput(CanonicalModel):
    """A tool result that is any JSON value (the default kind)."""

    kind: Literal["json"] = "json"
    """Discriminator; equals `ResultKind.JSON`."""
    value: JsonValue
    """The value, as the tool returned it."""


class ContentOutput(CanonicalModel):
    """A multimodal tool result: text and files, in the order the tool produced them."""

    kind: Literal["content"] = "content"
    """Discriminator; equals `ResultKind.CONTENT`."""
    parts: list[Annotated[TextPart | FilePart, Field(discriminator="kind")]]
    """Ordered text and file parts."""

    @property
    def files(self) -> list[FilePart]:
        """The file parts, in order."""
        return [p for p in self.parts if isinstance(p, FilePart)]


class ErrorOutput(CanonicalModel):
    """A tool that failed, with a message a model can read."""

    kind: Literal["error"] = "error"
    """Discriminator; equals `ResultKind.ERROR`."""
    message: str
    """What went wrong."""
    details: JsonValue = None
    """Optional structured detail (exception type, provider payload)."""


ToolOutput = Annotated[JsonOutput | ContentOutput | ErrorOutput, Field(discriminator="kind")]
"""Any tool output, discriminated by ``kind``."""
