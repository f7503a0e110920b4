"""Blobs an erase released: recorded with the erase, deleted by the next gc whatever their age.

Invariants:

- A record is written in the erase's own transaction (`convstore.store.maintenance._erase`), so it
  exists exactly when the rows that referenced the blob are gone.
- A record only lets garbage collection skip the grace period; the deletion itself still goes
  through the marking protocol (`convstore.store.maintenance.garbage.collect_blobs`), which keeps
  any blob an append references meanwhile.
- An append or tree write whose conversation vanished (erased or deleted) while its bytes went
  in records them the same way (`release_unreferenced`), unless something references them: an
  append racing an erase leaves no bytes behind past the next gc.
- Garbage collection forgets each record it has settled (the blob deleted, or referenced
  again), matching the release time it read, so a record an erase rewrote meanwhile stays for
  the next collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from convstore.blobs import StoredBlob
from convstore.db.backend import Backend
from convstore.db.statements.blobs import (
    DELETE_RELEASED,
    DELETE_SETTLED_RELEASE,
    INSERT_RELEASED,
    SELECT_RELEASED,
)
from convstore.db.tx import Tx

__all__ = [
    "Released",
    "forget",
    "pending",
    "record",
    "release_after_failure",
    "release_unreferenced",
]

Released = tuple[str, str, Any]
"""(namespace, digest, release time as stored)."""


def record(tx: Tx, blobs: Sequence[tuple[str, str]], now: datetime) -> list[Released]:
    """Record these (namespace, digest) blobs as released at ``now``; the records written."""
    if not blobs:
        return []
    tx.execute_many(DELETE_RELEASED, [{"ns": ns, "sha": sha} for ns, sha in blobs])
    stamp = tx.codec.dump_time(now)  # a record of when, never compared with a clock
    records = [(ns, sha, stamp) for ns, sha in blobs]
    tx.insert_rows(INSERT_RELEASED, records)
    return records


def pending(tx: Tx) -> list[Released]:
    """Every release not yet settled by a garbage collection."""
    return [(namespace, sha256, at) for namespace, sha256, at in tx.fetch(SELECT_RELEASED)]


def forget(tx: Tx, settled: Sequence[Released]) -> None:
    """Drop the records of these releases, unless an erase has rewritten them since."""
    if settled:
        tx.execute_many(
            DELETE_SETTLED_RELEASE, [{"ns": n, "sha": s, "at": at} for n, s, at in settled]
        )


def release_unreferenced(tx: Tx, blobs: Sequence[tuple[str, str]], now: datetime) -> list[Released]:
    """Record those of these (namespace, digest) blobs that nothing references; the records."""
    st = tx.statements
    free = [
        (ns, sha)
        for ns, sha in blobs
        if not tx.fetch(st.select_blob_referenced_in, {"namespace": ns, "sha256": sha})
    ]
    return record(tx, free, now)


async def release_after_failure(
    backend: Backend, namespace: str, stored: Sequence[StoredBlob]
) -> None:
    """After a write whose conversation is gone: its stored bytes released to the next gc."""
    blobs = sorted({(namespace, b.sha256) for b in stored})
    if blobs:
        await backend.write(lambda tx: release_unreferenced(tx, blobs, datetime.now(UTC)))
