"""The gc contract: every put, dedupe hit or not, leaves the blob freshly modified."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pytest

from convstore.blobs import BlobInfo, BlobStore
from tests.support.storage import RawStorage

DATA = b"referenced again by a later message"


async def _info(store: BlobStore, sha256: str) -> BlobInfo:
    (info,) = [info async for info in store.iter_blobs() if info.sha256 == sha256]
    return info


@pytest.mark.parametrize("again", ["put", "put_stream"])
async def test_storing_existing_bytes_refreshes_modified(
    blob_store: BlobStore, raw: RawStorage, again: str
) -> None:
    stored = await blob_store.put(DATA)
    await raw.make_stale(blob_store.key(stored.sha256))
    stale = (await _info(blob_store, stored.sha256)).modified
    started = datetime.now(UTC).replace(microsecond=0)  # S3 times are whole seconds

    if again == "put":
        await blob_store.put(DATA)
    else:
        await blob_store.put_stream(io.BytesIO(DATA))

    fresh = await _info(blob_store, stored.sha256)
    assert fresh.modified > stale
    assert fresh.modified >= started - timedelta(seconds=1)
    assert await blob_store.get(stored.sha256) == DATA
    assert raw.keys() == {f"sha256/{stored.sha256[:2]}/{stored.sha256}"}
