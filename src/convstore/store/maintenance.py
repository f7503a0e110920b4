"""Blob maintenance: garbage collection and consistency checks (``convstore gc``/``fsck``).

Invariants:

- Garbage collection deletes a blob only when no part row references it *and* it was last
  written (or touched by a dedupe hit) longer ago than the grace period. Every put refreshes
  that time before the rows referencing it commit, so an in-flight append is never robbed.
  Just before deleting, the blob is stat'ed again and its catalog row removed in a transaction
  that proves it is still unreferenced; only then do the bytes go.
- What is left: an append that re-stores the very same bytes in the microseconds between that
  last check and the delete would reference a deleted blob; ``fsck`` reports such a blob as
  missing. The grace period (default one hour) makes the window practically unreachable.
- Staging objects older than the grace period (left by writers that crashed mid-put) are swept.
- ``fsck`` never changes anything: it verifies every referenced blob's bytes against its hash
  and lists blobs nothing references.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from convstore.db.tx import Tx
from convstore.store.conversation_store import ConversationStore
from convstore.store.reads import referenced_blobs

__all__ = ["DEFAULT_GRACE", "FsckReport", "GarbageReport", "Progress", "collect_garbage", "fsck"]

DEFAULT_GRACE = timedelta(hours=1)

Progress = Callable[[str, int, int | None], None]
"""``progress(stage, done, total)``: called as work advances (``total`` when known)."""


@dataclass(frozen=True, slots=True)
class GarbageReport:
    """What a garbage collection found and did."""

    examined: int
    """Blobs listed in the blob store."""
    referenced: int
    """Distinct blobs some part references."""
    deleted: list[str]
    """Hashes of the blobs deleted (or, on a dry run, that would be)."""
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


def _silent(stage: str, done: int, total: int | None) -> None:
    """Default progress: report nothing."""


async def collect_garbage(
    store: ConversationStore,
    *,
    grace: timedelta = DEFAULT_GRACE,
    dry_run: bool = False,
    progress: Progress = _silent,
) -> GarbageReport:
    """Delete blobs no row references that are older than ``grace``."""
    blobs = store.blob_store
    referenced = await store.backend.read(referenced_blobs)
    cutoff = datetime.now(UTC) - grace
    examined, young, deleted = 0, 0, []
    async for info in blobs.iter_blobs():
        examined += 1
        if examined % 500 == 0:
            progress("scanning", examined, None)
        if info.sha256 in referenced:
            continue
        if info.modified >= cutoff:
            young += 1
            continue
        if dry_run:
            deleted.append(info.sha256)
            continue
        if await _still_garbage(store, info.sha256, cutoff):
            await blobs.delete(info.sha256)
            deleted.append(info.sha256)
    progress("scanning", examined, examined)
    staging = await blobs.sweep_staging(older_than=cutoff, dry_run=dry_run)
    return GarbageReport(examined, len(referenced), deleted, young, staging, dry_run)


async def _still_garbage(store: ConversationStore, sha256: str, cutoff: datetime) -> bool:
    """Re-check one candidate right before deleting it (an append may have just stored it)."""
    current = await store.blob_store.info(sha256)
    if current is None or current.modified >= cutoff:
        return False

    def uncatalogue(tx: Tx) -> bool:
        st = tx.statements
        if tx.fetch(st.select_attachment_visible.any_tenant, {"sha256": sha256}):
            return False  # referenced after all: an append committed since the listing
        # The catalogue row may be absent (bytes stored, append failed); the delete is
        # guarded by NOT EXISTS as well, for databases where the SELECT above is not a lock.
        tx.execute(st.delete_unreferenced_attachment, {"sha256": sha256})
        return True

    return await store.backend.write(uncatalogue)


async def fsck(
    store: ConversationStore, *, concurrency: int = 8, progress: Progress = _silent
) -> FsckReport:
    """Verify every referenced blob and list unreferenced ones; changes nothing."""
    blobs = store.blob_store
    referenced = sorted(await store.backend.read(referenced_blobs))
    stored = {info.sha256 async for info in blobs.iter_blobs()}
    missing = [sha for sha in referenced if sha not in stored]
    present = [sha for sha in referenced if sha in stored]
    semaphore = asyncio.Semaphore(concurrency)
    done = 0

    async def verify(sha: str) -> bool:
        nonlocal done
        async with semaphore:
            intact = await blobs.verify(sha)
        done += 1
        if done % 100 == 0:
            progress("verifying", done, len(present))
        return intact

    results = await asyncio.gather(*(verify(sha) for sha in present))
    progress("verifying", len(present), len(present))
    corrupted = [sha for sha, intact in zip(present, results, strict=True) if not intact]
    unreferenced = sorted(stored.difference(referenced))
    return FsckReport(len(referenced), missing, corrupted, unreferenced)
