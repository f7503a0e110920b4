"""Storage outages fail fast, and gc removes only what the store created.

- Every blob operation is bounded by the store's timeout: against an S3 endpoint that accepts
  connections and never answers (a local TCP server, no network), and against a synchronous
  filesystem whose calls never return, each operation raises `BlobStorageError` naming the
  operation within a few timeouts, instead of hanging for minutes (s3fs/aiobotocore's own
  retries and 60 s socket timeouts made an append hang 4 to 8 minutes).
- Staging files are swept only when named like the store's own; a put that fails or is
  cancelled at any point leaves no staging file; directories a put creates are fsynced.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from convstore import ConversationStore, FilePart, Message
from convstore.blobs import BlobStore
from convstore.blobs import _threaded as threaded
from convstore.errors import BlobStorageError, InvalidInputError
from tests.providers.conversations import PDF

TIMEOUT = 0.5
SHA = "a" * 64


@pytest.fixture
async def silent_endpoint() -> AsyncIterator[str]:
    """An HTTP endpoint that accepts connections and reads requests but never answers."""
    held: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(ConnectionError):
            while await reader.read(65536):
                pass

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()


def _s3_store(endpoint: str, **kwargs: Any) -> BlobStore:
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
    return BlobStore(f"s3://bucket/{uuid.uuid4().hex}", storage_options=options, **kwargs)


async def _source() -> AsyncIterator[bytes]:
    yield PDF


OPERATIONS: dict[str, tuple[Callable[[BlobStore], Awaitable[Any]], str]] = {
    "put": (lambda s: s.put(PDF, media_type="application/pdf"), "to (touch|write)"),
    "put_stream": (lambda s: s.put_stream(_source()), "to write"),
    "get": (lambda s: s.get(SHA), "to read"),
    "exists": (lambda s: s.exists(SHA), "to inspect"),
    "delete": (lambda s: s.delete(SHA), "to delete"),
    "iter_blobs": (lambda s: _drain(s.iter_blobs()), "to list"),
    "verify": (lambda s: s.verify(SHA), "to inspect"),
}


async def _drain(items: AsyncIterator[Any]) -> None:
    async for _ in items:
        pass


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
async def test_s3_that_never_answers_fails_fast(silent_endpoint: str, operation: str) -> None:
    call, action = OPERATIONS[operation]
    store = _s3_store(silent_endpoint, timeout=TIMEOUT)
    started = time.monotonic()
    try:
        with pytest.raises(BlobStorageError, match=f"did not answer within 0.5 s {action} s3://"):
            await call(store)
    finally:
        with contextlib.suppress(BlobStorageError):
            await store.close()
    # The typed error above says the timeout fired; this only says nothing hung for minutes
    # (loose: a loaded CI machine must not make it flaky).
    assert time.monotonic() - started < 60


async def test_an_append_against_silent_storage_fails_fast_and_writes_nothing(
    tmp_path: Path, silent_endpoint: str
) -> None:
    options = {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": silent_endpoint, "region_name": "us-east-1"},
    }
    store = ConversationStore(
        f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}",
        blobs="s3://bucket/prefix",
        blob_options=options,
        blob_timeout=TIMEOUT,
    )
    async with store:
        conv = await store.create_conversation()
        with pytest.raises(BlobStorageError, match=r"did not answer within 0.5 s to (touch|write)"):
            await store.append(conv.id, Message.user("see", FilePart.from_bytes(PDF)))
        assert (await store.load(conv.id)).messages == []


class _StalledFileSystem(MemoryFileSystem):
    """A synchronous filesystem whose every call blocks until the test releases it."""

    protocol = "stalled"
    release = threading.Event()

    def info(self, path: str, **kwargs: Any) -> Any:
        self.release.wait()
        return super().info(path, **kwargs)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        self.release.wait()
        return super().ls(path, detail=detail, **kwargs)

    def cat_file(self, path: str, start: Any = None, end: Any = None, **kwargs: Any) -> Any:
        self.release.wait()
        return super().cat_file(path, start=start, end=end, **kwargs)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        self.release.wait()
        super().makedirs(path, exist_ok=exist_ok)


@pytest.fixture
def stalled() -> Iterator[str]:
    fsspec.register_implementation("stalled", _StalledFileSystem, clobber=True)
    _StalledFileSystem.release.clear()
    try:
        yield f"stalled://{uuid.uuid4().hex}"
    finally:
        _StalledFileSystem.release.set()  # the abandoned worker threads finish


@pytest.mark.parametrize("operation", ["put", "put_stream", "get", "exists", "iter_blobs"])
async def test_a_synchronous_filesystem_that_never_returns_fails_fast(
    stalled: str, operation: str
) -> None:
    call, action = OPERATIONS[operation]
    store = BlobStore(stalled, timeout=TIMEOUT)
    started = time.monotonic()
    try:
        with pytest.raises(
            BlobStorageError, match=f"did not answer within 0.5 s {action} stalled://"
        ):
            await call(store)
        assert time.monotonic() - started < 60  # loose: only "not minutes"
    finally:
        # The abandoned worker thread is still blocked; the event loop's executor waits for it
        # when the loop closes (a documented limit of synchronous filesystems), so let it go.
        _StalledFileSystem.release.set()
    await store.close()


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_the_timeout_must_be_positive(timeout: float) -> None:
    with pytest.raises(InvalidInputError, match="timeout must be positive"):
        BlobStore("memory://t", timeout=timeout)


async def test_no_timeout_is_an_explicit_choice(tmp_path: Path) -> None:
    store = BlobStore(str(tmp_path / "b"), timeout=None)
    blob = await store.put(PDF)
    assert await store.get(blob.sha256) == PDF
    await store.close()


# --------------------------------------------------------------------------------------------
# Point 7: staging files
# --------------------------------------------------------------------------------------------


def _age(path: Path, hours: float = 2) -> None:
    old = time.time() - hours * 3600
    os.utime(path, (old, old))


async def test_gc_sweeps_only_staging_files_named_like_the_stores_own(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    staging = root / "tmp"
    staging.mkdir(parents=True)
    ours = staging / uuid.uuid4().hex
    theirs = [staging / "notes.txt", staging / ("A" * 32), staging / (uuid.uuid4().hex + ".bak")]
    for path in [ours, *theirs]:
        path.write_bytes(b"x")
        _age(path)
    young = staging / uuid.uuid4().hex
    young.write_bytes(b"x")
    store = BlobStore(str(root))
    cutoff = datetime.now(UTC) - timedelta(hours=1)
    assert await store.sweep_staging(older_than=cutoff, dry_run=True) == 1
    assert await store.sweep_staging(older_than=cutoff) == 1
    assert sorted(p.name for p in staging.iterdir()) == sorted(p.name for p in [*theirs, young])
    await store.close()


async def _chunks(count: int) -> AsyncIterator[bytes]:
    yield PDF
    for _ in range(count):
        await asyncio.sleep(0)
        yield b"x" * 1024


async def _source_stopping_after(chunks: int, stopped: asyncio.Event) -> AsyncIterator[bytes]:
    """``chunks`` chunks (the first a PDF's), then it waits forever: the put is mid-stream."""
    for index in range(chunks):
        yield PDF if index == 0 else b"x" * 1024
    stopped.set()
    await asyncio.Event().wait()


async def _no_staging_file_left(root: Path) -> None:
    """Wait for the background clean-ups a cancellation starts; fail if a file stays."""
    staging = root / "tmp"
    for _ in range(1500):  # a generous bound (30 s): this waits for threads, it times nothing
        if not staging.exists() or not any(staging.iterdir()):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"staging files left: {sorted(p.name for p in staging.iterdir())}")


