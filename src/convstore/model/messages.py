"""Messages: a role, an ordered list of parts, and where they came from.

Invariants:

- `Role` is a closed enum; each role admits only the part kinds that make sense for it, so a
  malformed message is refused when it is built, not when a provider rejects it:

  ========== ==========================================
  role       parts
  ========== ==========================================
  system     text
  user       text, file
  assistant  text, file, thinking, tool_call
  tool       tool_result
  ========== ==========================================

- Provider-neutral: ``provider``/``model`` record provenance only; nothing here branches on them.
- ``seq``, ``parent_seq``, ``conversation_id`` and ``created_at`` are assigned by the store; a
  message built by hand has none of them. ``id`` is the application's own id for the message,
  kept exactly and unique within its conversation.
- ``native`` is the exact record an integration handed in; the parts stay the canonical truth.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Final, Self

from pydantic import AwareDatetime, Field, JsonValue, model_validator

from convstore.model._base import CanonicalModel
from convstore.model.content import FilePart, TextPart
from convstore.model.outputs import ContentOutput, JsonOutput, ToolOutput
from convstore.model.parts import Part, ThinkingPart, ToolCallPart, ToolResultPart
from convstore.model.records import NativeRecord, Usage
from convstore.model.roles import Role

__all__ = ["Message", "Role"]


_ALLOWED: Final[dict[Role, frozenset[str]]] = {
    Role.SYSTEM: frozenset({"text"}),
    Role.USER: frozenset({"text", "file"}),
    Role.ASSISTANT: frozenset({"text", "file", "thinking", "tool_call"}),
    Role.TOOL: frozenset({"tool_result"}),
}


class Message(CanonicalModel):
    """One message of a conversation."""

    role: Role
    """``system``, ``user``, ``assistant`` or ``tool``."""
    id: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    """The application's own id for the message (a UI message id, an event or entry id)."""
    parts: list[Part] = Field(default_factory=list)
    """Ordered parts."""
    provider: Annotated[str, Field(max_length=64)] | None = None
    """Provider that produced it (assistant messages parsed from a provider)."""
    model: Annotated[str, Field(max_length=255)] | None = None
    """Model that produced it."""
    seq: Annotated[int, Field(ge=1)] | None = None
    """Position in its conversation, strictly increasing; set by the store."""
    created_at: AwareDatetime | None = None
    """When the store wrote it (UTC); set by the store."""
    provider_details: dict[str, JsonValue] | None = None
    """Opaque provider data (response id, finish reason, ...)."""
    native: NativeRecord | None = None
    """The exact record an integration handed in, returned as stored."""
    usage: Usage | None = None
    """Tokens the model call that produced it consumed."""
    parent_seq: Annotated[int, Field(ge=1)] | None = None
    """The message before it on its path (``None``: a root); set by the store."""
    conversation_id: str | None = None
    """The conversation holding it; set by the store."""

    @model_validator(mode="after")
    def _parts_fit_role(self) -> Self:
        allowed = _ALLOWED[self.role]
        for index, part in enumerate(self.parts):
            if part.kind not in allowed:
                raise ValueError(
                    f"a {self.role.value} message cannot hold a {part.kind} part "
                    f"(parts[{index}]); allowed: {', '.join(sorted(allowed))}"
                )
            if isinstance(part, ThinkingPart) and (
                (part.provider is None and self.provider is not None)
                or (part.model is None and self.model is not None)
            ):
                # Thinking is replayed only to the provider (and model) that produced it, so
                # one without its own provenance takes its message's.
                self.parts[index] = part.model_copy(
                    update={
                        "provider": part.provider or self.provider,
                        "model": part.model or self.model,
                    }
                )
        return self

    # Convenience constructors for the common shapes.

    @classmethod
    def system(
        cls,
        text: str,
        *,
        id: str | None = None,
        native: NativeRecord | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """A system prompt."""
        return cls(role=Role.SYSTEM, parts=[TextPart(text=text)], id=id, native=native, usage=usage)

    @classmethod
    def user(
        cls,
        *content: str | FilePart,
        id: str | None = None,
        native: NativeRecord | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """A user message from strings and file parts, in order."""
        return cls(role=Role.USER, parts=_content_parts(content), id=id, native=native, usage=usage)

    @classmethod
    def assistant(
        cls,
        *content: str | FilePart | ThinkingPart | ToolCallPart,
        provider: str | None = None,
        model: str | None = None,
        id: str | None = None,
        native: NativeRecord | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """An assistant message from strings and parts, in order."""
        parts: list[Part] = [TextPart(text=c) if isinstance(c, str) else c for c in content]
        return cls(
            role=Role.ASSISTANT,
            parts=parts,
            provider=provider,
            model=model,
            id=id,
            native=native,
            usage=usage,
        )

    @classmethod
    def tool_result(
        cls,
        call_id: str,
        output: ToolOutput | JsonValue,
        *,
        name: str | None = None,
        id: str | None = None,
        native: NativeRecord | None = None,
        usage: Usage | None = None,
    ) -> Message:
        """A tool message answering one call; a bare value becomes a `JsonOutput`."""
        if not isinstance(output, CanonicalModel):
            output = JsonOutput(value=output)
        return cls(
            role=Role.TOOL,
            parts=[ToolResultPart(call_id=call_id, output=output, name=name)],
            id=id,
            native=native,
            usage=usage,
        )

    @property
    def text(self) -> str:
        """The text parts joined with newlines (thinking excluded)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool-call parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        """The tool-result parts, in order."""
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    @property
    def files(self) -> list[FilePart]:
        """Every file of the message, in order: its own and those inside content results."""
        found: list[FilePart] = []
        for part in self.parts:
            if isinstance(part, FilePart):
                found.append(part)
            elif isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
                found.extend(part.output.files)
        return found


def _content_parts(content: Iterable[str | FilePart]) -> list[Part]:
    return [TextPart(text=c) if isinstance(c, str) else c for c in content]
