"""Attachments through the store: blobs before rows, stored once, verified, collected, checked."""

from __future__ import annotations

import base64
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from convstore import (
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    AttachmentTooLargeError,
    BlobStorageError,
    ContentOutput,
    Conversation,
    ConversationStore,
    FilePart,
    MediaTypeMismatchError,
    Message,
    TextPart,
    ToolCallConflictError,
    ToolCallPart,
    ToolResultPart,
    collect_garbage,
    fsck,
)
from tests.support.postgres import PostgresCluster
from tests.support.storage import BackendCase, RawStorage, backend_case

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(2048)
PDF = b"%PDF-1.4\n" + os.urandom(1024)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of this test's own: gc and fsck look at everything in it."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"attachments_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'convstore.db'}"


@pytest.fixture(params=["memory", "local", pytest.param("s3", marks=pytest.mark.s3)])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendCase]:
    with backend_case(request.param, request, tmp_path) as case:
        yield case


@pytest.fixture
async def store(db_url: str, blobs: BackendCase) -> AsyncIterator[ConversationStore]:
    async with ConversationStore(
        db_url, blobs=blobs.url, blob_options=blobs.storage_options, auto_migrate=True
    ) as opened:
        yield opened


@pytest.fixture
def raw(blobs: BackendCase) -> RawStorage:
    return blobs.raw


def blob_keys(raw: RawStorage) -> set[str]:
    """Every blob object, in the shared namespace and in the tenants' namespaces."""
    return {
        k
        for k in raw.keys()  # noqa: SIM118 (not a dict)
        if k.startswith("sha256/") or (k.startswith("tenants/") and "/sha256/" in k)
    }


def staging_keys(raw: RawStorage) -> set[str]:
    return {k for k in raw.keys() if k.startswith("tmp/")}  # noqa: SIM118 (not a dict)


def image_result(call_id: str) -> Message:
    return Message(
        role="tool",
        parts=[
            ToolResultPart(
                call_id=call_id,
                output=ContentOutput(parts=[TextPart(text="chart"), FilePart.from_bytes(PNG)]),
            )
        ],
    )


async def test_same_image_in_three_messages_of_two_conversations_is_one_blob(
    store: ConversationStore, raw: RawStorage
) -> None:
    first = await store.create_conversation(tenant="a")
    second = await store.create_conversation(tenant="a")
    await store.append(
        first.id,
        [
            Message.user("look", FilePart.from_bytes(PNG, filename="one.png")),
            Message.assistant(ToolCallPart(id="c1", name="plot")),
            image_result("c1"),
        ],
    )
    stored = await store.append(
        second.id, Message.user(FilePart.from_bytes(PNG, filename="two.png"))
    )
    assert len(blob_keys(raw)) == 1
    part = stored[0].parts[0]
    assert isinstance(part, FilePart) and part.attachment is not None
    assert await store.read_attachment(part) == PNG
    assert await store.read_attachment(part, tenant="a") == PNG
    with pytest.raises(AttachmentNotFoundError):
        await store.read_attachment(part, tenant="b")


async def test_deduplication_is_per_tenant_by_default(
    store: ConversationStore, raw: RawStorage
) -> None:
    for tenant in ("a", "b", None):
        conv = await store.create_conversation(tenant=tenant)
        await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    # One object per namespace: tenant a, tenant b and the shared one.
    keys = blob_keys(raw)
    assert len(keys) == 3
    assert sum(k.startswith("tenants/") for k in keys) == 2
    assert (await fsck(store)).ok


async def test_global_deduplication_stores_bytes_once_for_everyone(
    db_url: str, blobs: BackendCase, raw: RawStorage
) -> None:
    async with ConversationStore(
        db_url,
        blobs=blobs.url,
        blob_options=blobs.storage_options,
        auto_migrate=True,
        dedupe="global",
    ) as store:
        for tenant in ("a", "b"):
            conv = await store.create_conversation(tenant=tenant)
            await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    assert len(blob_keys(raw)) == 1


