"""The storage contract the blob store is written against, over any fsspec filesystem.

`BlobBackend` is the only code that talks to fsspec. Subclasses differ in how they drive it (worker
threads for synchronous filesystems, coroutine methods for asynchronous ones, see `_adapter`)
and in the few operations a backend can do better than the generic way (atomic rename, touch,
streamed multipart upload).

Invariants every backend keeps:

- Errors: a method either succeeds, reports a missing object as documented (``None``,
  ``False``, `AttachmentNotFoundError`), or raises `BlobStorageError` chained to the backend's
  own exception. No ``OSError``, ``KeyError`` or botocore error escapes (`translated`).
- Atomic publication: bytes reach a blob's path only through `publish` (a move of a completed
  staging object) or `write`, so a reader sees the whole blob or none. A failed write removes
  its staging object, best effort.
- Freshness: after `write`, `publish` or a successful `touch`, the object's modified time is
  the present; `BlobInfo.modified` is read from it (`modified_time`).
- Listings are never served from a cache: other processes write and delete in the same storage.
- Conditional deletion (`remove_stale`): an object is deleted only if its modified time, read
  immediately before the deletion, is older than the caller's bound; every path is attempted
  and the result names exactly the objects deleted, even when some deletions failed.
- Bounded waits: every request to the storage (one filesystem call, one chunk or part written,
  one S3 API call) is given ``timeout`` seconds (`DEFAULT_TIMEOUT` unless configured); one that
  does not answer in time is abandoned and raises `BlobStorageError` naming the operation and
  the object. On an asynchronous filesystem (S3, GCS, ...) the request is cancelled; on a
  synchronous one its worker thread cannot be interrupted and finishes whenever the filesystem
  returns, but the caller is answered on time.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol, TypeVar

from convstore.errors import AttachmentNotFoundError, BlobStorageError, ConvstoreError

_log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds one storage request may take before it is abandoned (``None``: no limit)."""

REMOVAL_CONCURRENCY: Final = 16
"""Deletions (or, on a threaded backend, runs of deletions) `remove_stale` keeps in flight."""


class TimedOut(Exception):  # noqa: N818 (internal signal, translated by `translated`)
    """A storage request did not answer within the backend's timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


async def bounded(seconds: float | None, request: Awaitable[T]) -> T:
    """``await request``, abandoning it with `TimedOut` after ``seconds``."""
    if seconds is None:
        return await request
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await request
    except TimeoutError as exc:
        if not deadline.expired():
            raise  # the backend's own timeout, translated like any other failure
        raise TimedOut(seconds) from exc


# Where each backend reports when an object was last written, in order of preference:
# local files (`mtime`), S3 (`LastModified`), Azure (`last_modified`), GCS (`updated`), and
# memory://, which replaces the whole file object on every write, so creation is last write.
_MODIFIED_FIELDS: Final = ("mtime", "LastModified", "last_modified", "updated", "created")


@dataclass(frozen=True, slots=True)
class ObjectStat:
    """One stored object: its backend path, size and last write."""

    path: str
    size: int
    modified: datetime


@dataclass(frozen=True, slots=True)
class Listing:
    """One directory level: sub-directory paths and the objects directly inside."""

    dirs: list[str]
    files: list[ObjectStat]


@dataclass(frozen=True, slots=True)
class Removal:
    """What `BlobBackend.remove_stale` did."""

    removed: list[str]
    """The paths deleted, in the order given."""
    failure: BaseException | None = None
    """The first failure (a `BlobStorageError`, or the cancellation), if any deletion failed."""


class Writer(Protocol):
    """An object being written at a staging path."""

    async def write(self, data: bytes) -> None:
        """Append ``data``."""

    async def commit(self) -> None:
        """Finish: the staging object now holds every byte written."""

    async def discard(self) -> None:
        """Leave nothing at the staging path, whether or not `commit` ran."""


@contextmanager
def translated(action: str, url: str) -> Iterator[None]:
    """Turn any backend exception raised inside into `BlobStorageError`, keeping typed ones."""
    try:
        yield
    except ConvstoreError:
        raise
    except Exception as exc:
        raise storage_error(action, url, exc) from exc


def storage_error(action: str, url: str, exc: Exception) -> BlobStorageError:
    """The `BlobStorageError` `translated` raises, from ``exc``, for a backend's own error."""
    if isinstance(exc, TimedOut):
        return BlobStorageError(
            f"blob storage did not answer within {exc.seconds:g} s to {action} {url} "
            "(the blob store's timeout; raise it for slow storage)"
        )
    return BlobStorageError(f"blob storage failed to {action} {url}: {type(exc).__name__}: {exc}")


