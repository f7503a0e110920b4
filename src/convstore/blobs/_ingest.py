"""Checking bytes on their way into storage: size limit, content hash and media type.

Invariants:

- The size limit is checked before a chunk is hashed or written: the chunk that crosses it
  raises `AttachmentTooLargeError`, and the caller stops reading there.
- The media type is decided once, from the first ``SNIFF_PREFIX_BYTES`` bytes (or all of them
  if there are fewer) through `convstore.media_types.resolve_media_type`; a contradiction raises
  `MediaTypeMismatchError`. A streamed put reads only that far before it decides, so a refused
  stream has written nothing.
- The digest covers every byte fed, in order. Chunks larger than ``INLINE_HASH_LIMIT`` are
  hashed in a worker thread (hashlib releases the GIL) so a large put or get does not stall the
  event loop; smaller ones are hashed in place, where a thread hop would cost more than it saves.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Final

from convstore.blobs._records import StoredBlob
from convstore.errors import AttachmentTooLargeError, MediaTypeMismatchError
from convstore.media_types import SNIFF_PREFIX_BYTES, resolve_media_type

INLINE_HASH_LIMIT: Final = 1024 * 1024


async def update_digest(digest: hashlib._Hash, data: bytes) -> None:
    """Feed ``data`` to ``digest``, off the event loop when it is large."""
    if len(data) > INLINE_HASH_LIMIT:
        await asyncio.to_thread(digest.update, data)
    else:
        digest.update(data)


async def sha256_hex(data: bytes) -> str:
    """The lower-case hex SHA-256 of ``data``."""
    digest = hashlib.sha256()
    await update_digest(digest, data)
    return digest.hexdigest()


class Ingest:
    """Counts, hashes and sniffs the bytes of one put."""

    def __init__(self, *, max_size: int, declared_media_type: str | None) -> None:
        self._max_size = max_size
        self._declared = declared_media_type
        self._digest = hashlib.sha256()
        self._size = 0
        self._prefix = bytearray()
        self._media_type: str | None = None

    async def feed(self, chunk: bytes) -> None:
        """Account for the next chunk; raises `AttachmentTooLargeError` past the limit."""
        self._size += len(chunk)
        if self._size > self._max_size:
            raise AttachmentTooLargeError(
                f"attachment exceeds the size limit of {self._max_size} bytes"
            )
        missing = SNIFF_PREFIX_BYTES - len(self._prefix)
        if missing > 0:
            self._prefix += chunk[:missing]
        await update_digest(self._digest, chunk)

    async def head(self, chunks: AsyncIterator[bytes]) -> list[bytes]:
        """Read just enough of ``chunks`` to decide the media type, and decide it.

        Returns the chunks read, to be written first; raises `MediaTypeMismatchError` (or
        `AttachmentTooLargeError`) before anything is written.
        """
        head: list[bytes] = []
        async for chunk in chunks:
            await self.feed(chunk)
            head.append(chunk)
            if len(self._prefix) >= SNIFF_PREFIX_BYTES:
                break
        self.media_type()
        return head

    async def rest(
        self, head: list[bytes], chunks: AsyncIterator[bytes]
    ) -> AsyncGenerator[bytes, None]:
        """The head chunks (already fed), then the remaining chunks, each fed as it passes."""
        while head:
            # Popping lets each head chunk be freed once written.
            yield head.pop(0)
        async for chunk in chunks:
            await self.feed(chunk)
            yield chunk

    def media_type(self) -> str:
        """The resolved media type; raises `MediaTypeMismatchError` on a contradiction."""
        if self._media_type is None:
            try:
                self._media_type = resolve_media_type(self._declared, bytes(self._prefix))
            except ValueError as exc:
                raise MediaTypeMismatchError(str(exc)) from exc
        return self._media_type

    def result(self) -> StoredBlob:
        """What was fed, as the blob it becomes."""
        return StoredBlob(
            sha256=self._digest.hexdigest(), size=self._size, media_type=self.media_type()
        )