async def test_reads_are_hash_verified(store: ConversationStore, raw: RawStorage) -> None:
    conv = await store.create_conversation()
    (message,) = await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    part = message.parts[0]
    assert isinstance(part, FilePart) and part.attachment is not None
    raw.overwrite(store.blob_store.key(part.attachment.sha256), b"\x89PNG\r\n\x1a\ntampered")
    with pytest.raises(AttachmentCorruptedError):
        await store.read_attachment(part)
    await store.blob_store.delete(part.attachment.sha256)
    with pytest.raises(AttachmentNotFoundError):
        await store.read_attachment(part)


async def test_load_reads_no_blob(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, [Message.user(FilePart.from_bytes(PNG)), image_result("c")])
    for sha256 in stored_hashes(await store.load(conv.id)):
        await store.blob_store.delete(sha256)
    # Every blob is gone, yet the load succeeds and keeps the references: it read none.
    loaded = await store.load(conv.id)
    (user_file,) = loaded.messages[0].parts
    assert isinstance(user_file, FilePart) and user_file.attachment is not None
    assert user_file.media_type == "image/png" and user_file.data is None
    with pytest.raises(AttachmentNotFoundError):
        await store.read_attachment(user_file)


def stored_hashes(conversation: Conversation) -> set[str]:
    return {
        f.attachment.sha256
        for m in conversation.messages
        for f in m.files
        if f.attachment is not None
    }


async def test_attachment_reads_respect_tenants(store: ConversationStore) -> None:
    conv = await store.create_conversation(tenant="alice")
    (message,) = await store.append(conv.id, Message.user(FilePart.from_bytes(PDF)))
    part = message.parts[0]
    assert isinstance(part, FilePart)
    assert await store.read_attachment(part, tenant="alice") == PDF
    with pytest.raises(AttachmentNotFoundError):
        await store.read_attachment(part, tenant="mallory")


async def test_a_failing_blob_backend_writes_no_rows(
    store: ConversationStore, raw: RawStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = await store.create_conversation()
    raw.fail_writes_after(monkeypatch, 100)
    with pytest.raises(BlobStorageError):
        await store.append(
            conv.id, [Message.user("text first"), Message.user(FilePart.from_bytes(PNG))]
        )
    monkeypatch.undo()
    assert (await store.load(conv.id)).messages == []
    assert blob_keys(raw) == set()


async def test_a_failing_transaction_leaves_blobs_for_gc_never_dangling_rows(
    store: ConversationStore, raw: RawStorage
) -> None:
    conv = await store.create_conversation()
    with pytest.raises(ToolCallConflictError):
        await store.append(
            conv.id,
            [
                Message.user(FilePart.from_bytes(PNG)),
                Message.assistant(
                    ToolCallPart(id="dup", name="f"), ToolCallPart(id="dup", name="f")
                ),
            ],
        )
    assert (await store.load(conv.id)).messages == []
    report = await fsck(store)
    assert report.ok and report.referenced == 0
    assert len(report.unreferenced) == 1  # stored first, now collectable


async def test_oversize_is_refused_and_nothing_is_written(
    db_url: str, blobs: BackendCase, raw: RawStorage
) -> None:
    async with ConversationStore(
        db_url,
        blobs=blobs.url,
        blob_options=blobs.storage_options,
        max_attachment_size=1024,
        auto_migrate=True,
    ) as store:
        conv = await store.create_conversation()
        with pytest.raises(AttachmentTooLargeError):
            await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
        consumed = 0

        async def endless() -> AsyncIterator[bytes]:
            nonlocal consumed
            while True:
                consumed += 1
                yield b"\x89PNG\r\n\x1a\n" + bytes(504)

        with pytest.raises(AttachmentTooLargeError):
            await store.append(conv.id, Message.user(FilePart.from_stream(endless())))
        assert consumed <= 4  # refused as the limit was crossed, not after reading everything
        assert (await store.load(conv.id)).messages == []
    assert blob_keys(raw) == set()
    assert not staging_keys(raw)


async def test_media_type_mismatch_is_refused_and_nothing_is_written(
    store: ConversationStore, raw: RawStorage, tmp_path: Path
) -> None:
    conv = await store.create_conversation()
    path = tmp_path / "report.pdf"
    path.write_bytes(PNG)  # a PNG under a PDF name, declared as PDF
    with pytest.raises(MediaTypeMismatchError):
        await store.append(
            conv.id, Message.user(FilePart.from_path(path, media_type="application/pdf"))
        )
    assert (await store.load(conv.id)).messages == []
    assert blob_keys(raw) == set()
    # Undeclared, the bytes decide (the name's guess does not contradict them).
    (stored,) = await store.append(conv.id, Message.user(FilePart.from_path(path)))
    part = stored.parts[0]
    assert isinstance(part, FilePart)
    assert (part.media_type, part.filename) == ("image/png", "report.pdf")


async def test_streamed_files_are_stored(store: ConversationStore, tmp_path: Path) -> None:
    big = b"%PDF-1.7\n" + os.urandom(3 * 1024 * 1024)
    path = tmp_path / "big.pdf"
    path.write_bytes(big)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(PNG), 100):
            yield PNG[start : start + 100]

    conv = await store.create_conversation()
    stored = await store.append(
        conv.id, Message.user(FilePart.from_path(path), FilePart.from_stream(chunks()))
    )
    from_path, from_stream = stored[0].parts
    assert isinstance(from_path, FilePart) and isinstance(from_stream, FilePart)
    assert from_path.media_type == "application/pdf" and from_stream.media_type == "image/png"
    assert await store.read_attachment(from_path) == big
    assert await store.read_attachment(from_stream) == PNG


