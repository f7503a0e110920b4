"""Content parts that can appear both in messages and inside a `ContentOutput`: text and files.

Invariants:

- A `FilePart` has exactly one source: inline ``data`` not yet stored, a stored
  ``attachment`` (content hash and size), an external ``uri`` kept as a reference, or a pending
  stream (`FilePart.from_path` / `FilePart.from_stream`) that the store consumes on append.
- ``media_type`` is always a normalised string. For inline bytes it is checked against the
  bytes' signature at construction: a contradiction is refused, an undeclared type is sniffed.
- Filenames are metadata only; storage keys derive from the bytes alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import Field, JsonValue, PrivateAttr, ValidationInfo, model_validator

from convstore.errors import MediaTypeMismatchError
from convstore.media_types import (
    OCTET_STREAM,
    SNIFF_PREFIX_BYTES,
    guess_from_name,
    normalize_media_type,
    resolve_media_type,
)
from convstore.model._base import CanonicalModel

__all__ = ["AttachmentRef", "FilePart", "PendingFile", "PendingSource", "TextPart"]

_SHA256_HEX = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class TextPart(CanonicalModel):
    """Plain text."""

    kind: Literal["text"] = "text"
    """Discriminator."""
    text: str
    """The text itself; may be empty in stored histories (renderers drop empty text)."""
    provider_details: dict[str, JsonValue] | None = None
    """Opaque provider data needed for exact replay (e.g. a Responses message item id)."""


class AttachmentRef(CanonicalModel):
    """A reference to bytes held in the blob store, addressed by their SHA-256."""

    sha256: _SHA256_HEX
    """Lower-case hex SHA-256 of the bytes."""
    size: Annotated[int, Field(ge=0)]
    """Length of the bytes."""


_PENDING = "convstore.pending"

PendingSource = Path | AsyncIterable[bytes]
"""What a pending `FilePart` streams from when the store consumes it."""


@dataclass(frozen=True, slots=True)
class PendingFile:
    """The stream behind a pending `FilePart`, and the media type the caller declared."""

    source: PendingSource
    declared_media_type: str | None
    """What the caller said (checked against the bytes); ``None`` lets the bytes decide."""


class FilePart(CanonicalModel):
    """An image, document, audio clip or any other file."""

    kind: Literal["file"] = "file"
    """Discriminator."""
    media_type: Annotated[str, Field(max_length=255)] = OCTET_STREAM
    """Normalised media type, e.g. ``image/png``."""
    filename: str | None = None
    """Name to show a model or a person; never used for storage."""
    data: bytes | None = None
    """Inline bytes not yet stored; ``append`` moves them into the blob store."""
    attachment: AttachmentRef | None = None
    """Stored bytes, by content hash."""
    uri: str | None = None
    """External location (``https://``, ``gs://``, ``s3://``) kept as a reference, never fetched."""

    _pending: PendingFile | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _check_source_and_type(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        sources = [k for k in ("data", "attachment", "uri") if values.get(k) is not None]
        if len(sources) > 1:
            raise ValueError(f"a file part has exactly one source, got {', '.join(sources)}")
        declared = values.get("media_type")
        data = values.get("data")
        resolved: str | None
        if isinstance(data, bytes | bytearray | memoryview):
            resolved = resolve_media_type(declared, bytes(data[:SNIFF_PREFIX_BYTES]))
        elif isinstance(declared, str):
            resolved = normalize_media_type(declared)
        elif isinstance(values.get("uri"), str):
            resolved = guess_from_name(values["uri"])
        else:
            resolved = declared
        return {**values, "media_type": resolved if resolved is not None else OCTET_STREAM}

    @model_validator(mode="after")
    def _require_a_source(self, info: ValidationInfo) -> Self:
        no_source = self.data is None and self.attachment is None and self.uri is None
        # A pending part gets its stream right after construction (see `_pending_part`), which
        # the context vouches for; when nested later, the stream itself is the source.
        pending = self._pending is not None or (info.context or {}).get(_PENDING)
        if no_source and not pending:
            raise ValueError("a file part needs data, an attachment or a uri")
        return self

    @classmethod
    def from_bytes(
        cls, data: bytes, *, media_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        """Inline bytes, stored as a blob when the message is appended.

        Raises `MediaTypeMismatchError` when ``media_type`` contradicts the bytes; sniffs the
        type when ``media_type`` is omitted.
        """
        try:
            resolved = resolve_media_type(media_type, data[:SNIFF_PREFIX_BYTES])
        except ValueError as exc:
            raise MediaTypeMismatchError(str(exc)) from exc
        return cls(data=data, media_type=resolved, filename=filename)

    @classmethod
    def from_uri(
        cls, uri: str, *, media_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        """A reference to a file held elsewhere; convstore never downloads it."""
        return cls.model_validate({"uri": uri, "media_type": media_type, "filename": filename})

    @classmethod
    def from_path(
        cls, path: str | Path, *, media_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        """A local file streamed into the blob store on append, never held in memory whole.

        The media type is taken from ``media_type`` or the file's extension until the store
        reads the first bytes, which then confirm or correct it.
        """
        path = Path(path)
        return cls._pending_part(
            path,
            media_type,
            guess_from_name(path.name),
            path.name if filename is None else filename,
        )

    @classmethod
    def from_stream(
        cls,
        chunks: AsyncIterable[bytes],
        *,
        media_type: str | None = None,
        filename: str | None = None,
    ) -> FilePart:
        """Bytes from an async iterator, streamed into the blob store on append (once)."""
        return cls._pending_part(chunks, media_type, None, filename)

    @classmethod
    def _pending_part(
        cls,
        source: PendingSource,
        declared: str | None,
        guessed: str | None,
        filename: str | None,
    ) -> FilePart:
        part = cls.model_validate(
            {"media_type": declared or guessed, "filename": filename}, context={_PENDING: True}
        )
        part._pending = PendingFile(source, normalize_media_type(declared) if declared else None)
        return part

    @property
    def pending(self) -> PendingFile | None:
        """The stream a pending part will be stored from, if it is one."""
        return self._pending

    @property
    def sha256(self) -> str | None:
        """The content hash: of the stored attachment, or computed from inline bytes."""
        if self.attachment is not None:
            return self.attachment.sha256
        if self.data is not None:
            return hashlib.sha256(self.data).hexdigest()
        return None
