"""Blob maintenance: garbage collection and consistency checks (``convstore gc``/``fsck``).

Invariants:

- Garbage collection deletes a blob only when no message references it *and* it was last
  written (or touched by a dedupe hit) longer ago than the grace period, judged by the
  storage's own clock (`BlobStore.storage_now`): neither the collector's clock nor the
  appender's enters the decision, so hosts hours apart cannot make a fresh blob look old.
- No acknowledged message ever references a deleted blob, however long any party waits for a
  lock. Before deleting, the collector marks the blob (a ``blob_tombstones`` row) in a write
  transaction that proves it is unreferenced; appends check for that mark in the transaction
  that references the blob (so one of the two sees the other), and an append that sees it
  waits for the collection to finish, stores the bytes again and retries. After marking, the
  collector checks the blob's age once more and only then deletes the bytes, then the mark.
- Blobs live in namespaces (one per tenant unless deduplication is global); a reference names
  its namespace, and each namespace is collected on its own.
- Blobs a tenant erase released (`convstore.store.maintenance.released_blobs`) skip the grace
  period: the erase proved them unreferenced and no append has referenced them since unless the
  marking finds it. Their age is judged against the collection's start instead.
- Staging objects older than the grace period (left by writers that crashed mid-put) are swept.
- ``fsck`` never changes anything: it verifies every referenced blob's bytes against its hash
  and lists blobs nothing references.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from convstore.db import sqlite_path
from convstore.db.tx import Tx
from convstore.errors import InvalidInputError
from convstore.progress import Progress
from convstore.progress import silent as _silent
from convstore.store import _settings
from convstore.store.load.reads import referenced_blobs
from convstore.store.maintenance import released_blobs

if TYPE_CHECKING:
    from convstore.store._connection import StoreConnection

__all__ = [
    "DEFAULT_GRACE",
    "FsckReport",
    "GarbageReport",
    "Progress",
    "blob_url",
    "collect_blobs",
    "collect_garbage",
    "collect_released",
    "fsck",
    "record_blob_location",
]

DEFAULT_GRACE = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class GarbageReport:
    """What a garbage collection found and did."""

    examined: int
    """Blobs listed in the blob store."""
    referenced: int
    """Distinct blobs some part references."""
    deleted: list[str]
    """The blobs deleted (or, on a dry run, that would be): their digest, prefixed with
    ``<namespace>:`` outside the shared namespace."""
    young: int
    """Unreferenced blobs kept because they are younger than the grace period."""
    staging: int
    """Stale staging objects removed (or, on a dry run, found)."""
    dry_run: bool


@dataclass(frozen=True, slots=True)
class FsckReport:
    """What a consistency check found."""

    referenced: int
    """Distinct blobs some part references."""
    missing: list[str] = field(default_factory=list)
    """Referenced blobs absent from the blob store."""
    corrupted: list[str] = field(default_factory=list)
    """Referenced blobs whose bytes no longer match their hash."""
    unreferenced: list[str] = field(default_factory=list)
    """Blobs nothing references (garbage collection will take them once old enough)."""

    @property
    def ok(self) -> bool:
        """Whether every referenced blob is present and intact."""
        return not self.missing and not self.corrupted


def _label(namespace: str, sha256: str) -> str:
    return f"{namespace}:{sha256}" if namespace else sha256


def blob_url(store: StoreConnection, label: str) -> str:
    """The storage URL of a blob as the reports name it (``[<namespace>:]<digest>``)."""
    namespace, _, sha256 = label.rpartition(":")
    return store.blob_store.namespace(namespace).key(sha256)


async def collect_garbage(
    store: StoreConnection,
    *,
    grace: timedelta = DEFAULT_GRACE,
    dry_run: bool = False,
    progress: Progress = _silent,
) -> GarbageReport:
    """Delete blobs no message references that are older than ``grace`` (storage clock)."""
    root = store.blob_store
    referenced = await store.backend.read(referenced_blobs)
    cutoff = await root.storage_now() - grace
    if not dry_run:
        # A deletion record only matters to appends in flight across it: keep two graces.
        old = cutoff - grace

        def purge(tx: Tx) -> None:
            tx.execute(tx.statements.purge_tombstones, {"before": tx.codec.dump_time(old)})

        await store.backend.write(purge)
    released = await store.backend.read(released_blobs.pending)
    # Deleted here, or kept because an append took them: not candidates of the scan.
    settled = {(ns, sha) for ns, sha, _ in released} - referenced
    deleted = []
    if not dry_run:
        deleted = await collect_released(store, released, referenced, progress=progress)
    examined, young, staging = 0, 0, 0
    for namespace in await root.namespaces():
        blobs = root.namespace(namespace)
        batch: list[str] = []
        async for listed in blobs.iter_blob_batches():
            examined += len(listed)
            progress("scanning blobs", examined, None)
            for info in listed:
                if (namespace, info.sha256) in referenced:
                    continue
                if (namespace, info.sha256) in settled:
                    if dry_run:
                        deleted.append(_label(namespace, info.sha256))
                    continue
                if info.modified >= cutoff:
                    young += 1
                    continue
                batch.append(info.sha256)
                if len(batch) >= GC_BATCH:
                    deleted += await _settle(store, namespace, batch, cutoff, dry_run)
                    progress("deleting blobs", len(deleted), None)
                    batch = []
        if batch:
            deleted += await _settle(store, namespace, batch, cutoff, dry_run)
        staging += await blobs.sweep_staging(older_than=cutoff, dry_run=dry_run)
    progress("scanning blobs", examined, examined)
    return GarbageReport(examined, len(referenced), deleted, young, staging, dry_run)


async def collect_blobs(
    store: StoreConnection, blobs: list[tuple[str, str]], *, progress: Progress = _silent
) -> list[str]:
    """Delete these (namespace, digest) blobs now if nothing references them; their labels.

    For blobs known to have just lost their last reference (`convstore.store.maintenance._erase`):
    no grace period, but the same marking protocol as `collect_garbage`, so an append that
    references one of them meanwhile keeps it (it commits first) or stores it again.
    """
    by_namespace: dict[str, list[str]] = {}
    for namespace, sha256 in blobs:
        by_namespace.setdefault(namespace, []).append(sha256)
    # Anything modified before this instant may go (an append touching the bytes later keeps
    # them: `_collect` re-reads the modified time after marking).
    cutoff = await store.blob_store.storage_now()
    deleted: list[str] = []
    for namespace, digests in sorted(by_namespace.items()):
        ordered = sorted(set(digests))
        for start in range(0, len(ordered), GC_BATCH):
            gone = await _collect(store, namespace, ordered[start : start + GC_BATCH], cutoff)
            deleted += [_label(namespace, sha256) for sha256 in gone]
            progress("deleting blobs", len(deleted), len(blobs))
    return deleted


async def collect_released(
    store: StoreConnection,
    released: Sequence[released_blobs.Released],
    referenced: Set[tuple[str, str]] = frozenset(),
    *,
    progress: Progress = _silent,
) -> list[str]:
    """Delete the released blobs nothing in ``referenced`` holds, then forget the records.

    The deletion is `collect_blobs` (no grace period, the marking protocol); the labels of
    the blobs deleted.
    """
    unreferenced = [(ns, sha) for ns, sha, _ in released if (ns, sha) not in referenced]
    deleted = await collect_blobs(store, unreferenced, progress=progress)
    if released:
        await store.backend.write(lambda tx: released_blobs.forget(tx, released))
    return deleted


GC_BATCH = 1024
"""Candidates marked, deleted and unmarked together: one write transaction each way (of a
handful of statements, whatever the size). An append that meets a mark waits for its batch's
deletions, a fraction of a second; smaller batches made commits most of a collection's time
(256: 1,400 to 2,400 blobs/s on PostgreSQL here, 1,024: 2,900 to 4,100)."""


async def _settle(
    store: StoreConnection, namespace: str, candidates: list[str], cutoff: datetime, dry_run: bool
) -> list[str]:
    """Delete what a batch of candidates still may lose; their labels."""
    if dry_run:
        return [_label(namespace, sha256) for sha256 in candidates]
    gone = await _collect(store, namespace, sorted(candidates), cutoff)
    return [_label(namespace, sha256) for sha256 in gone]


async def _collect(
    store: StoreConnection, namespace: str, candidates: list[str], cutoff: datetime
) -> list[str]:
    """Delete the candidate blobs no append has taken since the listing; the ones deleted.

    Candidates come sorted by digest, the order appends lock catalogue rows in too, so the
    collector and an append never wait for each other in a cycle.
    """
    now = datetime.now(UTC)  # only a record of when the marks were made, never compared

    def mark(tx: Tx) -> list[str]:
        st = tx.statements
        stamp = tx.codec.dump_time(now)
        # One statement each for the whole batch, whatever its size. Hold each catalogue row
        # (made if an append stored the bytes but never committed) so that appends referencing
        # the blob wait for this mark, or this waits for them: every row is locked before any
        # reference is looked for, so an append that committed a reference before the lock is
        # seen, and one that has not yet will see the mark.
        digests = tx.codec.dump_json(candidates)
        tx.execute(st.catalogue_attachments, {"digests": digests, "stamp": stamp})
        tx.fetch(st.lock_attachments_exclusive, {"digests": digests})
        params = {"namespace": namespace, "digests": digests}
        taken = {sha256 for (sha256,) in tx.fetch(st.select_blobs_referenced_in, params)}
        marked = [sha256 for sha256 in candidates if sha256 not in taken]
        if marked:
            marks = {"ns": namespace, "digests": tx.codec.dump_json(marked)}
            tx.execute(st.delete_tombstones_in, marks)  # earlier, unfinished marks
            tx.execute(st.mark_tombstones, {**marks, "stamp": stamp})
        return marked

    marked = await store.backend.write(mark)
    if not marked:
        return []
    blobs = store.blob_store.namespace(namespace)
    deleted: list[str] = []
    deleted_at: datetime | None = None
    try:
        # Every append that stored or touched these bytes before the mark committed did so
        # before the stat that precedes each deletion here. One that touches them after it finds
        # the mark in its transaction (a deletion in progress, or one recorded as later than its
        # put) and stores them again.
        deletion = await blobs.delete_stale(marked, modified_before=cutoff)
        deleted = deletion.deleted
        # After every deletion of the batch: an append whose put came before this instant may
        # have touched bytes that are gone, and stores them again.
        deleted_at = await blobs.storage_now()
        if deletion.failure is not None:
            raise deletion.failure
    finally:
        finished_at = deleted_at

        def unmark(tx: Tx) -> None:
            st = tx.statements
            gone = set(deleted)
            kept = [sha for sha in marked if sha not in gone]
            if kept:
                params = {"ns": namespace, "digests": tx.codec.dump_json(kept)}
                tx.execute(st.delete_tombstones_in, params)
            if deleted and finished_at is not None:
                digests = tx.codec.dump_json(deleted)
                stamp = tx.codec.dump_time(finished_at)
                params = {"ns": namespace, "digests": digests, "deleted_at": stamp}
                tx.execute(st.finish_tombstones_in, params)
                # The catalogue row goes with the last reference in any namespace.
                tx.execute(st.delete_unreferenced_attachments_in, {"digests": digests})

        await store.backend.write(unmark)
    return deleted


async def fsck(
    store: StoreConnection, *, concurrency: int = 8, progress: Progress = _silent
) -> FsckReport:
    """Verify every referenced blob and list unreferenced ones; changes nothing."""
    root = store.blob_store
    referenced = sorted(await store.backend.read(referenced_blobs))
    stored = {
        (namespace, info.sha256)
        for namespace in await root.namespaces()
        async for info in root.namespace(namespace).iter_blobs()
    }
    missing = [blob for blob in referenced if blob not in stored]
    present = [blob for blob in referenced if blob in stored]
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def verify(namespace: str, sha: str) -> bool:
        nonlocal done
        async with semaphore:
            intact = await root.namespace(namespace).verify(sha)
        done += 1
        if done % 100 == 0:
            progress("verifying blobs", done, len(present))
        return intact

    results = await asyncio.gather(*(verify(ns, sha) for ns, sha in present))
    progress("verifying blobs", len(present), len(present))
    corrupted = [blob for blob, intact in zip(present, results, strict=True) if not intact]
    return FsckReport(
        len(referenced),
        [_label(*blob) for blob in missing],
        [_label(*blob) for blob in corrupted],
        [_label(*blob) for blob in sorted(stored.difference(referenced))],
    )


async def record_blob_location(
    store: StoreConnection, *, progress: Progress = _silent
) -> FsckReport:
    """Record the store's blob location (its ``blobs=``) in the database, for every later store.

    Only after `fsck` of that location finds every referenced blob present (and intact); else
    `InvalidInputError` says how many are missing, and nothing is recorded. A directory beside
    or under the SQLite file is recorded relative to it (see `convstore.store._settings`).
    """
    url = store.blobs_url
    if not _settings.recordable(url):
        raise InvalidInputError(f"{url} does not outlive the process: nothing to record")
    report = await fsck(store, progress=progress)
    if report.missing or report.corrupted:
        raise InvalidInputError(
            f"{url} lacks {len(report.missing):,} and has {len(report.corrupted):,} corrupted "
            f"of the {report.referenced:,} referenced blobs: not recorded"
        )
    database = sqlite_path(store.url)
    location = _settings.to_record(url, database)
    await store.backend.write(lambda tx: _settings.replace(tx, location))
    store.recorded_blobs_url = _settings.resolve(location, database)
    return report
