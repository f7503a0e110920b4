"""The stable, versioned JSON form of messages.

Stored JSON is a contract: a document written by any released version keeps loading.

Invariants:

- A document is ``{"format": "convstore.messages", "version": N, "messages": [...]}``.
- `load_messages` accepts every version up to `FORMAT_VERSION`; older versions are upgraded
  step by step before validation. A newer version is refused with a clear error instead of
  being half-understood.
- Inline bytes are base64; pending streams cannot be serialised (store them first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from convstore.errors import InvalidMessageError
from convstore.model._base import describe_validation_error
from convstore.model.messages import Message

__all__ = ["FORMAT", "FORMAT_VERSION", "MESSAGES_ADAPTER", "dump_messages", "load_messages"]

FORMAT: Final = "convstore.messages"
FORMAT_VERSION: Final = 1

MESSAGES_ADAPTER: Final = TypeAdapter(list[Message])
"""Validates or dumps a list of messages in one call."""

# version N -> function upgrading a version-N document's message list to version N+1.
_UPGRADES: Final[dict[int, Callable[[list[Any]], list[Any]]]] = {}


def dump_messages(messages: Sequence[Message]) -> dict[str, Any]:
    """The versioned JSON-compatible document for ``messages``."""
    for message in messages:
        for part in message.parts:
            if part.kind == "file" and part.pending is not None:
                raise InvalidMessageError(
                    "a pending file part (from_path/from_stream) must be stored before it can "
                    "be serialised"
                )
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "messages": MESSAGES_ADAPTER.dump_python(list(messages), mode="json", exclude_none=True),
    }


def load_messages(document: Any) -> list[Message]:
    """Messages from a document written by `dump_messages` of this or an older version."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidMessageError(f"not a {FORMAT} document")
    version = document.get("version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise InvalidMessageError(
            f"{FORMAT} version {version!r} is not supported (this convstore reads 1 to "
            f"{FORMAT_VERSION}); upgrade convstore"
        )
    raw = document.get("messages")
    if not isinstance(raw, list):
        raise InvalidMessageError(f"{FORMAT} document has no message list")
    for step in range(version, FORMAT_VERSION):
        raw = _UPGRADES[step](raw)
    try:
        return MESSAGES_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        raise InvalidMessageError(describe_validation_error(exc)) from exc