async def test_external_uris_stay_references(store: ConversationStore, raw: RawStorage) -> None:
    conv = await store.create_conversation()
    uri = "https://example.invalid/never-fetched.png"
    await store.append(conv.id, Message.user(FilePart.from_uri(uri)))
    (loaded,) = (await store.load(conv.id)).messages
    part = loaded.parts[0]
    assert isinstance(part, FilePart)
    assert (part.uri, part.media_type, part.attachment) == (uri, "image/png", None)
    assert blob_keys(raw) == set()


async def test_gc_never_deletes_referenced_or_young_blobs(
    store: ConversationStore, raw: RawStorage
) -> None:
    keep = await store.create_conversation()
    drop = await store.create_conversation()
    shared = FilePart.from_bytes(PNG)
    only_dropped = FilePart.from_bytes(PDF)
    await store.append(keep.id, Message.user(shared))
    await store.append(drop.id, Message.user(shared, only_dropped))
    await store.delete_conversation(drop.id)
    # Older than the grace period (S3 cannot back-date: there, each call waits 1.1 s).
    for sha in (shared.sha256, only_dropped.sha256):
        assert sha is not None
        await raw.make_stale(store.blob_store.key(sha))
    # Unreferenced but young: as if stored by an append whose rows are not committed yet.
    # The cutoff is pinned 1.5 s before this put (between it and the stale blobs, 2.1 s or an
    # hour older), however long each collection then takes: S3's clock has one-second steps.
    cutoff = time.time() - 1.5
    young_blob = await store.blob_store.put(b"\x89PNG\r\n\x1a\nyoung" + os.urandom(64))

    def grace() -> timedelta:
        return timedelta(seconds=time.time() - cutoff)

    dry = await collect_garbage(store, grace=grace(), dry_run=True)
    assert dry.deleted == [only_dropped.sha256]
    assert len(blob_keys(raw)) == 3

    report = await collect_garbage(store, grace=grace())
    assert report.deleted == [only_dropped.sha256]
    assert report.young == 1 and report.referenced == 1
    assert await store.blob_store.exists(young_blob.sha256)
    assert shared.sha256 is not None and await store.blob_store.exists(shared.sha256)
    kept_part = (await store.load(keep.id)).messages[0].parts[0]
    assert isinstance(kept_part, FilePart)
    assert await store.read_attachment(kept_part) == PNG
    assert (await fsck(store)).ok


