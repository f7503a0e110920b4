"""The storage adapter: which backend drives which URL, and what each backend reports."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from convstore.blobs._adapter import open_backend
from convstore.blobs._backend import modified_time
from convstore.blobs._object_store import ObjectStoreBackend, S3Backend
from convstore.blobs._threaded import LocalBackend, ThreadedBackend
from convstore.errors import AttachmentNotFoundError, BlobStorageError
from tests.support.storage import BUCKET, S3Server, s3_options


async def _collect(backend: ObjectStoreBackend, path: str) -> bytes:
    return b"".join([chunk async for chunk in backend.read_chunks(path, 1024)])


def test_memory_urls_run_in_worker_threads() -> None:
    backend, root = open_backend("memory://adapter-test/", {})
    assert type(backend) is ThreadedBackend
    assert root == "/adapter-test"


@pytest.mark.parametrize("as_uri", [False, True])
def test_local_directories_get_the_local_backend(tmp_path: Path, as_uri: bool) -> None:
    url = tmp_path.as_uri() if as_uri else str(tmp_path)
    backend, root = open_backend(url, {})
    assert type(backend) is LocalBackend
    assert root == tmp_path.as_posix()


@pytest.mark.s3
async def test_s3_urls_are_driven_natively(s3_server: S3Server) -> None:
    backend, root = open_backend(f"s3://{BUCKET}/adapter", s3_options(s3_server))
    try:
        assert type(backend) is S3Backend
        assert root == f"{BUCKET}/adapter"
        assert backend._fs.asynchronous
        assert not backend._fs.dircache.use_listings_cache
    finally:
        await backend.close()


@pytest.mark.s3
async def test_generic_object_store_backend_spools_streams(s3_server: S3Server) -> None:
    # Any async filesystem without a native streaming writer (gcsfs, adlfs) takes this path;
    # s3fs stands in for one here.
    backend, root = open_backend(f"s3://{BUCKET}/generic", s3_options(s3_server))
    generic = ObjectStoreBackend(backend._fs)
    try:
        await generic.stage(f"{root}/tmp/a", _chunks([b"spooled ", b"then uploaded"]))
        await generic.publish(f"{root}/tmp/a", f"{root}/blob")
        assert await generic.read(f"{root}/blob") == b"spooled then uploaded"
        assert await _collect(generic, f"{root}/blob") == b"spooled then uploaded"
        assert await generic.info(f"{root}/tmp/a") is None

        with pytest.raises(ValueError, match="interrupted"):
            await generic.stage(f"{root}/tmp/b", _failing_chunks())
        assert await generic.info(f"{root}/tmp/b") is None
        assert not await generic.touch(f"{root}/blob")  # no touch: callers rewrite
        with pytest.raises(AttachmentNotFoundError):
            await _collect(generic, f"{root}/missing")
    finally:
        await backend.close()


async def _chunks(parts: list[bytes]):
    for part in parts:
        yield part


async def _failing_chunks():
    yield b"partial"
    raise ValueError("interrupted")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"mtime": 0.0}, datetime(1970, 1, 1, tzinfo=UTC)),
        (
            {"LastModified": datetime(2024, 5, 1, 12, 0, tzinfo=UTC)},
            datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        ),
        (
            {"last_modified": datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))},
            datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        ),
        ({"updated": "2024-05-01T12:00:00.000Z"}, datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
        ({"created": datetime(2024, 5, 1, 12, 0)}, datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
        ({"created": 1_714_564_800}, datetime(2024, 5, 1, 12, 0, tzinfo=UTC)),
        ({"mtime": 1.0, "created": 2.0}, datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
    ],
)
def test_modified_time_is_normalised_to_utc(entry: dict[str, object], expected: datetime) -> None:
    result = modified_time(entry)
    assert result == expected
    assert result.tzinfo is UTC


def test_missing_modified_time_is_refused() -> None:
    with pytest.raises(BlobStorageError):
        modified_time({"name": "x", "size": 1})
