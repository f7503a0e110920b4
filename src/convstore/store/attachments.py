"""Attachment bytes: stored before the rows that reference them, read back hash-verified.

Invariants:

- Blobs first, rows second: every inline or pending `FilePart` of a batch (top level, or
  inside a `ContentOutput` result) is stored and swapped for an attachment reference before
  the database transaction starts (`store_files`). If the transaction then fails, the blobs
  are left for garbage collection; a row never points at a blob that is not there.
- Identical bytes in one batch are stored once; puts run concurrently.
- Parts that already reference a blob, and external URIs, pass through untouched.
- Bytes live in the namespace of the conversation's tenant (or the shared one, with global
  deduplication or no tenant): `namespace_of`.
- Reads are hash-verified. A tenant asking for bytes no conversation of its own references is
  told "not found", worded the same whether or not anyone stored them. A render fetches only
  bytes its conversation references (by its ``blob_refs`` rows, in their namespace), and its
  errors name the digest, never a storage path.
- Everything here works from a `BlobContext` (backend, blob store, dedupe mode), never the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from convstore.blobs import BlobStore, StoredBlob
from convstore.db.backend import Backend
from convstore.errors import AttachmentCorruptedError, AttachmentNotFoundError
from convstore.model import AttachmentRef, ContentOutput, FilePart, Message, Part, ToolResultPart
from convstore.store.load import reads

__all__ = [
    "BlobContext",
    "attachment_rows",
    "fetch_attachments",
    "namespace_of",
    "needs_storing",
    "read_attachment",
    "store_files",
    "written_times",
]

_FETCH_CONCURRENCY = 16


class _Store(Protocol):
    """What `BlobContext.of` reads of a store (`ConversationStore` has it)."""

    dedupe: Literal["tenant", "global"]

    @property
    def backend(self) -> Backend: ...

    @property
    def blob_store(self) -> BlobStore: ...


@dataclass(frozen=True, slots=True)
class BlobContext:
    """What attachment I/O needs of a store: its database, its blob store, its dedupe mode."""

    backend: Backend
    blobs: BlobStore
    dedupe: Literal["tenant", "global"]

    @classmethod
    def of(cls, store: _Store) -> BlobContext:
        """The context of an open store (`ClosedError` if it is not open)."""
        return cls(store.backend, store.blob_store, store.dedupe)


def namespace_of(dedupe: Literal["tenant", "global"], tenant: str | None) -> str:
    """The blob namespace of a tenant's bytes (``""``: the shared one)."""
    if tenant is None or dedupe == "global":
        return ""
    return hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def needs_storing(part: FilePart) -> bool:
    """Whether the part holds bytes (inline or a pending stream) not yet in the blob store."""
    return part.data is not None or part.pending is not None


def _files_of(message: Message) -> list[FilePart]:
    return [part for part in message.files if needs_storing(part)]


async def _store(blobs: BlobStore, part: FilePart) -> StoredBlob:
    if part.data is not None:
        return await blobs.put(part.data, media_type=part.media_type)
    pending = part.pending
    assert pending is not None  # _needs_storing
    return await blobs.put_stream(pending.source, media_type=pending.declared_media_type)


def _stored_part(part: FilePart, blob: StoredBlob) -> FilePart:
    return FilePart(
        media_type=blob.media_type,
        filename=part.filename,
        attachment=AttachmentRef(sha256=blob.sha256, size=blob.size),
    )


def _swap(message: Message, stored: dict[int, FilePart]) -> Message:
    def swap_file(part: FilePart) -> FilePart:
        return stored.get(id(part), part)

    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, FilePart):
            parts.append(swap_file(part))
        elif isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
            content = [swap_file(p) if isinstance(p, FilePart) else p for p in part.output.parts]
            output = part.output.model_copy(update={"parts": content})
            parts.append(part.model_copy(update={"output": output}))
        else:
            parts.append(part)
    return message.model_copy(update={"parts": parts})


async def store_files(
    blobs: BlobStore, messages: Sequence[Message]
) -> tuple[list[Message], list[StoredBlob]]:
    """``messages`` with every file's bytes in ``blobs``, and the blobs they now reference."""
    pending = [(i, part) for i, m in enumerate(messages) for part in _files_of(m)]
    if not pending:
        return list(messages), []
    # Same inline bytes twice in one batch: one put.
    by_hash: dict[str, asyncio.Task[StoredBlob]] = {}
    tasks: list[asyncio.Task[StoredBlob]] = []
    try:
        async with asyncio.TaskGroup() as group:
            for _, part in pending:
                key = part.sha256
                if key is not None and key in by_hash:
                    tasks.append(by_hash[key])
                    continue
                task = group.create_task(_store(blobs, part))
                if key is not None:
                    by_hash[key] = task
                tasks.append(task)
    except BaseExceptionGroup as group:
        # Callers expect the typed error of the put that failed, not a group of them.
        raise group.exceptions[0] from None
    stored_blobs = [t.result() for t in tasks]
    swapped: dict[int, dict[int, FilePart]] = {}
    for (index, part), blob in zip(pending, stored_blobs, strict=True):
        swapped.setdefault(index, {})[id(part)] = _stored_part(part, blob)
    result = [_swap(m, swapped[i]) if i in swapped else m for i, m in enumerate(messages)]
    return result, stored_blobs


