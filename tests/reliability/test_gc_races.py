"""Garbage collection never deletes a blob that an acknowledged message references.

Each interleaving the collector can meet is set up deterministically: the collector is held at
a chosen point (by wrapping the blob store's operations with events), a second connection holds
the database's write lock, and the storage's clock is skewed against the hosts'. After every
scenario the appended message's attachment must read back and ``fsck`` must be clean.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, FilePart, Message
from convstore.blobs import BlobStore
from convstore.blobs._threaded import LocalBackend
from convstore.store.load import reads
from convstore.store.maintenance.garbage import collect_garbage, fsck

PNG = b"\x89PNG\r\n\x1a\n" + b"gc race" * 40
HOUR = 3600


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ConversationStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}"
    async with ConversationStore(url, blobs=str(tmp_path / "blobs")) as opened:
        yield opened


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


async def _orphan_old_blob(store: ConversationStore, tmp_path: Path) -> str:
    """The PNG stored by an append that was then deleted, its bytes two hours old."""
    conv = await store.create_conversation()
    (message,) = await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    part = message.parts[0]
    assert isinstance(part, FilePart) and part.attachment is not None
    await store.delete_conversation(conv.id)
    sha = part.attachment.sha256
    _age(tmp_path / "blobs" / "sha256" / sha[:2] / sha, 2 * HOUR)
    return sha


async def _assert_intact(store: ConversationStore, conversation_id: str) -> None:
    loaded = await store.load(conversation_id)
    (part,) = loaded.messages[-1].parts
    assert isinstance(part, FilePart)
    assert await store.read_attachment(part) == PNG
    report = await fsck(store)
    assert report.ok, (report.missing, report.corrupted)


def _hold_before_checking(
    monkeypatch: pytest.MonkeyPatch, reached: asyncio.Event, release: threading.Event
) -> None:
    """Stop gc's first deletion batch before it re-reads any blob's age, until released."""
    original = BlobStore.delete_stale
    loop = asyncio.get_running_loop()

    async def held(self: BlobStore, *args: Any, **kwargs: Any) -> Any:
        reached.set()
        await loop.run_in_executor(None, release.wait, 30)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(BlobStore, "delete_stale", held)


def _hold_before_unlinking(
    monkeypatch: pytest.MonkeyPatch, reached: asyncio.Event, release: threading.Event
) -> None:
    """Stop gc between re-reading a blob's age and deleting its file (in the worker thread)."""
    original = LocalBackend._delete_file
    loop = asyncio.get_running_loop()
    used = False

    def held(self: LocalBackend, path: str) -> bool:
        nonlocal used
        if not used:
            used = True
            loop.call_soon_threadsafe(reached.set)
            release.wait(30)
        return original(self, path)

    monkeypatch.setattr(LocalBackend, "_delete_file", held)


