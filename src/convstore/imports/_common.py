"""Pieces every export importer uses: stable ids, times, inline data, files, placeholders."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import Counter
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from pydantic import ValidationError

from convstore.errors import MediaTypeMismatchError
from convstore.limits import MAX_CONVERSATION_ID_LENGTH
from convstore.model import FilePart, Message, Part, Role, TextPart

from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree

__all__ = [
    "asset_part",
    "data_url_part",
    "details",
    "exported_tree",
    "iso_time",
    "list_of",
    "make_message",
    "object_of",
    "placeholder",
    "required_id",
    "stable_id",
    "text_of",
]

_ID_ROOM: Final = MAX_CONVERSATION_ID_LENGTH


def stable_id(prefix: str, source_id: str) -> str:
    """``prefix-source_id``, or a digest of it when that is too long to be an id."""
    whole = f"{prefix}-{source_id}"
    if len(whole) <= _ID_ROOM:
        return whole
    return (
        f"{prefix}-{hashlib.sha256(source_id.encode()).hexdigest()[: _ID_ROOM - len(prefix) - 1]}"
    )


def iso_time(value: Any) -> str | None:
    """An export's time (Unix seconds or milliseconds, or ISO 8601) as ISO 8601 UTC."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 10**11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()
    return None


def details(**values: Any) -> dict[str, Any] | None:
    """The given values without the empty ones (``None``, ``False``, ``""``), or None."""
    kept = {k: v for k, v in values.items() if v is not None and v is not False and v != ""}
    return kept or None


def required_id(value: Any, refusal: str) -> str:
    """An exported conversation's own id; `ConversationShapeError` (``refusal``) if it has none."""
    if not isinstance(value, str) or not value:
        raise ConversationShapeError(refusal)
    return value


def exported_tree(
    prefix: str, imported_from: str, source_id: str, title: str | None, **metadata: Any
) -> ConversationTree:
    """An exported conversation's tree, its nodes to come.

    Its id is stable (`stable_id`), its metadata names the export's format and id, and holds
    the non-empty ``metadata`` given (`details`).
    """
    return ConversationTree(
        id=stable_id(prefix, source_id),
        title=title,
        metadata=details(imported_from=imported_from, source_id=source_id, **metadata) or {},
    )


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def list_of(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one (an export's field of the wrong type)."""
    return value if isinstance(value, list) else []


def object_of(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _decode_base64(data: str) -> bytes | None:
    data = "".join(data.split())
    padded = data + "=" * (-len(data) % 4)
    try:
        if "-" in data or "_" in data:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def data_url_part(url: str, filename: str | None) -> FilePart | None:
    """A ``data:`` URL's bytes as a file part (either base64 alphabet); None if unreadable."""
    header, comma, payload = url.partition(",")
    if not header.startswith("data:") or not comma:
        return None
    declared = header[5:].split(";")[0] or None
    if header.endswith(";base64"):
        data = _decode_base64(payload)
    else:
        data = unquote_to_bytes(payload)
    if data is None:
        return None
    return inline_part(data, declared, filename)


def inline_part(data: bytes, media_type: str | None, filename: str | None) -> FilePart:
    try:
        return FilePart.from_bytes(data, media_type=media_type, filename=filename)
    except MediaTypeMismatchError:
        # The export's label is wrong: the bytes decide.
        return FilePart.from_bytes(data, filename=filename)


def asset_part(
    source: ExportSource,
    asset_id: str,
    reference: str,
    *,
    media_type: str | None,
    filename: str | None,
    unmapped: Counter[str],
) -> FilePart:
    """The export's file for ``asset_id`` (streamed when written), or else ``reference`` as a uri.

    ``media_type`` labels the reference; stored bytes are labelled by what they are.
    """
    name = source.find_asset(asset_id)
    part = source.asset(name, filename) if name is not None else None
    if part is not None:
        return part
    if name is not None:
        unmapped["file over the attachment size limit (kept as a reference)"] += 1
    else:
        unmapped["file not in export (kept as a reference)"] += 1
    return FilePart.model_validate(
        {"uri": reference, "media_type": media_type, "filename": filename}
    )


def placeholder(
    message_id: str, note: str, provider_details: dict[str, Any] | None = None
) -> Message:
    """A marked, empty system message standing for a node that holds no message."""
    return Message(
        role=Role.SYSTEM,
        id=message_id,
        parts=[],
        provider_details={**(provider_details or {}), "hidden": True, "placeholder": note},
    )


def make_message(
    unmapped: Counter[str],
    *,
    role: Role,
    id: str,
    parts: list[Part],
    provider: str | None = None,
    model: str | None = None,
    provider_details: dict[str, Any] | None = None,
) -> Message:
    """The message, or a placeholder (counted) when the parts break the model's rules."""
    try:
        return Message(
            role=role,
            id=id,
            parts=parts,
            provider=provider if role is Role.ASSISTANT else None,
            model=model,
            provider_details=provider_details,
        )
    except ValidationError as exc:
        unmapped["invalid message"] += 1
        kept: list[Part] = [p for p in parts if isinstance(p, TextPart)]
        note = str(exc.errors()[0].get("msg", "invalid"))[:200]
        try:
            return Message(
                role=Role.SYSTEM,
                id=id,
                parts=kept,
                provider_details={
                    **(provider_details or {}),
                    "hidden": True,
                    "placeholder": note,
                },
            )
        except ValidationError:
            return placeholder(id, note, provider_details)