def attachment_rows(blobs: Sequence[StoredBlob]) -> list[tuple[str, int, str]]:
    """(sha256, size, media type), once per distinct hash, for the ``attachments`` table."""
    seen: dict[str, tuple[str, int, str]] = {}
    for blob in blobs:
        seen.setdefault(blob.sha256, (blob.sha256, blob.size, blob.media_type))
    return list(seen.values())


def written_times(blobs: Sequence[StoredBlob]) -> dict[str, datetime]:
    """When (storage clock) each digest was last stored by this batch's puts."""
    times: dict[str, datetime] = {}
    for blob in blobs:
        if blob.written_at is not None:
            times[blob.sha256] = max(blob.written_at, times.get(blob.sha256, blob.written_at))
    return times


async def fetch_attachments(
    ctx: BlobContext,
    conversation_id: str,
    hashes: set[str],
    missing: Literal["error", "placeholder"],
) -> dict[str, bytes]:
    """The bytes of ``hashes`` as a conversation references them, fetched concurrently."""
    blobs = ctx.blobs
    limit = asyncio.Semaphore(_FETCH_CONCURRENCY)
    namespaces = (
        await ctx.backend.read(lambda tx: reads.blob_namespaces(tx, conversation_id))
        if hashes
        else {}
    )

    async def fetch(sha: str) -> bytes | None:
        namespace = namespaces.get(sha)
        async with limit:
            try:
                if namespace is None:
                    # A part the conversation holds no reference for (a row written past the
                    # store's checks): its digest is no capability to read another's bytes.
                    raise AttachmentNotFoundError.not_visible(sha)
                return await blobs.namespace(namespace).get(sha)
            except AttachmentNotFoundError as exc:
                if missing == "error":
                    # Named by digest alone: a storage path says where someone keeps bytes.
                    raise AttachmentNotFoundError.not_visible(sha) from exc
                return None
            except AttachmentCorruptedError as exc:
                if missing == "error":
                    raise AttachmentCorruptedError(f"sha256:{sha}", exc.actual) from exc
                return None

    ordered = sorted(hashes)
    results = await asyncio.gather(*(fetch(sha) for sha in ordered))  # raises the first error
    return {sha: data for sha, data in zip(ordered, results, strict=True) if data is not None}


async def read_attachment(ctx: BlobContext, part: FilePart, tenant: str | None) -> bytes:
    """The bytes of a stored file part, hash-verified (see `ConversationStore.read_attachment`)."""
    assert part.attachment is not None
    sha = part.attachment.sha256
    namespaces = await ctx.backend.read(lambda tx: reads.attachment_namespaces(tx, sha, tenant))
    if not namespaces:
        if tenant is not None:
            # Not referenced by any conversation the caller may see: said without a storage
            # path, which would tell where (and whether) someone else keeps these bytes.
            raise AttachmentNotFoundError.not_visible(sha)
        # A trusted caller may read bytes this database does not reference (a conversation
        # exported from another database on the same storage): look in every namespace.
        namespaces = await ctx.blobs.namespaces()
    # The same bytes may be referenced from several namespaces (tenants): any copy will do.
    for namespace in namespaces[:-1]:
        with contextlib.suppress(AttachmentNotFoundError):
            return await ctx.blobs.namespace(namespace).get(sha)
    try:
        return await ctx.blobs.namespace(namespaces[-1]).get(sha)
    except AttachmentNotFoundError as exc:
        if tenant is not None:
            # Worded as for another tenant's: a tenant learns nothing from the difference.
            raise AttachmentNotFoundError.not_visible(sha) from exc
        missing = exc
    # A trusted caller holding a part whose reference is gone (a popped message) while other
    # conversations reference the same bytes elsewhere: its own copy is in another namespace.
    for namespace in await ctx.blobs.namespaces():
        if namespace not in namespaces:
            with contextlib.suppress(AttachmentNotFoundError):
                return await ctx.blobs.namespace(namespace).get(sha)
    raise missing
