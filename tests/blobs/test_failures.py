"""Backend failures: typed errors, nothing half-written, nothing left behind."""

from __future__ import annotations

import io

import pytest
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem
from s3fs import S3FileSystem

from convstore.blobs import BlobStore
from convstore.blobs._threaded import LocalBackend
from convstore.errors import BlobStorageError
from tests.blobs.conftest import MakeStore
from tests.support.storage import BackendCase, MiB, RawStorage

DATA = bytes(range(256)) * (12 * 4096)  # 12 MiB: S3 uploads one 5 MiB part before failing


@pytest.fixture
def big_store(make_store: MakeStore) -> BlobStore:
    return make_store(max_size=16 * MiB)


async def test_stream_failing_mid_write_leaves_nothing(
    big_store: BlobStore, raw: RawStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw.fail_writes_after(monkeypatch, 6 * MiB)

    with pytest.raises(BlobStorageError) as caught:
        await big_store.put_stream(io.BytesIO(DATA))

    assert isinstance(caught.value.__cause__, OSError)  # chained, not swallowed
    assert raw.keys() == set()
    assert raw.pending_uploads() == 0


async def test_bytes_put_failing_mid_write_leaves_nothing(
    big_store: BlobStore, raw: RawStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw.fail_writes_after(monkeypatch, 6 * MiB)

    with pytest.raises(BlobStorageError):
        await big_store.put(DATA)

    assert raw.keys() == set()


async def test_failed_write_does_not_replace_an_existing_blob(
    big_store: BlobStore, raw: RawStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = await big_store.put(b"already here")
    raw.fail_writes_after(monkeypatch, 6 * MiB)

    with pytest.raises(BlobStorageError):
        await big_store.put_stream(io.BytesIO(DATA))

    assert await big_store.get(small.sha256) == b"already here"
    assert raw.keys() == {f"sha256/{small.sha256[:2]}/{small.sha256}"}


def _break_reads(backend: BackendCase, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> object:
        raise PermissionError("injected: access denied")

    async def refuse_async(*_args: object, **_kwargs: object) -> object:
        raise PermissionError("injected: access denied")

    targets: dict[str, list[tuple[type, list[str], object]]] = {
        "memory": [(MemoryFileSystem, ["cat_file", "info", "ls"], refuse)],
        # The local backend stats and lists through `os` itself (see `LocalBackend`).
        "local": [
            (LocalFileSystem, ["cat_file"], refuse),
            (LocalBackend, ["_stat", "_scan"], refuse),
        ],
        "s3": [(S3FileSystem, ["_cat_file", "_info", "_ls"], refuse_async)],
    }
    for cls, names, replacement in targets[backend.name]:
        for name in names:
            monkeypatch.setattr(cls, name, replacement)


async def test_read_failures_surface_as_blob_storage_errors(
    blob_store: BlobStore, backend: BackendCase, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = await blob_store.put(b"unreadable soon")
    _break_reads(backend, monkeypatch)

    for operation in (blob_store.get, blob_store.exists, blob_store.verify):
        with pytest.raises(BlobStorageError) as caught:
            await operation(stored.sha256)
        assert isinstance(caught.value.__cause__, PermissionError)
    with pytest.raises(BlobStorageError):
        [info async for info in blob_store.iter_blobs()]


async def test_unknown_protocol_is_a_blob_storage_error() -> None:
    with pytest.raises(BlobStorageError):
        BlobStore("no-such-protocol://bucket/prefix")