def _signal_when_an_append_meets_a_mark(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """An event set when an append, having stored its bytes, finds gc's mark on them and waits."""
    met = asyncio.Event()
    loop = asyncio.get_running_loop()
    original = reads.tombstoned

    def tombstoned(tx: Any, blobs: Any) -> bool:
        marked = original(tx, blobs)
        if marked:  # runs in the driver's thread
            loop.call_soon_threadsafe(met.set)
        return marked

    monkeypatch.setattr(reads, "tombstoned", tombstoned)
    return met


async def _race(
    store: ConversationStore,
    monkeypatch: pytest.MonkeyPatch,
    hold_at: str,
    append_first: Callable[[str], Awaitable[Any]],
) -> str:
    """Hold gc at ``hold_at`` on the candidate, run an append of the same bytes, let gc go."""
    reached, release = asyncio.Event(), threading.Event()
    hold = _hold_before_checking if hold_at == "age check" else _hold_before_unlinking
    hold(monkeypatch, reached, release)
    met = _signal_when_an_append_meets_a_mark(monkeypatch)
    gc = asyncio.create_task(collect_garbage(store, grace=timedelta(hours=1)))
    try:
        await asyncio.wait_for(reached.wait(), 30)
        conv = await store.create_conversation()
        append = asyncio.create_task(append_first(conv.id))
        # The race is set up only once the append has stored (touched) the bytes and its
        # transaction has found gc's mark: then it must wait for gc, which is still held.
        waiting = asyncio.create_task(met.wait())
        await asyncio.wait({append, waiting}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        assert met.is_set(), "the append never met the collector's mark: the race was not set up"
        assert not append.done() and not gc.done()
    finally:
        release.set()
    await asyncio.wait_for(asyncio.gather(gc, append), 30)
    monkeypatch.undo()
    return conv.id


@pytest.mark.parametrize("hold_at", ["age check", "unlink"])
async def test_an_append_racing_the_collector_keeps_its_blob(
    store: ConversationStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hold_at: str
) -> None:
    # "age check": gc has marked the blob and is about to re-read its age; "unlink": it has
    # found it old and is about to delete the bytes the append just touched as a dedupe hit.
    await _orphan_old_blob(store, tmp_path)

    async def append(cid: str) -> Any:
        return await store.append(cid, Message.user(FilePart.from_bytes(PNG)))

    cid = await _race(store, monkeypatch, hold_at, append)
    await _assert_intact(store, cid)


async def test_gc_waiting_for_the_write_lock_does_not_delete_a_newly_referenced_blob(
    store: ConversationStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reported failure: gc picks a candidate, waits ~1 s for the database lock while an
    # append re-uploads the same bytes (a dedupe hit) and commits, then deletes them.
    await _orphan_old_blob(store, tmp_path)
    holder = sqlite3.connect(tmp_path / "gc.db", isolation_level=None)
    backend = store.backend
    original_write = backend.write
    marking = asyncio.Event()

    async def write(fn: Callable[[Any], Any]) -> Any:
        if getattr(fn, "__name__", "") == "mark" and not marking.is_set():
            # gc has listed the candidate and judged it old; its mark cannot commit before the
            # holder does.
            holder.execute("BEGIN IMMEDIATE")
            marking.set()
        return await original_write(fn)

    monkeypatch.setattr(backend, "write", write)
    try:
        gc = asyncio.create_task(collect_garbage(store, grace=timedelta(hours=1)))
        await asyncio.wait_for(marking.wait(), 30)
        # An append stores (touches) the same bytes now, before its rows can commit.
        await store.blob_store.put(PNG)
        assert not gc.done(), "gc finished while the lock was held: the race was not set up"
        holder.execute("COMMIT")
        await asyncio.wait_for(gc, 30)
    finally:
        holder.close()
        monkeypatch.undo()
    conv = await store.create_conversation()
    await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    await _assert_intact(store, conv.id)


def _skew_storage_clock(monkeypatch: pytest.MonkeyPatch, offset: timedelta) -> None:
    """Make every modified time the storage reports ``offset`` off the hosts' clocks."""
    from convstore.blobs import _threaded

    original = _threaded.file_modified

    def skewed(status: os.stat_result) -> datetime:
        return original(status) + offset

    # The one source of a local file's time: stats, listings and the storage clock's probe.
    monkeypatch.setattr(_threaded, "file_modified", skewed)


@pytest.mark.parametrize("offset_hours", [-2, 2])
async def test_clock_skew_never_makes_an_in_flight_blob_collectable(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch, offset_hours: int
) -> None:
    # A storage clock 2 h behind the gc host (or a gc host 2 h ahead) made the bytes of an
    # append in flight look older than the one-hour grace period.
    _skew_storage_clock(monkeypatch, timedelta(hours=offset_hours))
    conv = await store.create_conversation()
    stored = await store.blob_store.put(PNG)  # the append's blobs go in before its rows
    report = await collect_garbage(store, grace=timedelta(hours=1))
    assert report.deleted == [] and report.young == 1
    await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    assert stored.sha256
    await _assert_intact(store, conv.id)


async def test_no_tenant_can_tell_what_another_stored(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The timing oracle: appending bytes another tenant had stored was a dedupe hit (a touch,
    # 3.4 ms for 1 MB) and new bytes a full write (6.6 ms), 40 of 40 told apart. Per-tenant
    # namespaces make both the same work; compared here as the storage operations each append
    # performs (deterministic, unlike a stopwatch), over 40 trials.
    from convstore.blobs import _backend

    calls: list[str] = []
    for name in ("touch", "write", "stage", "publish", "info"):
        original = getattr(_backend.BlobBackend, name)

        def traced(original: Any = original, name: str = name) -> Any:
            async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(name)
                return await original(self, *args, **kwargs)

            return call

        monkeypatch.setattr(_backend.BlobBackend, name, traced())
    owner = await store.create_conversation(tenant="owner")
    snoop = await store.create_conversation(tenant="snoop")
    for trial in range(40):
        stored_by_other = PNG + f"stored by the owner {trial}".encode()
        never_stored = PNG + f"never stored {trial}".encode()
        await store.append(owner.id, Message.user(FilePart.from_bytes(stored_by_other)))
        traces = []
        for data in (stored_by_other, never_stored):
            calls.clear()
            await store.append(snoop.id, Message.user(FilePart.from_bytes(data)))
            traces.append(list(calls))
        assert traces[0] == traces[1], trial
