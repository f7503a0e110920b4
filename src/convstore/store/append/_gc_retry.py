"""Files first, then the rows: the one loop that retries a write garbage collection raced.

Every write that references blobs stores their bytes, then writes its rows in one transaction
that checks and holds each reference (`convstore.store.append.writes.check_references`). When that
transaction finds a collector deleting (or having just deleted) one of the blobs, it raises
`BlobBeingCollectedError` and rolls back; `stored_then_written` waits for the collection to
end, stores the bytes again and writes again, up to `COLLECTED_RETRIES` attempts, then gives
up with `BlobStorageError` (nothing written). Its callers: `convstore.store.append.tree_writes`
(restore and the importers) and the append pipeline's general step
(`convstore.store.append.appending`).

Invariants:

- No committed row references bytes a collector deleted: the retry stores them again first.
- A write whose conversation vanished while its bytes went in (erased, deleted, or another
  tenant's id: `ConversationNotFoundError`) releases the bytes it stored to the next gc
  (`convstore.store.maintenance.released_blobs.release_after_failure`) and re-raises.
- A collector's mark older than `STALE_TOMBSTONE` was left by a collector that died: whether it
  deleted the bytes is unknown, so they are taken as deleted and stored again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

from convstore.blobs import StoredBlob
from convstore.errors import BlobStorageError, ConversationNotFoundError
from convstore.store.append import writes
from convstore.store.append.writes import BlobBeingCollectedError
from convstore.store.attachments import BlobContext
from convstore.store.load import reads
from convstore.store.maintenance.released_blobs import release_after_failure

__all__ = ["COLLECTED_RETRIES", "STALE_TOMBSTONE", "stored_then_written", "wait_for_collection"]

_S = TypeVar("_S")
_T = TypeVar("_T")

COLLECTED_RETRIES: Final = 3
"""Attempts of one write before it gives up on a blob garbage collection keeps deleting."""

STALE_TOMBSTONE: Final = 60.0
"""Seconds after which a garbage collector's mark on a blob is taken for a dead collector's."""


async def stored_then_written(
    ctx: BlobContext,
    namespace: str,
    store: Callable[[], Awaitable[tuple[_S, Sequence[StoredBlob]]]],
    write: Callable[[_S], Awaitable[_T]],
    *,
    refusal: str,
) -> _T:
    """``store()`` the bytes (into ``namespace``), then ``write(stored)`` the rows; retried on gc.

    Each attempt calls both again: ``store`` returns what it stored, for ``write``, and the
    blobs it stored (released to gc if the conversation is gone); ``write`` runs the
    transaction. ``refusal`` is the message of the `BlobStorageError` raised when every
    attempt met a collection.
    """
    for attempt in range(COLLECTED_RETRIES):
        stored, blobs = await store()
        try:
            return await write(stored)
        except ConversationNotFoundError:
            await release_after_failure(ctx.backend, namespace, blobs)
            raise
        except BlobBeingCollectedError as collected:
            if attempt == COLLECTED_RETRIES - 1:
                break
            await wait_for_collection(ctx, collected.blobs)
    raise BlobStorageError(refusal)


async def wait_for_collection(ctx: BlobContext, blobs: list[tuple[str, str]]) -> None:
    """Wait until garbage collection has finished with ``blobs`` (namespace, digest)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STALE_TOMBSTONE
    delay = 0.01
    while await ctx.backend.read(lambda tx: reads.tombstoned(tx, blobs)):
        if loop.time() > deadline:
            await _take_as_deleted(ctx, blobs)
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


async def _take_as_deleted(ctx: BlobContext, blobs: list[tuple[str, str]]) -> None:
    now = await ctx.blobs.storage_now()
    await ctx.backend.write(lambda tx: writes.finish_tombstones(tx, blobs, now))
