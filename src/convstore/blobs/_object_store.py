"""Asynchronous fsspec filesystems (S3, GCS, Azure, ...) driven through their coroutines.

Invariants:

- Every call is the filesystem's own coroutine (``_info``, ``_cat_file``, ``_ls``, ...) on the
  running event loop; the filesystem was created with ``asynchronous=True`` and must be used
  from one event loop only (its HTTP session is bound to the loop that opened it).
- These are object stores: a single PUT, a completed multipart upload and a server-side copy
  each make an object appear whole or not at all. A staging object is copied onto the blob's
  key, which also gives the key a fresh modified time.
- S3 streams a put as a multipart upload of ``S3_PART_SIZE`` parts, the smallest S3 accepts, so
  a streamed put holds at most one part (plus one incoming chunk) in memory; an upload that
  fails is aborted, leaving no parts behind. `bytes` puts go in one PUT straight to their key.
  A dedupe hit is touched with an in-place copy (no bytes re-sent); on a versioned bucket that
  adds a version, as any rewrite would, so such buckets want a lifecycle rule for noncurrent
  versions.
- Other object stores have no streaming writer fsspec exposes as a coroutine, so a streamed put
  is spooled to a local temporary file (one chunk in memory at a time) and then uploaded with
  the filesystem's own ``_put_file``, whose buffering is the filesystem's.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import tempfile
from typing import IO, Any, Final

from convstore.blobs._backend import BlobBackend, Writer, bounded, translated

S3_PART_SIZE: Final = 5 * 1024 * 1024


class ObjectStoreBackend(BlobBackend):
    """Any asynchronous fsspec filesystem."""

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await bounded(self.timeout, getattr(self._fs, f"_{method}")(*args, **kwargs))

    async def _open_writer(self, path: str) -> Writer:
        with translated("write", self.url(path)):
            spool = await asyncio.to_thread(_new_spool)
        return _SpooledWriter(self, path, spool)

    async def upload(self, local_path: str, path: str) -> None:
        """Upload a local file to ``path`` with the filesystem's own transfer."""
        with translated("write", self.url(path)):
            await self._call("put_file", local_path, path)


class S3Backend(ObjectStoreBackend):
    """S3 and S3-compatible stores through s3fs."""

    async def _open_writer(self, path: str) -> Writer:
        return _S3MultipartWriter(self, path)

    async def write(self, path: str, data: bytes, *, staging: str) -> None:
        del staging  # One PUT is atomic on S3: nothing to stage.
        bucket, key = self.bucket_and_key(path)
        with translated("write", self.url(path)):
            await self.s3_call("put_object", Bucket=bucket, Key=key, Body=_body(data))

    async def touch(self, path: str) -> bool:
        bucket, key = self.bucket_and_key(path)
        with translated("touch", self.url(path)):
            try:
                # S3 refuses to copy an object onto itself unless something changes; replacing
                # its (empty) metadata is the documented way to refresh LastModified in place.
                await self.s3_call(
                    "copy_object",
                    Bucket=bucket,
                    Key=key,
                    CopySource={"Bucket": bucket, "Key": key},
                    MetadataDirective="REPLACE",
                )
            except FileNotFoundError:
                return False
        return True

    async def close(self) -> None:
        # s3fs opens its client lazily and leaves closing it to asynchronous callers.
        client = getattr(self._fs, "_s3", None)
        if client is not None:
            with translated("close the connection to", self.url("")):
                await bounded(self.timeout, client.close())

    def bucket_and_key(self, path: str) -> tuple[str, str]:
        """Split a backend path into bucket and object key."""
        bucket, key, _ = self._fs.split_path(path)
        return str(bucket), str(key)

    async def s3_call(self, operation: str, **kwargs: Any) -> Any:
        """Call an S3 API operation through s3fs, with its retries and error translation."""
        return await bounded(self.timeout, self._fs._call_s3(operation, **kwargs))


class _S3MultipartWriter:
    """Streams one staging object to S3 a part at a time; a single PUT if it stays small."""

    def __init__(self, backend: S3Backend, path: str) -> None:
        self._backend = backend
        self._url = backend.url(path)
        self._bucket, self._key = backend.bucket_and_key(path)
        self._part = io.BytesIO()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    async def write(self, data: bytes) -> None:
        self._part.write(data)
        if self._part.tell() >= S3_PART_SIZE:
            await self._upload_part()

    async def commit(self) -> None:
        if self._upload_id is None:
            with translated("write", self._url):
                await self._backend.s3_call(
                    "put_object", Bucket=self._bucket, Key=self._key, Body=self._take_part()
                )
            return
        if self._part.tell():
            await self._upload_part()
        with translated("write", self._url):
            await self._backend.s3_call(
                "complete_multipart_upload",
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": self._parts},
            )

    async def discard(self) -> None:
        with translated("discard", self._url):
            if self._upload_id is not None:
                with contextlib.suppress(FileNotFoundError):  # Already completed or aborted.
                    await self._backend.s3_call(
                        "abort_multipart_upload",
                        Bucket=self._bucket,
                        Key=self._key,
                        UploadId=self._upload_id,
                    )
            # Deleting a missing key succeeds on S3; this covers an upload that did complete.
            await self._backend.s3_call("delete_object", Bucket=self._bucket, Key=self._key)

    async def _upload_part(self) -> None:
        with translated("write", self._url):
            if self._upload_id is None:
                started = await self._backend.s3_call(
                    "create_multipart_upload", Bucket=self._bucket, Key=self._key
                )
                self._upload_id = str(started["UploadId"])
            number = len(self._parts) + 1
            uploaded = await self._backend.s3_call(
                "upload_part",
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload_id,
                PartNumber=number,
                Body=self._take_part(),
            )
            self._parts.append({"PartNumber": number, "ETag": uploaded["ETag"]})

    def _take_part(self) -> io.BytesIO:
        part, self._part = self._part, io.BytesIO()
        part.seek(0)
        return part


def _body(data: bytes) -> io.BytesIO:
    # aiohttp warns (ResourceWarning) that a large raw-bytes body may block the event loop and
    # streams a file-like body instead; BytesIO shares the bytes' buffer, so this copies nothing.
    return io.BytesIO(data)


def _new_spool() -> IO[bytes]:
    return tempfile.NamedTemporaryFile(mode="wb", prefix="convstore-blob-", delete=False)


class _SpooledWriter:
    """Spools a staging object to a local temporary file, then uploads it in one transfer."""

    def __init__(self, backend: ObjectStoreBackend, path: str, spool: IO[bytes]) -> None:
        self._backend = backend
        self._path = path
        self._url = backend.url(path)
        self._spool = spool

    async def write(self, data: bytes) -> None:
        with translated("write", self._url):
            await asyncio.to_thread(self._spool.write, data)

    async def commit(self) -> None:
        with translated("write", self._url):
            await asyncio.to_thread(self._spool.close)
        try:
            await self._backend.upload(self._spool.name, self._path)
        finally:
            await self._drop_spool()

    async def discard(self) -> None:
        await self._drop_spool()
        await self._backend.remove(self._path)

    async def _drop_spool(self) -> None:
        with translated("discard", self._url):
            await asyncio.to_thread(self._spool.close)
            with contextlib.suppress(FileNotFoundError):
                await asyncio.to_thread(os.unlink, self._spool.name)
