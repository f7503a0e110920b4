"""Two workloads of issue 26: short runs in the tests (behaviour), long ones in
`bench.contention_bench` (timings).

- `listings_beside_io`: four filtered listings page through a metadata filter in a loop while a
  writer appends to one conversation and a reader loads it; every operation's result is
  checked as it returns (a listing's page holds only matching conversations, newest first; a
  load sees a whole prefix of what was appended), and the reader's load times and the SQLite
  WAL's largest size are recorded.
- `gc_beside_writers`: writers append messages with attachments (some bytes shared between
  writers, so appends race the collector on dedupe hits) and delete some of their
  conversations (making garbage), while `collect_garbage` runs in a loop, each collection
  checked to delete every blob that was garbage older than the grace period when it began
  (`checked_collection`); afterwards every attachment of every kept conversation must read
  back, and the oldest unreferenced blob's age is recorded after every collection.

A run stops after ``appends`` appends of the writer(s) (tests) or after ``seconds`` (bench).
Nothing here imports pytest.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from convstore import ConversationStore, FilePart, Message
from convstore.store.load.reads import referenced_blobs
from convstore.store.maintenance.garbage import collect_garbage

LISTERS = 4
PROJECTS = 10
Blob = tuple[str, str]
"""(namespace, digest)."""
"""Conversations carry ``{"project": p<i % PROJECTS>, "run": <run>}``: each filter matches 10 %."""


@dataclass
class ListingRun:
    """What `listings_beside_io` saw."""

    appended: int = 0
    loads_ms: list[float] = field(default_factory=list)
    pages: int = 0
    wal_peak: int = 0


class _Clock:
    """When a run stops: after ``appends`` appends, or ``seconds`` after it starts."""

    def __init__(self, appends: int | None, seconds: float | None) -> None:
        self._appends, self._deadline = appends, None
        if seconds is not None:
            self._deadline = time.monotonic() + seconds
        self.stopped = False

    def over(self, appended: int) -> bool:
        if self._appends is not None and appended >= self._appends:
            self.stopped = True
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self.stopped = True
        return self.stopped


async def populate(store: ConversationStore, run: str, count: int) -> None:
    """``count`` conversations tagged with ``run`` (the filters' universe), 50 created at once."""
    for start in range(0, count, 50):
        await asyncio.gather(
            *(
                store.create_conversation(
                    title=f"{run} {i}", metadata={"project": f"p{i % PROJECTS}", "run": run}
                )
                for i in range(start, min(start + 50, count))
            )
        )


async def listings_beside_io(
    store: ConversationStore,
    run: str,
    *,
    appends: int | None = None,
    seconds: float | None = None,
    text_bytes: int = 2000,
    wal: Path | None = None,
) -> ListingRun:
    """The four listings, the writer and the reader, until the clock stops them (see module)."""
    clock, result = _Clock(appends, seconds), ListingRun()
    chat = await store.create_conversation(title=f"{run} chat")
    filler = "x" * text_bytes

    def watch_wal() -> None:
        if wal is not None and wal.exists():
            result.wal_peak = max(result.wal_peak, wal.stat().st_size)

    async def writer() -> None:
        while not clock.over(result.appended):
            await store.append(chat.id, [Message.user(f"{result.appended} {filler}")])
            result.appended += 1
            watch_wal()

    async def reader() -> None:
        newest = -1
        while not clock.stopped:
            began = time.perf_counter()
            loaded = await store.load(chat.id, last=50)
            result.loads_ms.append((time.perf_counter() - began) * 1e3)
            numbers = [int(m.text.split(" ", 1)[0]) for m in loaded.messages]
            if not numbers:
                continue
            if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
                raise AssertionError(f"a load saw a broken window of the chat: {numbers}")
            if numbers[-1] < newest:
                raise AssertionError(f"a load went back from message {newest} to {numbers[-1]}")
            newest = numbers[-1]

    async def lister(project: str) -> None:
        metadata = {"project": project, "run": run}
        while not clock.stopped:
            cursor = None
            newest_first: list[tuple[object, str]] = []
            while not clock.stopped:
                page = await store.list_conversations(limit=20, cursor=cursor, metadata=metadata)
                result.pages += 1
                for conversation in page:
                    if conversation.metadata != metadata:
                        raise AssertionError(f"{conversation.id} does not match {metadata}")
                    newest_first.append((conversation.created_at, conversation.id))
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            if newest_first != sorted(newest_first, reverse=True):
                raise AssertionError("a listing was not newest first")

    async with asyncio.TaskGroup() as group:  # one failure cancels the rest
        for work in (writer(), reader(), *(lister(f"p{n}") for n in range(LISTERS))):
            group.create_task(work)
    watch_wal()
    stored = await store.load(chat.id)
    if [m.text.split(" ", 1)[0] for m in stored.messages] != [
        str(n) for n in range(result.appended)
    ]:
        raise AssertionError("the chat does not hold exactly what was appended")
    return result


@dataclass
class Taken:
    """The digests appends referenced, each with the number of the latest append that did."""

    appends: int = 0
    latest: dict[str, int] = field(default_factory=dict)

    def record(self, stored: list[Message]) -> None:
        """An append returned ``stored``."""
        self.appends += 1
        for message in stored:
            for file in message.files:
                if file.attachment is not None:
                    self.latest[file.attachment.sha256] = self.appends

    def since(self, appends: int) -> set[str]:
        """The digests appends returning after the first ``appends`` referenced."""
        return {sha256 for sha256, n in self.latest.items() if n > appends}


@dataclass
class GcRun:
    """What `gc_beside_writers` saw."""

    appended: int = 0
    deleted_conversations: int = 0
    collections: int = 0
    blobs_deleted: int = 0
    garbage_ages_s: list[float] = field(default_factory=list)
    """After each collection: the age of the oldest unreferenced blob (0 if none)."""
    kept: list[str] = field(default_factory=list)
    due: int = 0
    """Blobs that were garbage older than the grace period when a collection began, summed
    over the collections (each of them the collection had to delete)."""
    taken: Taken = field(default_factory=Taken)
    """The digests the writers' appends referenced, for `checked_collection`."""


def _file(writer: int, n: int) -> bytes:
    """Attachment bytes: one in three shared by every writer (a dedupe hit racing gc)."""
    seed = f"shared {n % 7}" if n % 3 == 0 else f"writer {writer} file {n}"
    return b"\x89PNG\r\n\x1a\n" + hashlib.sha256(seed.encode()).digest() * 64


async def oldest_garbage_age(store: ConversationStore) -> float:
    """Seconds since the oldest unreferenced blob was last written (storage clock; 0: none)."""
    referenced = await store.backend.read(referenced_blobs)
    root = store.blob_store
    now = await root.storage_now()
    oldest = now
    for namespace in await root.namespaces():
        async for info in root.namespace(namespace).iter_blobs():
            if (namespace, info.sha256) not in referenced:
                oldest = min(oldest, info.modified)
    return (now - oldest).total_seconds()


async def due_garbage(store: ConversationStore, grace: timedelta) -> dict[Blob, datetime]:
    """Every blob unreferenced now and older than ``grace`` (storage clock), with its time.

    A collection that begins after this must delete each of them, unless an append takes one
    meanwhile: it touches the bytes (see `left_behind`), or it put them before this listing and
    commits after it (see `checked_collection`).
    """
    referenced = await store.backend.read(referenced_blobs)
    root = store.blob_store
    cutoff = await root.storage_now() - grace
    due = {}
    for namespace in await root.namespaces():
        async for info in root.namespace(namespace).iter_blobs():
            if (namespace, info.sha256) not in referenced and info.modified < cutoff:
                due[(namespace, info.sha256)] = info.modified
    return due


async def left_behind(store: ConversationStore, due: dict[Blob, datetime]) -> list[Blob]:
    """Those of ``due`` still stored, untouched since, and still unreferenced."""
    referenced = await store.backend.read(referenced_blobs)
    root = store.blob_store
    left = []
    for (namespace, sha256), modified in due.items():
        info = await root.namespace(namespace).info(sha256)
        if info is not None and info.modified == modified and (namespace, sha256) not in referenced:
            left.append((namespace, sha256))
    return left


async def checked_collection(
    store: ConversationStore, grace: timedelta, taken: Taken | None = None
) -> tuple[int, int]:
    """One collection that must leave no blob that was garbage older than ``grace`` when it
    began (`AssertionError` otherwise); how many it deleted, and how many were due.

    ``taken``: the appends running meanwhile. A blob one of them referenced is not required
    gone: an append that stored (or touched) its bytes more than ``grace`` before the listing
    and committed the reference after it (a slow append on a loaded machine, with the short
    grace periods of the tests) made it referenced when the collection began.
    """
    before = taken.appends if taken is not None else 0
    due = await due_garbage(store, grace)
    report = await collect_garbage(store, grace=grace)
    left = await left_behind(store, due)
    if taken is not None:
        meanwhile = taken.since(before)
        left = [blob for blob in left if blob[1] not in meanwhile]
    if left:
        raise AssertionError(
            f"a collection left {len(left)} of the {len(due)} blobs that were garbage older "
            f"than the grace period when it began, e.g. {left[0]}"
        )
    return len(report.deleted), len(due)


async def gc_beside_writers(
    store: ConversationStore,
    *,
    writers: int = 12,
    grace: timedelta,
    interval: float,
    appends: int | None = None,
    seconds: float | None = None,
    measure_garbage: bool = True,
) -> GcRun:
    """The writers and the looping collector, until the clock stops them (see module)."""
    clock, result = _Clock(appends, seconds), GcRun()

    async def write(writer: int) -> None:
        n = 0
        while not clock.over(result.appended):
            conversation = await store.create_conversation(title=f"writer {writer}")
            for _ in range(3):
                files = [FilePart.from_bytes(_file(writer, n + k)) for k in range(2)]
                stored = await store.append(
                    conversation.id, [Message.user(f"{writer}/{n}", *files)]
                )
                result.taken.record(stored)
                n += 2
                result.appended += 1
            if n % 4 == 0:
                await store.delete_conversation(conversation.id)  # its files become garbage
                result.deleted_conversations += 1
            else:
                result.kept.append(conversation.id)

    async def collect() -> None:
        while not clock.stopped:
            deleted, due = await checked_collection(store, grace, result.taken)
            result.collections += 1
            result.blobs_deleted += deleted
            result.due += due
            if measure_garbage:
                result.garbage_ages_s.append(await oldest_garbage_age(store))
            await _sleep_unless(clock, interval)

    async with asyncio.TaskGroup() as group:  # one failure cancels the rest
        for work in (collect(), *(write(w) for w in range(writers))):
            group.create_task(work)
    return result


async def _sleep_unless(clock: _Clock, seconds: float) -> None:
    """Sleep ``seconds`` (the collector's interval), waking early once the run is over."""
    step = 0.05
    waited = 0.0
    while waited < seconds and not clock.stopped:
        await asyncio.sleep(min(step, seconds - waited))
        waited += step


async def read_back_every_file(store: ConversationStore, conversation_ids: list[str]) -> int:
    """Read every attachment of these conversations (raises if one is gone); how many."""
    count = 0
    for cid in conversation_ids:
        for message in (await store.load(cid)).messages:
            for part in message.files:
                await store.read_attachment(part)
                count += 1
    return count
