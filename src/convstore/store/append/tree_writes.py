"""One conversation's tree of messages written through the store's write boundary, at once.

``append`` writes one path segment per transaction. A restore (`convstore.store.transfer.restore`)
and the product importers (`convstore.imports`) write a whole tree, every branch and the head, and
must not leave half of one behind; they write it with `write_tree`, the one operation for that:

1. **Checks, before any byte or row is written**: the conversation id, tenant, title and
   metadata as `ConversationStore.create_conversation` checks them (`_arguments.new_header`),
   and every message as `append` checks it (`convstore.message_checks.check_messages`, with
   the store's attachment limit). Bad input raises the same typed errors ``append`` raises.
2. **Blobs first**: the messages' inline or streamed files are stored (`store_files`), and so
   is whatever ``blobs`` streams in (an archive's members), all in the namespace of the
   conversation's tenant (`namespace_of`), never one an input names.
3. **Rows second, in one transaction**: ``write(tx, messages, blobs)`` gets the messages with
   their files swapped for references and a `TreeBlobs` saying what this attempt stored.
   It writes through the store's own write steps (`convstore.store.append.writes.append_messages`
   for canonical messages; `reference_blobs` before inserting rows of its own) so every blob
   reference is one this attempt stored or one the tenant can already see, and is held
   against garbage collection as an append holds it.
4. **gc retry**: when a collector is deleting (or has just deleted) a blob the tree references
   (`BlobBeingCollectedError`), the transaction rolls back, and the bytes are stored again and
   the rows retried: the store's one loop for that, `convstore.store.append._gc_retry` (then
   `BlobStorageError`, nothing written).

The caller owns what the tree means (which rows, which seqs, what is already present); this
module owns the order and the checks, so no writer of whole trees can skip them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from convstore.blobs import BlobStore, StoredBlob
from convstore.db.tx import Tx
from convstore.message_checks import check_messages
from convstore.model import Message
from convstore.store import _arguments
from convstore.store.append import writes
from convstore.store.append._gc_retry import stored_then_written
from convstore.store.append.writes import AppendPlan
from convstore.store.attachments import (
    BlobContext,
    attachment_rows,
    namespace_of,
    store_files,
    written_times,
)

__all__ = ["TreeBlobs", "TreeHeader", "reference_blobs", "write_tree"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class TreeHeader:
    """The conversation a tree is written to, as an input file gives it (checked here)."""

    id: str
    tenant: str | None
    title: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class TreeBlobs:
    """What one attempt of `write_tree` stored, handed to its ``write`` step."""

    namespace: str
    """The namespace every blob of this tree lives in (the tenant's, or the shared one)."""
    stored: dict[str, StoredBlob]
    """Every blob this attempt stored, by digest (files of the messages and streamed ones)."""
    now: datetime
    """This attempt's time: what rows written without a time of their own are stamped with."""

    def used(self, digests: Iterable[str]) -> list[StoredBlob]:
        """The stored blobs among ``digests`` (references to others must be visible already)."""
        return [self.stored[d] for d in sorted(set(digests)) if d in self.stored]

    def plan(self, tenant: str | None, messages: list[Message], **fields: Any) -> AppendPlan:
        """An `AppendPlan` of ``messages`` whose blob side is this attempt's (``fields``: the rest).

        ``conversation_id`` and the other plan fields come in ``fields``.
        """
        used = self.used(f.attachment.sha256 for m in messages for f in m.files if f.attachment)
        return AppendPlan(
            messages=messages,
            attachments=attachment_rows(used),
            now=fields.pop("now", self.now),
            tenant=tenant,
            namespace=self.namespace,
            written=written_times(used),
            **fields,
        )


def reference_blobs(
    tx: Tx, cid: str, tenant: str | None, messages: list[Message], blobs: TreeBlobs
) -> dict[str, str]:
    """Check and hold every blob ``messages`` reference, for rows a writer inserts itself.

    The digest -> namespace of each. A blob this attempt stored is catalogued and held in
    ``blobs.namespace``; any other must be one the tenant can already see (the check
    ``append`` makes, `AttachmentNotFoundError` otherwise, worded the same whether or not
    anyone stored it). Raises `BlobBeingCollectedError` for `write_tree` to retry.
    """
    plan = blobs.plan(tenant, messages, conversation_id=cid)
    return writes.check_references(tx, plan)


async def write_tree(
    ctx: BlobContext,
    header: TreeHeader,
    messages: Sequence[Message],
    write: Callable[[Tx, list[Message], TreeBlobs], _T],
    *,
    blobs: Callable[[BlobStore], Awaitable[Sequence[StoredBlob]]] | None = None,
) -> _T:
    """Check ``header`` and ``messages``, store their files (and ``blobs``), then ``write``.

    ``write(tx, stored_messages, tree_blobs)`` runs in one write transaction and may run more
    than once (a gc retry); ``stored_messages`` is ``messages`` in order, files swapped for
    references. ``blobs(namespace)``, when given, stores further bytes the tree references
    (an archive's members) into that namespace on every attempt and returns what it stored.
    """
    _arguments.new_header(header.id, header.title, header.tenant, header.metadata)
    check_messages(messages, max_attachment_size=ctx.blobs.max_size)
    into = ctx.blobs.namespace(namespace_of(ctx.dedupe, header.tenant))

    async def store() -> tuple[tuple[list[Message], TreeBlobs], list[StoredBlob]]:
        stored_messages, stored_blobs = await store_files(into, messages)
        if blobs is not None:
            stored_blobs = [*stored_blobs, *await blobs(into)]
        tree_blobs = TreeBlobs(
            namespace=into.namespace_name,
            stored={b.sha256: b for b in stored_blobs},
            now=_arguments.now(),
        )
        return (stored_messages, tree_blobs), stored_blobs

    async def written(stored: tuple[list[Message], TreeBlobs]) -> _T:
        return await ctx.backend.write(lambda tx: write(tx, *stored))

    return await stored_then_written(
        ctx,
        into.namespace_name,
        store,
        written,
        refusal=f"an attachment of conversation {header.id!r} was being garbage-collected and "
        "could not be stored again; nothing of it was written: retry",
    )
