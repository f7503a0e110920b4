"""Tool definitions: what a request offers the model to call, independent of any provider.

Invariants:

- ``name`` is the canonical tool name, the one tool calls in the history use; a render projects
  it for the target exactly as it projects those calls' names.
- ``parameters`` is a JSON Schema object as the application wrote it (any draft-2020-12
  construct); each target's renderer rewrites it into the subset that target accepts and lists
  every constraint it could not keep in the render's diagnostics.
- ``strict`` is the OpenAI strict-mode flag: ``None`` when the request did not say.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue, TypeAdapter

from convstore.model._base import CanonicalModel

__all__ = ["TOOL_DEFINITIONS", "ToolDefinition"]


def _empty_object_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class ToolDefinition(CanonicalModel):
    """One function tool a request offers."""

    name: Annotated[str, Field(min_length=1, max_length=255)]
    """Canonical tool name (calls in the history use it)."""
    description: str | None = None
    """What the tool does, for the model."""
    parameters: dict[str, JsonValue] = Field(default_factory=_empty_object_schema)
    """JSON Schema of the arguments object."""
    strict: bool | None = None
    """OpenAI strict mode (``None``: not stated)."""


TOOL_DEFINITIONS: TypeAdapter[list[ToolDefinition]] = TypeAdapter(list[ToolDefinition])
"""Validates and dumps a list of tool definitions (the JSON form the store and CLI keep)."""
