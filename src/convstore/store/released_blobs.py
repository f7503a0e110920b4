"""Blobs an erase released: recorded with the erase, deleted by the next gc whatever their age.

Invariants:

- A record is written in the erase's own transaction (`convstore.store.erase`), so it exists
  exactly when the rows that referenced the blob are gone.
- A record only lets garbage collection skip the grace period; the deletion itself still goes
  through the marking protocol (`convstore.store.maintenance.collect_blobs`), which keeps any
  blob an append references meanwhile.
- Garbage collection forgets each record it has settled (the blob deleted, or referenced
  again), matching the release time it read, so a record an erase rewrote meanwhile stays for
  the next collection.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Delete, Insert, Select, bindparam, delete, insert, select

from convstore.db.schema import released_blobs
from convstore.db.tx import Tx

__all__ = ["Released", "forget", "pending", "record"]

Released = tuple[str, str, Any]
"""(namespace, digest, release time as stored)."""


@cache
def _insert() -> Insert:
    return insert(released_blobs)


@cache
def _delete() -> Delete:
    c = released_blobs.c
    return delete(released_blobs).where(
        c.namespace == bindparam("ns"), c.sha256 == bindparam("sha")
    )


@cache
def _delete_settled() -> Delete:
    c = released_blobs.c
    return delete(released_blobs).where(
        c.namespace == bindparam("ns"),
        c.sha256 == bindparam("sha"),
        c.released_at == bindparam("at"),
    )


@cache
def _select() -> Select[Any]:
    c = released_blobs.c
    return select(c.namespace, c.sha256, c.released_at).order_by(c.namespace, c.sha256)


def record(tx: Tx, blobs: Sequence[tuple[str, str]], now: datetime) -> list[Released]:
    """Record these (namespace, digest) blobs as released at ``now``; the records written."""
    if not blobs:
        return []
    tx.execute_many(_delete(), [{"ns": ns, "sha": sha} for ns, sha in blobs])
    stamp = tx.codec.dump_time(now)  # a record of when, never compared with a clock
    records = [(ns, sha, stamp) for ns, sha in blobs]
    tx.insert_rows(_insert(), records)
    return records


def pending(tx: Tx) -> list[Released]:
    """Every release not yet settled by a garbage collection."""
    return [(row[0], row[1], row[2]) for row in tx.fetch(_select())]


def forget(tx: Tx, settled: Sequence[Released]) -> None:
    """Drop the records of these releases, unless an erase has rewritten them since."""
    if settled:
        tx.execute_many(_delete_settled(), [{"ns": n, "sha": s, "at": at} for n, s, at in settled])
