"""The store's side of attachment bytes: which namespace, writing a batch, reading back.

Invariants:

- Bytes go in before the rows that reference them (`write_batch`), into the namespace of the
  conversation's tenant (or the shared one, with global deduplication or no tenant).
- A batch whose transaction finds garbage collection deleting (or having deleted, after this
  batch's put) one of its blobs is rolled back; its bytes are stored again once the collection
  is over, and it is retried. It never commits a reference to deleted bytes.
- Reads are hash-verified. A tenant asking for bytes no conversation of its own references is
  told "not found", worded the same whether or not anyone stored them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from convstore.errors import AttachmentCorruptedError, AttachmentNotFoundError, BlobStorageError
from convstore.model import FilePart, Message, ToolCall
from convstore.store import arguments, one_statement, reads, writes
from convstore.store.attachments import attachment_rows, needs_storing, store_files, written_times
from convstore.store.results import AppendResult
from convstore.store.writes import AppendPlan

if TYPE_CHECKING:
    from convstore.store.connection import StoreConnection
    from convstore.store.conversation_store import ConversationStore

__all__ = [
    "fetch_attachments",
    "namespace_of",
    "read_attachment",
    "wait_for_collection",
    "write_batch",
]

_FETCH_CONCURRENCY = 16
_COLLECTED_RETRIES = 3
_STALE_TOMBSTONE = 60.0
"""Seconds after which a garbage collector's mark on a blob is taken for a dead collector's."""


def namespace_of(dedupe: Literal["tenant", "global"], tenant: str | None) -> str:
    """The blob namespace of a tenant's bytes (``""``: the shared one)."""
    if tenant is None or dedupe == "global":
        return ""
    return hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()[:32]


async def write_batch(
    store: ConversationStore,
    conversation_id: str,
    batch: list[Message],
    *,
    also: Callable[[Any], None] | None = None,
    **plan: Any,
) -> tuple[AppendResult, ToolCall | None]:
    """Store the batch's files, then its rows; retried if gc is collecting a blob it uses.

    ``also(tx)`` runs after the rows in the same transaction (`append`'s ``state_patches``).
    """
    backend, blobs = store.backend, store.blob_store
    if any(needs_storing(f) for m in batch for f in m.files):
        tenant = plan.get("tenant")
        if tenant is None:
            tenant = await backend.read(lambda tx: reads.conversation_tenant(tx, conversation_id))
        blobs = blobs.namespace(namespace_of(store.dedupe, tenant))
    for attempt in range(_COLLECTED_RETRIES):
        stored_messages, stored_blobs = await store_files(blobs, batch)
        append = AppendPlan(
            conversation_id=conversation_id,
            messages=stored_messages,
            attachments=attachment_rows(stored_blobs),
            now=arguments.now(),
            namespace=blobs.namespace_name,
            written=written_times(stored_blobs),
            **plan,
        )
        if also is None and one_statement.eligible(backend, append):
            stored = await one_statement.append_in_one_statement(backend, append)  # type: ignore[arg-type]
            if stored is not None:
                return stored, None

        def write(tx: Any, append: AppendPlan = append) -> tuple[AppendResult, ToolCall | None]:
            written = writes.append_messages(tx, append)
            if also is not None:
                also(tx)
            return written

        try:
            return await backend.write(write)
        except writes.BlobBeingCollectedError as collected:
            if attempt == _COLLECTED_RETRIES - 1:
                break
            # Wait for the collection to end, then store the bytes again (above).
            await wait_for_collection(store, collected.blobs)
    raise BlobStorageError(
        "an attachment of this append was being garbage-collected and could not be stored "
        "again; nothing was written: retry the append"
    )


async def wait_for_collection(store: StoreConnection, blobs: list[tuple[str, str]]) -> None:
    """Wait until garbage collection has finished with ``blobs`` (namespace, digest).

    A collector holds its mark for one stat and one delete; a mark older than
    `_STALE_TOMBSTONE` was left by a collector that died: whether it deleted the bytes is
    unknown, so they are taken as deleted now and the retry stores them again.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STALE_TOMBSTONE
    delay = 0.01
    while await store.backend.read(lambda tx: reads.tombstoned(tx, blobs)):
        if loop.time() > deadline:
            await _take_as_deleted(store, blobs)
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)


async def _take_as_deleted(store: StoreConnection, blobs: list[tuple[str, str]]) -> None:
    now = await store.blob_store.storage_now()
    await store.backend.write(lambda tx: writes.finish_tombstones(tx, blobs, now))


async def fetch_attachments(
    store: ConversationStore,
    conversation_id: str,
    hashes: set[str],
    missing: Literal["error", "placeholder"],
) -> dict[str, bytes]:
    """The bytes of ``hashes`` as a conversation references them, fetched concurrently."""
    blobs = store.blob_store
    limit = asyncio.Semaphore(_FETCH_CONCURRENCY)
    namespaces = (
        await store.backend.read(lambda tx: reads.blob_namespaces(tx, conversation_id))
        if hashes
        else {}
    )

    async def fetch(sha: str) -> bytes | None:
        async with limit:
            try:
                return await blobs.namespace(namespaces.get(sha, "")).get(sha)
            except (AttachmentNotFoundError, AttachmentCorruptedError):
                if missing == "error":
                    raise
                return None

    ordered = sorted(hashes)
    results = await asyncio.gather(*(fetch(sha) for sha in ordered))  # raises the first error
    return {sha: data for sha, data in zip(ordered, results, strict=True) if data is not None}


async def read_attachment(store: ConversationStore, part: FilePart, tenant: str | None) -> bytes:
    """The bytes of a stored file part, hash-verified (see `ConversationStore.read_attachment`)."""
    assert part.attachment is not None
    sha = part.attachment.sha256
    namespaces = await store.backend.read(lambda tx: reads.attachment_namespaces(tx, sha, tenant))
    if not namespaces:
        if tenant is not None:
            # Not referenced by any conversation the caller may see: said without a storage
            # path, which would tell where (and whether) someone else keeps these bytes.
            raise AttachmentNotFoundError.not_visible(sha)
        # A trusted caller may read bytes this database does not reference (a conversation
        # exported from another database on the same storage): look in every namespace.
        namespaces = await store.blob_store.namespaces()
    # The same bytes may be referenced from several namespaces (tenants): any copy will do.
    for namespace in namespaces[:-1]:
        with contextlib.suppress(AttachmentNotFoundError):
            return await store.blob_store.namespace(namespace).get(sha)
    try:
        return await store.blob_store.namespace(namespaces[-1]).get(sha)
    except AttachmentNotFoundError as exc:
        if tenant is None:
            raise
        # Worded as for another tenant's: a tenant learns nothing from the difference.
        raise AttachmentNotFoundError.not_visible(sha) from exc
