"""Choosing how to drive a storage URL: the one place that asks whether a filesystem is async.

- Synchronous filesystems run in worker threads (`ThreadedBackend`); a local directory gets
  `LocalBackend`, which adds atomic rename, fsync and touch.
- Asynchronous filesystems (``fs.async_impl``) are created with ``asynchronous=True`` and used
  through their coroutines (`ObjectStoreBackend`); S3 gets `S3Backend`, which adds multipart
  streaming and touch. They also skip fsspec's instance cache: an instance is bound to the event
  loop that first uses it and must not be shared with a store on another loop.
- Directory-listing caches are off unless the caller's storage options turn them on: other
  processes (application servers, the garbage collector) write and delete in the same storage,
  and a cached listing would report objects that are gone or miss new ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fsspec
from fsspec.core import split_protocol, url_to_fs
from fsspec.implementations.local import LocalFileSystem

from convstore.blobs._backend import DEFAULT_TIMEOUT, BlobBackend, translated
from convstore.blobs._object_store import ObjectStoreBackend, S3Backend
from convstore.blobs._threaded import LocalBackend, ThreadedBackend


def open_backend(
    url: str, storage_options: Mapping[str, Any], *, timeout: float | None = DEFAULT_TIMEOUT
) -> tuple[BlobBackend, str]:
    """The backend for ``url`` and the root path of the store inside it.

    ``timeout`` bounds each storage request (see `convstore.blobs._backend`). Raises
    `BlobStorageError` when the URL names no usable filesystem (unknown protocol, missing
    driver package, bad options).
    """
    with translated("open", url):
        protocol = split_protocol(url)[0] or "file"
        is_async = bool(fsspec.get_filesystem_class(protocol).async_impl)
        options: dict[str, Any] = {"use_listings_cache": False, **storage_options}
        if is_async:
            options.update(asynchronous=True, skip_instance_cache=True)
        fs, root = url_to_fs(url, **options)
    root = str(root).rstrip("/")
    backend: BlobBackend
    if isinstance(fs, LocalFileSystem):
        backend = LocalBackend(fs, timeout=timeout)
    elif not is_async:
        backend = ThreadedBackend(fs, timeout=timeout)
    elif "s3" in _protocols(fs):
        backend = S3Backend(fs, timeout=timeout)
    else:
        backend = ObjectStoreBackend(fs, timeout=timeout)
    return backend, root


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
