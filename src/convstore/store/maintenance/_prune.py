"""``store.prune(older_than=...)``: delete conversations nobody wrote to within a period.

Invariants:

- The cutoff is fixed when the prune starts (``now - older_than``, by this host's clock, the
  clock the store stamps ``updated_at`` with). A conversation is deleted only if, at the
  moment of its delete, its ``updated_at`` is still before the cutoff *and* its revision is
  the one the prune read: both are conditions of the ``DELETE`` statement itself, so a write
  that commits between the read and the delete (every write changes the revision) keeps the
  conversation, and one that comes after finds it deleted. No lock is held between the two.
- Work is batched: conversations are read a page at a time in creation order (an index
  range: a conversation created after the cutoff cannot qualify, so the scan stops there),
  and each page's deletes are one short write transaction, so writers never wait long.
- Each conversation is visited once; the whole prune reads each older conversation's header
  once, whatever the number of batches.
- Everything in a deleted conversation goes with it (cascades, as `delete_conversation`);
  its blobs become garbage for the next gc.
- ``dry_run`` reads exactly the same pages and deletes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from convstore.db.statements.conversations import PRUNE_DELETE, PruneAt, prune_page
from convstore.db.tx import Tx
from convstore.errors import InvalidInputError
from convstore.limits import check_text
from convstore.progress import Progress, silent
from convstore.store import _arguments

if TYPE_CHECKING:
    from convstore.store._connection import StoreConnection

__all__ = ["DEFAULT_BATCH", "DEFAULT_RETENTION", "PruneReport", "prune"]

DEFAULT_RETENTION: Final = timedelta(days=30)

DEFAULT_BATCH: Final = 200
"""Conversations read per page and deleted per transaction."""


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune did (or, on a dry run, would do)."""

    cutoff: datetime
    """Conversations last written before this were deleted."""
    deleted: int
    """Conversations deleted (on a dry run: that would be)."""
    kept: int
    """Conversations that qualified when read but were written before their delete."""
    examined: int
    """Conversations created before the cutoff (the only ones that can qualify)."""
    dry_run: bool


_Candidate = tuple[str, str]  # (id, revision)


def _read_page(
    tx: Tx, tenant: str | None, cutoff: datetime, after: tuple[Any, str] | None, n: int
) -> tuple[list[_Candidate], int, tuple[Any, str] | None]:
    """The page after ``after``: its stale conversations, its size, and the next ``after``."""
    params: dict[str, Any] = {"cutoff": tx.codec.dump_time(cutoff), "tenant": tenant, "n": n}
    if after is not None:
        params["after_created"], params["after_id"] = after
    rows = tx.fetch(prune_page(tenant is not None, after is None), params)
    at = PruneAt
    stale = [
        (r[at.id], r[at.revision]) for r in rows if tx.codec.load_time(r[at.updated_at]) < cutoff
    ]
    # The raw stored value goes back as the keyset bound: it compares exactly as stored.
    last = (rows[-1][at.created_at], rows[-1][at.id]) if rows else None
    return stale, len(rows), last


def _delete_stale(tx: Tx, stale: list[_Candidate], cutoff: datetime) -> int:
    stamp = tx.codec.dump_time(cutoff)
    return sum(
        tx.execute(PRUNE_DELETE, {"cid": cid, "revision": rev, "cutoff": stamp})
        for cid, rev in stale
    )


async def prune(
    store: StoreConnection,
    *,
    older_than: timedelta,
    tenant: str | None = None,
    dry_run: bool = False,
    batch: int = DEFAULT_BATCH,
    progress: Progress = silent,
) -> PruneReport:
    """Delete the conversations (of ``tenant``, or every one) not written for ``older_than``."""
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise InvalidInputError("older_than must be a timedelta of zero or more")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidInputError("batch must be a positive int")
    check_text(tenant, "tenant")
    try:
        cutoff = _arguments.now() - older_than
    except OverflowError as exc:
        raise InvalidInputError(
            f"older_than reaches back before the year 1 ({older_than.days:,} days)"
        ) from exc
    after: tuple[Any, str] | None = None
    deleted = kept = examined = 0
    while True:
        page = partial(_read_page, tenant=tenant, cutoff=cutoff, after=after, n=batch)
        stale, size, after = await store.backend.read(page)
        examined += size
        if stale and not dry_run:
            gone = await store.backend.write(partial(_delete_stale, stale=stale, cutoff=cutoff))
            deleted += gone
            kept += len(stale) - gone
        elif dry_run:
            deleted += len(stale)
        progress("pruning conversations", examined, None)
        if size < batch:
            break
    progress("pruning conversations", examined, examined)
    return PruneReport(cutoff, deleted, kept, examined, dry_run)
