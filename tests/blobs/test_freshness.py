"""The gc contract: every put, dedupe hit or not, leaves the blob freshly modified."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from convstore.blobs import BlobInfo, BlobStore
from convstore.blobs._threaded import LocalBackend
from convstore.errors import BlobStorageError
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


async def test_delete_stale_deletes_only_blobs_older_than_the_bound(
    blob_store: BlobStore, raw: RawStorage
) -> None:
    old = [await blob_store.put(f"garbage {n}".encode()) for n in range(20)]  # > one run
    # At once: where the storage cannot back-date (S3), making stale is waiting.
    await asyncio.gather(*(raw.make_stale(blob_store.key(stored.sha256)) for stored in old))
    fresh = await blob_store.put(DATA)
    bound = (await _info(blob_store, fresh.sha256)).modified
    never_stored = "0" * 64
    asked = [never_stored, fresh.sha256, *(stored.sha256 for stored in old)]

    deletion = await blob_store.delete_stale(asked, modified_before=bound)

    assert deletion.failure is None
    assert deletion.deleted == [stored.sha256 for stored in old]
    assert raw.keys() == {f"sha256/{fresh.sha256[:2]}/{fresh.sha256}"}
    assert await blob_store.get(fresh.sha256) == DATA


async def test_delete_stale_reports_what_it_deleted_when_one_deletion_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BlobStore(str(tmp_path / "blobs"))
    stored = [await store.put(f"garbage {n}".encode()) for n in range(40)]
    broken = stored[17].sha256
    original = LocalBackend._delete_file

    def delete_file(self: LocalBackend, path: str) -> bool:
        if path.endswith(broken):
            raise PermissionError(13, "Permission denied", path)
        return original(self, path)

    monkeypatch.setattr(LocalBackend, "_delete_file", delete_file)
    later = datetime.now(UTC) + timedelta(hours=1)

    deletion = await store.delete_stale([s.sha256 for s in stored], modified_before=later)

    assert isinstance(deletion.failure, BlobStorageError)
    assert broken in str(deletion.failure)
    assert deletion.deleted == [s.sha256 for s in stored if s.sha256 != broken]
    assert [info.sha256 async for info in store.iter_blobs()] == [broken]
    await store.close()
