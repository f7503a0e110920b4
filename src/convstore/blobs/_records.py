"""The values the blob layer hands back: what a put stored, found, or deleted.

They are plain frozen values: they carry no storage handle, so they can be logged, compared and
passed across layers (the store turns a `StoredBlob` into an ``AttachmentRef`` row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """Bytes that are now in the blob store, by content address."""

    sha256: str
    """Lower-case hex SHA-256 of the bytes; with the algorithm, it is the blob's key."""
    size: int
    """Length of the bytes."""
    media_type: str
    """The declared media type, normalised, or the one sniffed from the bytes."""
    written_at: datetime | None = field(default=None, compare=False)
    """The object's modified time right after this put (the storage's clock); not part of
    the blob's identity."""


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """One blob found in storage, as garbage collection and consistency checks see it."""

    sha256: str
    """Lower-case hex SHA-256 the object is stored under (not re-computed by a listing)."""
    size: int
    """Length of the stored object."""
    modified: datetime
    """UTC-aware time the object was last written or touched; gc judges age by it."""


@dataclass(frozen=True, slots=True)
class BlobDeletion:
    """What `BlobStore.delete_stale` deleted."""

    deleted: list[str]
    """Digests of the blobs deleted, in the order asked."""
    failure: BaseException | None = None
    """The first deletion that failed (a `BlobStorageError`, or the cancellation), if any."""