def modified_time(entry: Mapping[str, Any]) -> datetime:
    """The UTC time an fsspec info/listing entry says its object was last written."""
    for field in _MODIFIED_FIELDS:
        value = entry.get(field)
        if value is None:
            continue
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if isinstance(value, datetime):
            # Backends that report naive times (memory:// in old fsspec) mean UTC.
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
    # Without a time, gc could not judge age; refusing is safer than guessing "old".
    raise BlobStorageError(f"blob storage reports no modification time for {entry.get('name')!r}")


class BlobBackend(ABC):
    """Blob-store operations on one fsspec filesystem; paths are the filesystem's own."""

    def __init__(self, fs: Any, *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self._fs = fs
        self.timeout = timeout
        """Seconds one storage request may take (see the module invariants)."""

    @abstractmethod
    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run the filesystem method named like its synchronous form (``info``, ``ls``, ...)."""

    @abstractmethod
    async def _open_writer(self, path: str) -> Writer:
        """Start writing a new object at the staging path ``path``."""

    def url(self, path: str) -> str:
        """The full URL of ``path``, protocol included, as shown to users and in errors."""
        return str(self._fs.unstrip_protocol(path))

    async def stage(self, path: str, chunks: AsyncIterable[bytes]) -> None:
        """Write ``chunks`` to the staging path ``path``.

        On any failure, including an exception from ``chunks`` itself (which propagates
        unchanged), the staging object is removed before the exception is re-raised.
        """
        writer = await self._open_writer(path)
        try:
            async for chunk in chunks:
                await writer.write(chunk)
            await writer.commit()
        except BaseException:
            await self._clean_up(writer.discard(), path)
            raise

    async def publish(self, staging: str, path: str) -> None:
        """Move the completed staging object onto ``path``, replacing it atomically."""
        try:
            await self.move(staging, path)
        except BaseException:
            await self._clean_up(self.remove(staging), staging)
            raise

    async def write(self, path: str, data: bytes, *, staging: str) -> None:
        """Store ``data`` at ``path`` atomically, staging it at ``staging`` if the backend must."""
        await self.stage(staging, _once(data))
        await self.publish(staging, path)

    async def move(self, src: str, dst: str) -> None:
        """Replace ``dst`` with ``src`` (``dst``'s modified time becomes now) and remove ``src``."""
        with translated("move", self.url(src)):
            await self._call("cp_file", src, dst)
            await self._call("rm_file", src)

    async def touch(self, path: str) -> bool:
        """Make an existing object's modified time now, without rewriting it.

        Returns ``False`` when the object is missing or the backend cannot touch, in which case
        the caller rewrites the bytes instead.
        """
        del path  # The generic backend cannot touch; subclasses that can override this.
        return False

    async def clock(self, probe: str, *, staging: str) -> datetime:
        """The storage's own time now: the modified time of an object written at ``probe``.

        The probe is removed again. Backends that can create and stat a file in one request
        override this; a clock reading needs no durability.
        """
        await self.write(probe, b"", staging=staging)
        try:
            stat = await self.info(probe)
        finally:
            await self.remove(probe)
        if stat is None:
            raise BlobStorageError(f"the storage clock probe {self.url(probe)} vanished")
        return stat.modified

    async def read(self, path: str) -> bytes:
        """The whole object; raises `AttachmentNotFoundError` if it is missing."""
        with translated("read", self.url(path)):
            try:
                data: bytes = await self._call("cat_file", path)
            except FileNotFoundError as exc:
                raise AttachmentNotFoundError(self.url(path)) from exc
        return data

    async def read_chunks(self, path: str, chunk_size: int) -> AsyncGenerator[bytes, None]:
        """The object in ranged reads of ``chunk_size``; `AttachmentNotFoundError` if missing."""
        stat = await self.info(path)
        if stat is None:
            raise AttachmentNotFoundError(self.url(path))
        offset = 0
        while offset < stat.size:
            end = min(offset + chunk_size, stat.size)
            with translated("read", self.url(path)):
                try:
                    chunk: bytes = await self._call("cat_file", path, start=offset, end=end)
                except FileNotFoundError as exc:
                    raise AttachmentNotFoundError(self.url(path)) from exc
            if not chunk:
                break  # Shrunk under us; the digest will not match, which is the answer.
            offset += len(chunk)
            yield chunk

    async def info(self, path: str) -> ObjectStat | None:
        """The object at ``path``, or ``None`` if there is no file there."""
        with translated("inspect", self.url(path)):
            try:
                entry: dict[str, Any] = await self._call("info", path)
            except FileNotFoundError:
                return None
            if entry.get("type") != "file":
                return None
            return ObjectStat(path=path, size=int(entry["size"]), modified=modified_time(entry))

    async def listdir(self, path: str) -> Listing:
        """One level of the directory ``path``; empty if it does not exist."""
        with translated("list", self.url(path)):
            try:
                entries: list[dict[str, Any]] = await self._call("ls", path, detail=True)
            except FileNotFoundError:
                return Listing(dirs=[], files=[])
            return Listing(
                dirs=[e["name"] for e in entries if e.get("type") == "directory"],
                files=[
                    ObjectStat(path=e["name"], size=int(e["size"]), modified=modified_time(e))
                    for e in entries
                    if e.get("type") == "file"
                ],
            )

    async def listdirs(self, paths: Sequence[str]) -> list[Listing]:
        """`listdir` of each of ``paths`` (in that order), all requested at once."""
        listings = await asyncio.gather(*map(self.listdir, paths), return_exceptions=True)
        failure = next((item for item in listings if isinstance(item, BaseException)), None)
        if failure is not None:
            raise failure
        return [item for item in listings if isinstance(item, Listing)]

    async def remove(self, path: str) -> None:
        """Delete the object at ``path``; a missing object is fine."""
        with translated("delete", self.url(path)), suppress(FileNotFoundError):
            await self._call("rm_file", path)

    async def remove_stale(
        self, paths: Sequence[str], before: datetime, *, concurrency: int = REMOVAL_CONCURRENCY
    ) -> Removal:
        """Delete each object in ``paths`` whose modified time is earlier than ``before``.

        Each object's time is read immediately before it is deleted; a missing object, or one
        written or touched since ``before``, is left alone and not reported. Every path is
        attempted, ``concurrency`` at a time, whatever fails.
        """
        limit = asyncio.Semaphore(concurrency)

        async def remove_one(path: str) -> bool:
            async with limit:
                stat = await self.info(path)
                if stat is None or stat.modified >= before:
                    return False
                await self.remove(path)
                return True

        outcomes = await asyncio.gather(*map(remove_one, paths), return_exceptions=True)
        return Removal(
            removed=[path for path, done in zip(paths, outcomes, strict=True) if done is True],
            failure=next((o for o in outcomes if isinstance(o, BaseException)), None),
        )

    async def close(self) -> None:  # noqa: B027 (optional hook, not abstract)
        """Release connections; the generic backend holds none."""

    async def _clean_up(self, cleanup: Awaitable[None], path: str) -> None:
        # Best effort: the original failure matters more. A leftover staging object is never
        # mistaken for a blob; a collector sweeps stale ones (see `_blob_store`).
        try:
            await cleanup
        except ConvstoreError as exc:
            _log.warning("could not clean up %s after a failed write: %s", self.url(path), exc)


async def _once(data: bytes) -> AsyncGenerator[bytes, None]:
    yield data
