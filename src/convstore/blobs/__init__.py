"""Content-addressed attachment bytes in fsspec storage.

`BlobStore` keeps each distinct byte string once, under its SHA-256, at any fsspec URL (a local
directory, ``memory://``, ``s3://``, ``gs://``), with streaming puts, a size limit, media-type
sniffing and hash-verified reads. It knows nothing about messages: the conversation store keeps
the digests in its rows. The design and the garbage-collection contract are described in
`convstore.blobs._blob_store`.

Modules:

- ``_blob_store``: `BlobStore` itself: puts, reads, deletes, namespaces, and the gc contract.
- ``_backend``: the storage contract the blob store is written against, over any fsspec
  filesystem; ``_adapter`` chooses how to drive a URL (the one place that asks whether a
  filesystem is async); ``_threaded`` and ``_object_store`` drive synchronous filesystems from
  threads and asynchronous ones (S3, GCS, Azure) through their coroutines.
- ``_layout``: where blobs live under a store's root (the one definition of the key layout).
- ``_ingest``: bytes checked on their way in: size limit, content hash, media type.
- ``_sources``: what a caller streams in, read one bounded chunk at a time.
- ``_records``: the values the blob layer hands back (what a put stored, found or deleted).
"""

from __future__ import annotations

from convstore.blobs._blob_store import BlobStore
from convstore.blobs._records import BlobDeletion, BlobInfo, StoredBlob

__all__ = ["BlobDeletion", "BlobInfo", "BlobStore", "StoredBlob"]
