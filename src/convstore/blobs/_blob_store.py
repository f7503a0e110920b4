"""`BlobStore`: content-addressed attachment bytes in fsspec storage.

Invariants:

- Content addressing: a blob's key is ``<root>/sha256/<2 hex>/<64 hex>`` (`_layout`), computed
  from the bytes while they stream in. Identical bytes are stored once, whoever stores them.
- Atomic writes: bytes are staged at ``<root>/tmp/<uuid4>`` and moved onto their key when
  complete (or sent in one atomic PUT where the backend has one), so a reader never sees a
  partial blob, and a failed write leaves no blob and, best effort, no staging object.
- Refusals come before writes: the size limit is enforced as bytes arrive, and the media type
  is decided from the first bytes before anything is written (`_ingest`).
- Verified reads: `BlobStore.get` re-hashes what it read; `BlobStore.verify` does so streaming.
- Typed errors only: backend failures surface as `BlobStorageError` (chained), missing blobs as
  `AttachmentNotFoundError`, bytes that no longer match their key as `AttachmentCorruptedError`.

Garbage collection, and why every put refreshes the blob's modified time:

The conversation store writes a blob first and commits the rows that reference it afterwards,
so every blob is unreferenced for a moment after its put. A collector may therefore delete only
blobs that are unreferenced *and* whose `BlobInfo.modified` is older than a grace period longer
than any put-to-commit interval. That is safe only if ``modified`` is the time of the *latest*
put of those bytes: a put of bytes already stored (a dedupe hit) is followed by a commit too,
and if the object kept its first put's time a collector could delete it in between, leaving the
new rows pointing at nothing. So every `put` and `put_stream` leaves the object freshly
modified, dedupe hit or not: backends that can touch do (`os.utime`, an S3 in-place copy),
others rewrite the bytes, and a streamed put always moves its staging object onto the key.

A collector should re-read an object's modified time just before deleting it (a put may have
touched it since the listing), as `BlobStore.delete_stale` does for a whole batch, and should
also delete staging objects under ``tmp/`` older than the grace period: a crash between staging
and publishing leaves one behind, and `iter_blobs` never lists them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import posixpath
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from datetime import datetime
from typing import Any, Final

from convstore.blobs._adapter import open_backend
from convstore.blobs._backend import DEFAULT_TIMEOUT, Listing
from convstore.blobs._ingest import Ingest, sha256_hex, update_digest
from convstore.blobs._layout import (
    blob_path,
    blobs_dir,
    digest_at,
    is_staging_path,
    namespace_root,
    namespaces_dir,
    require_digest,
    staging_dir,
    staging_path,
)
from convstore.blobs._records import BlobDeletion, BlobInfo, StoredBlob
from convstore.blobs._sources import CHUNK_SIZE, BlobSource, iter_chunks
from convstore.errors import (
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    BlobStorageError,
    ClosedError,
    InvalidInputError,
)

DEFAULT_MAX_SIZE: Final = 20 * 1024 * 1024

LISTING_GROUP: Final = 16
"""Shards `BlobStore.iter_blob_batches` lists together (one batch, requested at once)."""

LISTING_AHEAD: Final = 2
"""Groups of shard listings `BlobStore.iter_blob_batches` keeps in flight."""


def _ignore_outcome(task: asyncio.Task[Any]) -> None:
    """Retrieve an abandoned listing's outcome, so that its failure is not logged as lost."""
    if not task.cancelled():
        task.exception()


def _blob_infos(listings: list[Listing]) -> list[BlobInfo]:
    """The blobs among the files of these shard listings, in digest order."""
    infos = []
    for listing in listings:
        for stat in sorted(listing.files, key=lambda stat: stat.path):
            sha256 = digest_at(stat.path)
            if sha256 is not None:
                infos.append(BlobInfo(sha256=sha256, size=stat.size, modified=stat.modified))
    return infos