async def test_gc_sweeps_stale_staging_objects(store: ConversationStore, raw: RawStorage) -> None:
    root_key = store.blob_store.key("0" * 64)
    # Named as the store names its staging objects (gc leaves any other name alone).
    staging_key = root_key.split("/sha256/")[0] + "/tmp/" + uuid.uuid4().hex
    raw.overwrite(staging_key, b"half a blob")
    await raw.make_stale(staging_key)
    report = await collect_garbage(store, grace=timedelta(seconds=1))
    assert report.staging == 1
    assert not staging_keys(raw)


async def test_fsck_finds_missing_and_corrupted_blobs(
    store: ConversationStore, raw: RawStorage
) -> None:
    conv = await store.create_conversation()
    image, document = FilePart.from_bytes(PNG), FilePart.from_bytes(PDF)
    await store.append(conv.id, Message.user(image, document))
    assert image.sha256 and document.sha256
    healthy = await fsck(store)
    assert healthy.ok and healthy.referenced == 2
    await store.blob_store.delete(image.sha256)
    raw.overwrite(store.blob_store.key(document.sha256), b"%PDF-1.4 not the same")
    report = await fsck(store)
    assert not report.ok
    assert report.missing == [image.sha256]
    assert report.corrupted == [document.sha256]


async def test_sqlite_file_holds_no_attachment_bytes(tmp_path: Path) -> None:
    image = b"\x89PNG\r\n\x1a\n" + os.urandom(1024 * 1024)
    database = tmp_path / "conv.db"
    blob_dir = tmp_path / "blobs"
    async with ConversationStore(f"sqlite+aiosqlite:///{database}", blobs=str(blob_dir)) as store:
        conv = await store.create_conversation()
        await store.append(
            conv.id,
            [
                Message.user("see attached", FilePart.from_bytes(image)),
                Message.assistant(ToolCallPart(id="c", name="echo")),
                Message(
                    role="tool",
                    parts=[
                        ToolResultPart(
                            call_id="c", output=ContentOutput(parts=[FilePart.from_bytes(image)])
                        )
                    ],
                ),
            ],
        )
    with sqlite3.connect(database) as conn:  # checkpoint: everything into the main file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("conv.db*"))
    assert len(stored) < len(image)  # the whole database is smaller than the image
    for offset in (8, 300_000, 700_000):
        sample = image[offset : offset + 48]
        assert sample not in stored
        assert base64.b64encode(sample)[8:40] not in stored
    blobs = [p for p in blob_dir.rglob("*") if p.is_file()]
    assert len(blobs) == 1 and blobs[0].read_bytes() == image


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convstore", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("CONVSTORE_")},
    )


async def test_gc_and_fsck_from_the_command_line(tmp_path: Path) -> None:
    async with ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'convstore.db'}") as store:
        kept = await store.create_conversation()
        (message,) = await store.append(kept.id, Message.user(FilePart.from_bytes(PNG)))
        gone = await store.create_conversation()
        await store.append(gone.id, Message.user(FilePart.from_bytes(PDF)))
        await store.delete_conversation(gone.id)
    part = message.parts[0]
    assert isinstance(part, FilePart) and part.attachment is not None

    checked = _cli("fsck", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "ok: 1 referenced blobs, 0 missing, 0 corrupted; 1 unreferenced" in checked.stdout
    assert "verifying" in checked.stderr  # progress

    dry = _cli("gc", "--dry-run", "--grace", "0", cwd=tmp_path)
    assert dry.returncode == 0 and "would delete 1 unreferenced" in dry.stdout
    collected = _cli("gc", "--grace", "0", cwd=tmp_path)
    assert collected.returncode == 0 and "deleted 1 unreferenced" in collected.stdout
    assert "unreferenced" not in _cli("fsck", cwd=tmp_path).stdout.split("ok:")[0]

    blob = next((tmp_path / "convstore-blobs" / "sha256").rglob(part.attachment.sha256))
    blob.write_bytes(b"\x89PNG\r\n\x1a\ncorrupted")
    broken = _cli("fsck", cwd=tmp_path)
    assert broken.returncode == 1
    assert "CORRUPTED" in broken.stdout and "PROBLEMS FOUND" in broken.stdout