async def _cancel_when(task: asyncio.Task[Any], reached: asyncio.Event, stage: str) -> None:
    await asyncio.wait({task, asyncio.ensure_future(reached.wait())}, timeout=30,
                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    assert reached.is_set() and not task.done(), f"the put never reached {stage}"
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("chunks", [0, 1, 2, 40])
async def test_a_put_cancelled_while_reading_its_source_leaves_no_staging_file(
    tmp_path: Path, chunks: int
) -> None:
    root = tmp_path / "blobs"
    store = BlobStore(str(root))
    stopped = asyncio.Event()
    task = asyncio.create_task(store.put_stream(_source_stopping_after(chunks, stopped)))
    await _cancel_when(task, stopped, f"its source's chunk {chunks}")
    await _no_staging_file_left(root)
    await store.close()


async def test_a_put_cancelled_while_its_staging_file_is_created_leaves_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker thread cannot be interrupted: it creates the file after the cancellation.
    root = tmp_path / "blobs"
    store = BlobStore(str(root))
    loop = asyncio.get_running_loop()
    opening, proceed = asyncio.Event(), threading.Event()
    original = threaded.LocalBackend._open_for_write

    def held(self: Any, path: str) -> Any:
        loop.call_soon_threadsafe(opening.set)
        proceed.wait(30)
        return original(self, path)

    monkeypatch.setattr(threaded.LocalBackend, "_open_for_write", held)
    task = asyncio.create_task(store.put(PDF * 4))
    await _cancel_when(task, opening, "the staging file's creation")
    proceed.set()
    await _no_staging_file_left(root)
    monkeypatch.undo()
    assert (await store.put(PDF)).size == len(PDF)  # the store is still usable
    await store.close()


async def test_a_put_cancelled_while_publishing_leaves_no_staging_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "blobs"
    store = BlobStore(str(root))
    publishing = asyncio.Event()

    async def held(self: Any, src: str, dst: str) -> None:
        publishing.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(threaded.ThreadedBackend, "move", held)
    task = asyncio.create_task(store.put(PDF * 4))
    await _cancel_when(task, publishing, "publication")
    await _no_staging_file_left(root)
    await store.close()


async def test_a_put_failing_on_a_full_disk_leaves_no_staging_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "blobs"
    store = BlobStore(str(root))
    finish = threaded.LocalBackend._finish

    def full(self: Any, handle: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(threaded.LocalBackend, "_finish", full)
    with pytest.raises(BlobStorageError, match="No space left on device"):
        await store.put(PDF)
    with pytest.raises(BlobStorageError, match="No space left on device"):
        await store.put_stream(_chunks(3))
    assert not any((root / "tmp").iterdir())
    monkeypatch.setattr(threaded.LocalBackend, "_finish", finish)
    await store.close()


async def test_new_blob_directories_are_fsynced_up_to_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real = threaded._fsync_directory

    def record(directory: str) -> None:
        synced.append(os.path.abspath(directory))
        real(directory)

    monkeypatch.setattr(threaded, "_fsync_directory", record)
    root = tmp_path / "new-root"
    store = BlobStore(str(root))
    first = await store.put(PDF)
    shard = root / "sha256" / first.sha256[:2]
    expected = [shard, root / "sha256", root, tmp_path]
    assert {str(p) for p in expected} <= set(synced)
    synced.clear()
    other = next(
        data
        for i in range(256)
        if hashlib.sha256(data := PDF + bytes([i])).hexdigest()[:2] != first.sha256[:2]
    )
    await store.put(other)
    assert str(root / "sha256") in synced  # the new shard's entry
    assert str(root) not in synced  # nothing new there
    await store.close()
