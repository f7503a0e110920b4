"""Reading what a caller streams in, one bounded chunk at a time.

Invariants:

- A file or binary stream is read ``CHUNK_SIZE`` bytes at a time, each read in a worker thread:
  at most one chunk is in memory and the event loop never waits on a disk.
- An async iterator is consumed as it yields; its chunks are used as they come.
- Ownership: a `Path` is opened and closed here; a ``BinaryIO`` belongs to the caller and is
  left open; an async generator is closed (``aclose``) when reading stops, so a refusal half-way
  through releases whatever the caller's generator holds.
- A `Path` or ``BinaryIO`` that cannot be read is bad input (`InvalidInputError`); exceptions
  raised by a caller's own async iterator propagate unchanged, since they are the caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable
from pathlib import Path
from typing import BinaryIO, Final, TypeAlias

from convstore.errors import InvalidInputError

CHUNK_SIZE: Final = 1024 * 1024

BlobSource: TypeAlias = Path | AsyncIterable[bytes] | BinaryIO
"""What `BlobStore.put_stream` accepts."""


def iter_chunks(source: BlobSource, chunk_size: int = CHUNK_SIZE) -> AsyncGenerator[bytes, None]:
    """The bytes of ``source`` as chunks; close the generator (``aclosing``) when done with it."""
    if isinstance(source, Path):
        return _read_path(source, chunk_size)
    if isinstance(source, AsyncIterable):
        return _iterate(source)
    if callable(getattr(source, "read", None)):
        return _read_stream(source, chunk_size)
    raise InvalidInputError(
        f"cannot stream from {type(source).__name__}: pass a Path, a binary file object or an "
        "async iterable of bytes"
    )


async def _read_path(path: Path, chunk_size: int) -> AsyncGenerator[bytes, None]:
    try:
        stream = await asyncio.to_thread(path.open, "rb")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    try:
        while chunk := await asyncio.to_thread(_read, stream, chunk_size, str(path)):
            yield chunk
    finally:
        await asyncio.to_thread(stream.close)


async def _read_stream(stream: BinaryIO, chunk_size: int) -> AsyncGenerator[bytes, None]:
    while chunk := await asyncio.to_thread(_read, stream, chunk_size, repr(stream)):
        yield chunk


def _read(stream: BinaryIO, chunk_size: int, name: str) -> bytes:
    try:
        chunk = stream.read(chunk_size)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {name}: {exc}") from exc
    if not isinstance(chunk, bytes):
        raise InvalidInputError(f"{name} is not a binary stream: read() returned {type(chunk)}")
    return chunk


async def _iterate(source: AsyncIterable[bytes]) -> AsyncGenerator[bytes, None]:
    iterator = aiter(source)
    try:
        async for chunk in iterator:
            if not isinstance(chunk, bytes | bytearray):
                raise InvalidInputError(f"a blob stream must yield bytes, not {type(chunk)}")
            yield chunk
    finally:
        if isinstance(iterator, AsyncGenerator):
            await iterator.aclose()
