"""Arguments of `ConversationStore` methods: turned into model values or refused, up front.

Invariants:

- Nothing here touches storage: a refused argument costs no round trip and writes nothing.
- What is refused raises `InvalidInputError` / `InvalidMessageError` (``ConvstoreError``s).
- Cheap to import (every store method checks its ids here, searching and listing too): the
  pydantic models and validators load on first use, by the functions that build model values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import ValidationError

from convstore.db import sqlite_path
from convstore.errors import InvalidInputError, InvalidMessageError
from convstore.limits import (
    MAX_CONVERSATION_ID_LENGTH,
    MAX_METADATA_ENTRIES,
    check_json_object,
    check_key,
    check_metadata_size,
    check_text,
    check_title,
)
from convstore.store.ids import new_id

if TYPE_CHECKING:
    from pydantic import JsonValue, TypeAdapter

    from convstore.model import Message, ToolOutput

__all__ = [
    "UNSET",
    "as_messages",
    "as_output",
    "check_ref",
    "default_blobs",
    "json_object",
    "metadata_object",
    "new_header",
    "now",
    "state_patch",
    "state_patches",
    "stored_object",
]


class _Unset:
    """The default of an argument that was not given (``None`` is a value: no title)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@cache
def _metadata_adapter() -> TypeAdapter[dict[str, JsonValue]]:
    from pydantic import JsonValue, TypeAdapter

    return TypeAdapter(dict[str, JsonValue])


@cache
def _message_adapter() -> TypeAdapter[Message]:
    from pydantic import TypeAdapter

    from convstore.model import Message

    return TypeAdapter(Message)


@cache
def _output_adapter() -> TypeAdapter[ToolOutput]:
    from pydantic import TypeAdapter

    from convstore.model import ToolOutput

    adapter: TypeAdapter[ToolOutput] = TypeAdapter(ToolOutput)
    return adapter


def check_ref(conversation_id: str | None, tenant: str | None) -> None:
    """Refuse ids no database can look up alike (a longer one simply is not found)."""
    check_text(conversation_id, "conversation id")
    check_text(tenant, "tenant")


def new_header(
    cid: str | None,
    title: str | None,
    tenant: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[str, dict[str, JsonValue]]:
    """The id (``None``: a new one) and checked metadata of a conversation about to be created."""
    meta = metadata_object(metadata)
    cid = cid if cid is not None else new_id()
    check_text(cid, "conversation id", max_length=MAX_CONVERSATION_ID_LENGTH)
    check_title(title)
    check_key(tenant, "tenant")
    return cid, meta


def state_patches(
    conversation_id: str, patches: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, JsonValue]]:
    """`append`'s ``state_patches``, checked: merge patches of *other* conversations, by id."""
    if not patches:
        return {}
    if not isinstance(patches, Mapping):
        raise InvalidInputError("state_patches maps conversation ids to merge patches")
    checked: dict[str, dict[str, JsonValue]] = {}
    for cid, patch in patches.items():
        check_ref(cid, None)
        if cid == conversation_id:
            raise InvalidInputError(
                "state_patches patch other conversations; use update_state for this one"
            )
        checked[cid] = state_patch(patch, f"state patch of {cid!r}")
    return checked


def state_patch(patch: Any, what: str = "state patch") -> dict[str, JsonValue]:
    """An RFC 7396 merge patch of a conversation's state, checked."""
    if not isinstance(patch, Mapping):
        raise InvalidInputError("a state patch is a JSON object (RFC 7396 merge patch)")
    return stored_object(patch, what)


def now() -> datetime:
    """The current time, aware UTC: what the store stamps its rows with."""
    return datetime.now(UTC)


def default_blobs(url: str) -> str:
    """The blob location of a store given none: beside the SQLite file, else the cwd's."""
    database = sqlite_path(url) if url.startswith("sqlite") else None
    if database is not None:
        return str(database.parent / "convstore-blobs")
    if url.startswith("sqlite"):  # in-memory database: in-memory blobs, unique to this store
        return f"memory://convstore-{new_id().lower()}"
    return str(Path.cwd() / "convstore-blobs")


def json_object(value: Any, what: str) -> dict[str, JsonValue]:
    """``value`` as a JSON object (``None``: empty), or `InvalidInputError` naming ``what``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a JSON object")
    try:
        return _metadata_adapter().validate_python(dict(value))
    except (ValidationError, TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a JSON object: {exc}") from exc


def stored_object(value: Any, what: str) -> dict[str, JsonValue]:
    """`json_object`, also refused if a database would store it differently (metadata, state)."""
    checked = json_object(value, what)
    check_json_object(checked, what)
    return checked


def metadata_object(value: Any) -> dict[str, JsonValue]:
    """A conversation's metadata, checked: `stored_object` within the metadata size limits."""
    if isinstance(value, Mapping) and len(value) > MAX_METADATA_ENTRIES:
        check_metadata_size(value)  # refused before anything is validated
    checked = stored_object(value, "metadata")
    check_metadata_size(checked)
    return checked


def as_messages(messages: Message | Mapping[str, Any] | Sequence[Any]) -> list[Message]:
    """What `append` was given as a list of validated messages."""
    from convstore.model import Message
    from convstore.model._base import describe_validation_error

    if isinstance(messages, Message):
        return [messages]
    if isinstance(messages, Mapping):
        messages = [messages]
    if isinstance(messages, str | bytes) or not isinstance(messages, Iterable):
        raise InvalidMessageError(
            "append takes a Message, a mapping or a sequence of them, "
            f"not {type(messages).__name__}"
        )
    out = []
    for item in messages:
        if isinstance(item, Message):
            out.append(item)
            continue
        try:
            out.append(_message_adapter().validate_python(item))
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc
    return out


_OUTPUT_KINDS = frozenset({"json", "content", "error"})


def as_output(output: Any) -> ToolOutput:
    """A typed output from what `complete_tool_call` was given (see there)."""
    from convstore.model import ContentOutput, ErrorOutput, JsonOutput
    from convstore.model._base import describe_validation_error

    if isinstance(output, JsonOutput | ContentOutput | ErrorOutput):
        return output
    if isinstance(output, Mapping) and output.get("kind") in _OUTPUT_KINDS:
        try:
            return _output_adapter().validate_python(output)
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc
    if isinstance(output, Mapping):
        output = dict(output)
    return JsonOutput(value=output)
