"""Content-addressed attachment bytes in fsspec storage.

`BlobStore` keeps each distinct byte string once, under its SHA-256, at any fsspec URL (a local
directory, ``memory://``, ``s3://``, ``gs://``), with streaming puts, a size limit, media-type
sniffing and hash-verified reads. It knows nothing about messages: the conversation store keeps
the digests in its rows. The design and the garbage-collection contract are described in
`convstore.blobs._blob_store`.
"""

from __future__ import annotations

from convstore.blobs._blob_store import BlobStore
from convstore.blobs._records import BlobDeletion, BlobInfo, StoredBlob

__all__ = ["BlobDeletion", "BlobInfo", "BlobStore", "StoredBlob"]
