"""Round trips, content addressing, verified reads and the store's lifecycle, on every backend."""

from __future__ import annotations

import hashlib
import io
from contextlib import aclosing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from convstore.blobs import BlobInfo, BlobStore, StoredBlob
from convstore.errors import (
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    ClosedError,
    InvalidInputError,
)
from tests.blobs.conftest import MakeStore
from tests.support.storage import BackendCase, RawStorage


def blob_key(data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    return f"sha256/{digest[:2]}/{digest}"


async def listed(store: BlobStore) -> list[BlobInfo]:
    return [info async for info in store.iter_blobs()]


async def test_put_then_get_round_trips(blob_store: BlobStore) -> None:
    data = b"the quick brown fox"

    stored = await blob_store.put(data, media_type="text/plain")

    assert stored == StoredBlob(hashlib.sha256(data).hexdigest(), len(data), "text/plain")
    assert await blob_store.get(stored.sha256) == data
    assert await blob_store.exists(stored.sha256)
    assert await blob_store.verify(stored.sha256)


async def test_empty_bytes_are_a_blob_too(blob_store: BlobStore) -> None:
    stored = await blob_store.put(b"")

    assert stored.size == 0
    assert await blob_store.get(stored.sha256) == b""
    assert await blob_store.verify(stored.sha256)


async def test_identical_bytes_are_stored_once(blob_store: BlobStore, raw: RawStorage) -> None:
    data = b"a picture worth a thousand tokens"

    first = await blob_store.put(data, media_type="text/plain")
    second = await blob_store.put_stream(io.BytesIO(data))
    third = await blob_store.put(data)

    assert first.sha256 == second.sha256 == third.sha256
    assert [(info.sha256, info.size) for info in await listed(blob_store)] == [
        (first.sha256, len(data))
    ]
    assert raw.keys() == {blob_key(data)}  # one object, no staging objects left


async def test_key_names_the_algorithm_and_shards_by_prefix(
    blob_store: BlobStore, backend: BackendCase
) -> None:
    stored = await blob_store.put(b"addressed by content")
    digest = stored.sha256

    key = blob_store.key(digest)

    assert key.endswith(f"/sha256/{digest[:2]}/{digest}")
    assert key.startswith(("memory://", "file://", "s3://"))
    assert blob_store.url == backend.url


@pytest.mark.parametrize(
    "bad", ["", "abc", "A" * 64, "g" * 64, "../" + "a" * 61, "a" * 63 + "/", "a" * 65]
)
async def test_addresses_must_be_lower_case_hex_sha256(blob_store: BlobStore, bad: str) -> None:
    with pytest.raises(InvalidInputError):
        blob_store.key(bad)
    with pytest.raises(InvalidInputError):
        await blob_store.get(bad)


async def test_missing_blob_is_not_found(blob_store: BlobStore) -> None:
    digest = hashlib.sha256(b"never stored").hexdigest()

    with pytest.raises(AttachmentNotFoundError) as caught:
        await blob_store.get(digest)

    assert caught.value.key == blob_store.key(digest)
    assert not await blob_store.exists(digest)
    assert not await blob_store.verify(digest)


async def test_corrupted_blob_is_refused_on_read(blob_store: BlobStore, raw: RawStorage) -> None:
    stored = await blob_store.put(b"original bytes")
    raw.overwrite(blob_store.key(stored.sha256), b"tampered bytes")

    with pytest.raises(AttachmentCorruptedError) as caught:
        await blob_store.get(stored.sha256)

    assert caught.value.key == blob_store.key(stored.sha256)
    assert caught.value.actual == hashlib.sha256(b"tampered bytes").hexdigest()
    assert not await blob_store.verify(stored.sha256)


async def test_verify_streams_large_blobs(make_store: MakeStore, raw: RawStorage) -> None:
    store = make_store(max_size=8 * 1024 * 1024)
    data = bytes(range(256)) * (3 * 4096 + 7)  # about 3 MiB: several verify chunks
    stored = await store.put_stream(io.BytesIO(data))

    assert await store.verify(stored.sha256)
    raw.overwrite(store.key(stored.sha256), data[:-1] + b"\x00")
    assert not await store.verify(stored.sha256)


async def test_delete_removes_and_tolerates_missing(blob_store: BlobStore) -> None:
    stored = await blob_store.put(b"short-lived")

    await blob_store.delete(stored.sha256)
    await blob_store.delete(stored.sha256)

    assert not await blob_store.exists(stored.sha256)
    assert await listed(blob_store) == []


async def test_iter_blobs_lists_blobs_with_size_and_utc_time(blob_store: BlobStore) -> None:
    assert await listed(blob_store) == []  # nothing stored yet: not even a root
    before = datetime.now(UTC) - timedelta(seconds=2)  # S3 times are whole seconds
    contents = [b"one", b"two", b"three" * 1000]
    stored = [await blob_store.put(data) for data in contents]

    infos = await listed(blob_store)

    assert [(i.sha256, i.size) for i in infos] == sorted((s.sha256, s.size) for s in stored)
    for info in infos:
        assert info.modified.tzinfo is not None
        assert info.modified.utcoffset() == timedelta(0)
        assert before <= info.modified <= datetime.now(UTC) + timedelta(seconds=2)


async def test_iter_blobs_lists_many_shards_in_digest_order(blob_store: BlobStore) -> None:
    # More shards than listings kept in flight, each with one or more blobs.
    stored = [await blob_store.put(f"blob {n}".encode()) for n in range(60)]
    assert len({s.sha256[:2] for s in stored}) > 16

    assert [i.sha256 for i in await listed(blob_store)] == sorted(s.sha256 for s in stored)
    first = []
    async with aclosing(blob_store.iter_blobs()) as infos:  # stopping early is fine
        async for info in infos:
            first.append(info.sha256)
            if len(first) == 3:
                break
    assert first == sorted(s.sha256 for s in stored)[:3]


async def test_iter_blobs_skips_staging_and_foreign_objects(
    blob_store: BlobStore, raw: RawStorage
) -> None:
    stored = await blob_store.put(b"the only blob")
    root = blob_store.key(stored.sha256).rsplit("/sha256/", 1)[0]
    raw.overwrite(f"{root}/tmp/0123456789abcdef", b"half-written")
    raw.overwrite(f"{root}/sha256/{stored.sha256[:2]}/notes.txt", b"not a blob")
    raw.overwrite(f"{root}/sha256/ff/{stored.sha256}", b"in the wrong shard")

    assert [info.sha256 for info in await listed(blob_store)] == [stored.sha256]


async def test_closed_store_refuses_use(make_store: MakeStore) -> None:
    store = make_store()
    stored = await store.put(b"before close")
    await store.close()
    await store.close()  # closing twice is fine

    with pytest.raises(ClosedError):
        await store.get(stored.sha256)
    with pytest.raises(ClosedError):
        await store.put(b"after close")
    with pytest.raises(ClosedError):
        await listed(store)


async def test_local_store_accepts_a_file_url_and_creates_its_directory(tmp_path: Path) -> None:
    root = tmp_path / "not" / "there" / "yet"
    store = BlobStore(root.as_uri())
    try:
        stored = await store.put(b"on disk")
    finally:
        await store.close()

    digest = stored.sha256
    assert (root / "sha256" / digest[:2] / digest).read_bytes() == b"on disk"
    assert store.key(digest) == (root / "sha256" / digest[:2] / digest).as_uri()


async def test_negative_max_size_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        BlobStore("memory://negative", max_size=-1)