class BlobStore:
    """Content-addressed blob storage at an fsspec URL.

    ``url`` is a local directory (a path or ``file://`` URL; created on first write),
    ``memory://prefix`` (tests), ``s3://bucket/prefix``, ``gs://bucket/prefix`` or any other
    fsspec URL; ``storage_options`` go to the filesystem (credentials, ``client_kwargs``, ...).
    ``timeout`` is how many seconds one storage request may take (default 30; ``None``: no
    limit) before the operation fails with a `BlobStorageError` naming it.
    A store on an asynchronous filesystem such as S3 must be used from one event loop and closed
    with `close` there.
    """

    def __init__(
        self,
        url: str,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        storage_options: Mapping[str, Any] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        if max_size < 0:
            raise InvalidInputError(f"max_size must not be negative, got {max_size}")
        if timeout is not None and not timeout > 0:
            raise InvalidInputError(f"timeout must be positive seconds or None, got {timeout}")
        self._url = url
        self._max_size = max_size
        self._backend, self._root = open_backend(url, storage_options or {}, timeout=timeout)
        self._closed = False
        self._owner: BlobStore | None = None
        self._namespace = ""
        self._views: dict[str, BlobStore] = {}

    @property
    def url(self) -> str:
        """The storage URL the store was opened with."""
        return self._url

    @property
    def max_size(self) -> int:
        """The largest blob, in bytes, that a put accepts."""
        return self._max_size

    @property
    def namespace_name(self) -> str:
        """The namespace this store reads and writes (``""``: the shared one)."""
        return self._namespace

    def namespace(self, name: str) -> BlobStore:
        """The same storage, in namespace ``name`` (lower-case hex; ``""``: the shared one).

        A view shares this store's connection and is closed with it.
        """
        owner = self._owner or self
        if not name:
            return owner
        view = owner._views.get(name)
        if view is None:
            view = object.__new__(BlobStore)
            view._url, view._max_size = owner._url, owner._max_size
            view._backend, view._root = owner._backend, namespace_root(owner._root, name)
            view._closed, view._owner, view._namespace, view._views = False, owner, name, {}
            owner._views[name] = view
        return view

    async def namespaces(self) -> list[str]:
        """Every namespace holding anything, the shared one (``""``) first."""
        self._require_open()
        owner = self._owner or self
        listing = await self._backend.listdir(namespaces_dir(owner._root))
        return ["", *sorted(posixpath.basename(d.rstrip("/")) for d in listing.dirs)]

    async def storage_now(self) -> datetime:
        """The storage's own clock: the modified time of a probe object written just now.

        Ages of blobs are judged against this, never the local clock, so a host or an object
        store whose clock is off by hours cannot make a fresh blob look old.
        """
        self._require_open()
        return await self._backend.clock(staging_path(self._root), staging=staging_path(self._root))

    def key(self, sha256: str) -> str:
        """The full URL of the object that holds the blob with that digest."""
        return self._backend.url(self._path(sha256))

    async def put(self, data: bytes, *, media_type: str | None = None) -> StoredBlob:
        """Store ``data`` (once, whoever stores it) and return its address.

        Raises:
            AttachmentTooLargeError: ``data`` is longer than `max_size`; nothing was written.
            MediaTypeMismatchError: the bytes contradict ``media_type``; nothing was written.
            BlobStorageError: the backend failed; no blob was written.
        """
        self._require_open()
        ingest = Ingest(max_size=self._max_size, declared_media_type=media_type)
        await ingest.feed(data)
        stored = ingest.result()
        path = blob_path(self._root, stored.sha256)
        # A dedupe hit still needs a fresh modified time (see the module docstring): touch
        # where the backend can, otherwise write the bytes again.
        if not await self._backend.touch(path):
            await self._backend.write(path, data, staging=staging_path(self._root))
        return await self._stamped(stored, path)

    async def put_stream(self, source: BlobSource, *, media_type: str | None = None) -> StoredBlob:
        """Store the bytes of ``source`` without holding them in memory, and return the address.

        ``source`` is a `~pathlib.Path` (read here), a binary file object (read from its current
        position, left open) or an async iterable of ``bytes`` (closed if it is a generator and
        the put stops early; its own exceptions propagate unchanged).

        Raises:
            AttachmentTooLargeError: the stream crossed `max_size`; reading stopped there and
                nothing was kept.
            MediaTypeMismatchError: the first bytes contradict ``media_type``; nothing was
                written.
            InvalidInputError: a path or file object that cannot be read.
            BlobStorageError: the backend failed; no blob was written.
        """
        self._require_open()
        ingest = Ingest(max_size=self._max_size, declared_media_type=media_type)
        staging = staging_path(self._root)
        async with aclosing(iter_chunks(source, CHUNK_SIZE)) as chunks:
            head = await ingest.head(chunks)
            async with aclosing(ingest.rest(head, chunks)) as body:
                await self._backend.stage(staging, body)
        stored = ingest.result()
        path = blob_path(self._root, stored.sha256)
        await self._backend.publish(staging, path)
        return await self._stamped(stored, path)

    async def _stamped(self, stored: StoredBlob, path: str) -> StoredBlob:
        """``stored`` with the object's modified time as the storage reports it now."""
        stat = await self._backend.info(path)
        if stat is None:
            raise BlobStorageError(f"{self._backend.url(path)} vanished right after it was stored")
        return dataclasses.replace(stored, written_at=stat.modified)

    async def get(self, sha256: str) -> bytes:
        """The bytes of a blob, checked against their digest.

        Raises:
            AttachmentNotFoundError: no blob with that digest is stored.
            AttachmentCorruptedError: the stored bytes no longer hash to ``sha256``.
            BlobStorageError: the backend failed.
        """
        self._require_open()
        path = self._path(sha256)
        data = await self._backend.read(path)
        actual = await sha256_hex(data)
        if actual != sha256:
            raise AttachmentCorruptedError(self._backend.url(path), actual)
        return data

    async def exists(self, sha256: str) -> bool:
        """Whether a blob with that digest is stored (its bytes are not checked)."""
        self._require_open()
        return await self._backend.info(self._path(sha256)) is not None

    async def info(self, sha256: str) -> BlobInfo | None:
        """The blob's size and modified time as stored right now, or ``None`` if absent."""
        self._require_open()
        stat = await self._backend.info(self._path(sha256))
        if stat is None:
            return None
        return BlobInfo(sha256=sha256, size=stat.size, modified=stat.modified)

    async def sweep_staging(self, *, older_than: datetime, dry_run: bool = False) -> int:
        """Delete staging objects older than ``older_than``; how many there were.

        Only objects named like the store's own staging objects are considered. A process
        killed between staging a write and publishing it leaves its staging object behind, and
        `iter_blobs` never lists those; garbage collection sweeps them here.
        """
        self._require_open()
        listing = await self._backend.listdir(staging_dir(self._root))
        # Only what this store's writers name: a file someone else put under tmp/ is not ours.
        stale = [
            stat
            for stat in listing.files
            if stat.modified < older_than and is_staging_path(stat.path)
        ]
        if not dry_run:
            for stat in stale:
                await self._backend.remove(stat.path)
        return len(stale)

    async def delete(self, sha256: str) -> None:
        """Delete the blob with that digest; deleting a missing blob is not an error."""
        self._require_open()
        await self._backend.remove(self._path(sha256))

    async def delete_stale(
        self, sha256s: Sequence[str], *, modified_before: datetime
    ) -> BlobDeletion:
        """Delete each of these blobs whose modified time is earlier than ``modified_before``.

        Each blob's modified time is read immediately before it is deleted, so a blob put or
        touched since the caller last looked survives. Missing blobs are skipped. Every blob is
        attempted even when some deletions fail: the result names exactly the blobs deleted,
        and the first failure, which the caller raises once it has recorded them.
        """
        self._require_open()
        paths = {self._path(sha256): sha256 for sha256 in sha256s}
        removal = await self._backend.remove_stale(list(paths), modified_before)
        return BlobDeletion(
            deleted=[paths[path] for path in removal.removed], failure=removal.failure
        )

    async def iter_blobs(self) -> AsyncIterator[BlobInfo]:
        """Every stored blob (never staging objects), shard by shard, in digest order."""
        async for batch in self.iter_blob_batches():
            for info in batch:
                yield info

    async def iter_blob_batches(self) -> AsyncIterator[list[BlobInfo]]:
        """`iter_blobs` a group of `LISTING_GROUP` shards at a time (possibly empty lists)."""
        self._require_open()
        shards = sorted((await self._backend.listdir(blobs_dir(self._root))).dirs)
        groups = iter([shards[i : i + LISTING_GROUP] for i in range(0, len(shards), LISTING_GROUP)])
        # The next groups are listed while the caller works through one: one request at a
        # time made a listing of 256 shards 256 round trips long.
        ahead: deque[asyncio.Task[list[Listing]]] = deque()
        try:
            while True:
                while len(ahead) < LISTING_AHEAD and (group := next(groups, None)) is not None:
                    ahead.append(asyncio.ensure_future(self._backend.listdirs(group)))
                if not ahead:
                    return
                yield _blob_infos(await ahead.popleft())
        finally:
            for task in ahead:  # the caller stopped early, or a listing failed
                task.cancel()
                task.add_done_callback(_ignore_outcome)

    async def verify(self, sha256: str) -> bool:
        """Whether the blob is stored and its bytes hash to ``sha256``; reads it in chunks."""
        self._require_open()
        digest = hashlib.sha256()
        try:
            async with aclosing(
                self._backend.read_chunks(self._path(sha256), CHUNK_SIZE)
            ) as chunks:
                async for chunk in chunks:
                    await update_digest(digest, chunk)
        except AttachmentNotFoundError:
            return False
        return digest.hexdigest() == sha256

    async def close(self) -> None:
        """Release the backend's connections; the store cannot be used afterwards.

        Closing a namespace view does nothing: its owner holds the connection.
        """
        if self._closed or self._owner is not None:
            return
        self._closed = True
        await self._backend.close()

    def _path(self, sha256: str) -> str:
        return blob_path(self._root, require_digest(sha256))

    def _require_open(self) -> None:
        if self._closed or (self._owner is not None and self._owner._closed):
            raise ClosedError(f"the blob store at {self._url} is closed")
