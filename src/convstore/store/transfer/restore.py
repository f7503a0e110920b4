"""Restoring an export zip (`convstore.store.transfer.export`): every conversation as it was.

``import_file(store, "export.zip", "convstore")`` lands here (`convstore.imports.archive`).

Invariants:

- Each conversation is written from its archive rows in one transaction: ids, every branch,
  the head, seqs, revision, timestamps, state, lifecycles and checkpoints come back as they
  were, so ``show --json`` of a restored conversation equals the exported document.
- An archive is input from a stranger. Its rows are held to what ``append`` would write
  (`convstore.store.transfer._archive_checks`) and written through the store's one tree write
  (`convstore.store.append.tree_writes.write_tree`): every row belongs to the conversation being
  restored, in the restoring tenant; every blob reference is bytes the archive itself holds
  (stored into the tenant's namespace, hash-checked against their name) or a blob the tenant
  can already see. A refusal is a `MalformedExportError` naming the member and the field.
- A conversation whose id the database already holds is left as it is and counted as
  present: restoring the same export twice adds nothing.
- ``tenant=`` moves every restored conversation to that tenant; otherwise each keeps its own.
- Memory is bounded whatever the archive holds (`RestoreLimits`): members are read with
  their size counted as they are read (never trusting the zip's or the manifest's word), a
  conversation file or the manifest at most ``member_bytes``, everything at most
  ``total_bytes``; blobs are streamed into the blob store chunk by chunk. The conversations
  before a refused one are written, nothing of the refused one is.
"""

from __future__ import annotations

import asyncio
import json
import re
import zipfile
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

from convstore.blobs import BlobStore, StoredBlob
from convstore.db import schema
from convstore.db.search_queue import queue_messages
from convstore.db.statements.conversations import CONVERSATION_EXISTS
from convstore.db.tx import Tx
from convstore.errors import (
    AttachmentNotFoundError,
    ExportLimitError,
    InvalidInputError,
    MalformedExportError,
)
from convstore.progress import Progress, silent
from convstore.store import _arguments
from convstore.store.append.tree_writes import TreeBlobs, TreeHeader, reference_blobs, write_tree
from convstore.store.attachments import BlobContext
from convstore.store.conversations.metadata_tags import replace_tags
from convstore.store.transfer._archive_checks import CheckedConversation, check_conversation
from convstore.store.transfer.archive_rows import read_archive, restore_rows
from convstore.store.transfer.export import EXPORT_FORMAT, EXPORT_VERSION, MANIFEST
from convstore.zip_input import MAX_DIRECTORY_BYTES, MAX_ENTRIES, open_zip

if TYPE_CHECKING:
    from convstore.store._connection import StoreConnection

__all__ = ["RestoreLimits", "RestoreReport", "restore_archive"]

_CHUNK: Final = 1 << 20
_ZIP_ERRORS: Final = (
    OSError,
    EOFError,
    ValueError,
    NotImplementedError,  # a compression method zipfile does not read
    zipfile.BadZipFile,
    zlib.error,  # damaged deflate data
)
"""What reading a damaged or hostile zip raises."""


@dataclass(frozen=True, slots=True)
class RestoreLimits:
    """How much of an archive one restore reads (docs/reliability.md; pass your own to raise them).

    Sizes are uncompressed bytes, counted while they are read: neither the zip's directory nor
    the manifest is believed. Over a limit, the restore stops with `MalformedExportError`
    naming the member; the conversations before it stay written.
    """

    member_bytes: int = 24 * 1024 * 1024
    """Largest conversation file (or manifest): it is parsed whole, so it bounds memory."""
    json_items: int = 1_000_000
    """Most JSON items in one such file (each ``{``, ``[`` and ``,`` outside strings): bounds the
    objects a parse builds, which the size alone does not (``[],`` is 3 bytes, 64 in memory).
    A conversation's rows hold 30 to 50 items per message."""
    total_bytes: int = 64 * 1024**3
    """Everything one restore reads, blobs included."""
    zip_entries: int = MAX_ENTRIES
    """Entries in the archive's central directory (a conversation file or a blob each), counted
    before the zip is opened: each costs about 700 bytes while the restore runs."""
    zip_directory_bytes: int = MAX_DIRECTORY_BYTES
    """Largest central directory of the archive, in bytes."""


@dataclass(slots=True)
class RestoreReport:
    """What a restore did."""

    restored: int = 0
    """Conversations written."""
    present: int = 0
    """Conversations whose id was already stored (left as they were)."""
    rows: dict[str, int] = field(default_factory=dict)
    """Rows written, by table."""
    blobs: int = 0
    """Distinct blobs the written conversations reference."""
    digests: set[str] = field(default_factory=set, repr=False)
    """Their digests."""


@dataclass(frozen=True, slots=True)
class _Blob:
    size: int
    media_type: str
    created_at: str | None
    file: str


class _Archive:
    """The zip and its manifest; every method blocks (run in a worker thread)."""

    def __init__(self, path: Path, limits: RestoreLimits) -> None:
        self.path = path
        self.limits = limits
        self.read_so_far = 0
        try:
            self.zip = open_zip(
                path,
                max_entries=limits.zip_entries,
                max_directory_bytes=limits.zip_directory_bytes,
                owner="RestoreLimits",
            )
        except ExportLimitError:
            raise
        except _ZIP_ERRORS as exc:
            raise MalformedExportError(f"not a readable zip: {exc}", position=str(path)) from exc
        try:
            self._read_manifest()
        except BaseException:
            self.zip.close()
            raise

    def _read_manifest(self) -> None:
        manifest = self.json(MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
            raise MalformedExportError(f"not a {EXPORT_FORMAT} manifest", position=self.at())
        if manifest.get("version") != EXPORT_VERSION:
            raise MalformedExportError(
                f"{EXPORT_FORMAT} version {manifest.get('version')!r} is not supported",
                position=self.at(),
            )
        try:
            self.files: list[str] = [_text(c["file"]) for c in manifest["conversations"]]
            self.blobs = {
                _text(b["sha256"]): _Blob(
                    _size(b["size"]),
                    _text(b["media_type"]),
                    b.get("created_at") if isinstance(b.get("created_at"), str) else None,
                    _text(b["file"]),
                )
                for b in manifest["blobs"]
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedExportError(
                f"the manifest's conversations or blobs are malformed: {exc!r}",
                position=self.at(),
            ) from exc

    def at(self, member: str = MANIFEST) -> str:
        return f"{self.path}, {member}"

    def open(self, member: str) -> IO[bytes]:
        try:
            return self.zip.open(member)
        except KeyError as exc:
            raise MalformedExportError(
                "missing from the archive", position=self.at(member)
            ) from exc
        except _ZIP_ERRORS as exc:
            raise MalformedExportError(f"unreadable: {exc}", position=self.at(member)) from exc

    def chunk(self, stream: IO[bytes], member: str, size: int) -> bytes:
        """Up to ``size`` bytes of ``member``, counted against the whole restore's limit."""
        try:
            data = stream.read(size)
        except _ZIP_ERRORS as exc:
            raise MalformedExportError(f"unreadable: {exc}", position=self.at(member)) from exc
        self.read_so_far += len(data)
        if self.read_so_far > self.limits.total_bytes:
            raise MalformedExportError(
                f"the archive holds more than the {self.limits.total_bytes:,} bytes one restore "
                "reads (RestoreLimits.total_bytes)",
                position=self.at(member),
            )
        return data

    def json(self, member: str) -> Any:
        """A JSON member, read within `RestoreLimits.member_bytes` and parsed."""
        limit = self.limits.member_bytes
        pieces: list[bytes] = []
        read = 0
        with self.open(member) as stream:
            while chunk := self.chunk(stream, member, min(_CHUNK, limit + 1 - read)):
                pieces.append(chunk)
                read += len(chunk)
                if read > limit:
                    raise MalformedExportError(
                        f"larger than the {limit:,} bytes a restore reads of one file "
                        "(RestoreLimits.member_bytes)",
                        position=self.at(member),
                    )
        data = b"".join(pieces)
        del pieces
        items = _json_items(data)
        if items > self.limits.json_items:
            raise MalformedExportError(
                f"holds {items:,} JSON items, more than the {self.limits.json_items:,} a restore "
                "parses in one file (RestoreLimits.json_items)",
                position=self.at(member),
            )
        try:
            text = data.decode("utf-8")
            del data
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise MalformedExportError(
                f"unreadable: {str(exc)[:200]}", position=self.at(member)
            ) from exc

    def conversation(self, member: str) -> Any:
        document = self.json(member)
        archive = document.get("archive") if isinstance(document, dict) else None
        return read_archive(archive, self.at(member))

    def close(self) -> None:
        self.zip.close()


_STRING: Final = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')


def _json_items(data: bytes) -> int:
    """How many ``{``, ``[`` and ``,`` of ``data`` lie outside JSON strings."""
    bare = _STRING.sub(b"", data)
    return bare.count(b"{") + bare.count(b"[") + bare.count(b",")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _size(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a size")
    return value


async def restore_archive(
    store: StoreConnection,
    path: Path,
    *,
    tenant: str | None = None,
    progress: Progress = silent,
    limits: RestoreLimits | None = None,
) -> RestoreReport:
    """Restore the export at ``path`` into ``store``; what was written."""
    archive = await asyncio.to_thread(_Archive, path, limits or RestoreLimits())
    report = RestoreReport()
    try:
        for done, member in enumerate(archive.files, 1):
            rows = await asyncio.to_thread(archive.conversation, member)
            checked = check_conversation(
                rows,
                tenant=tenant,
                where=archive.at(member),
                max_attachment_size=store.blob_store.max_size,
            )
            del rows
            try:
                await _restore_one(store, archive, checked, report)
            except MalformedExportError:
                raise
            except (InvalidInputError, AttachmentNotFoundError) as exc:
                # What `write_tree` refuses (a header or message check, a blob the tenant
                # cannot see) is this member's fault: say which.
                raise MalformedExportError(str(exc), position=archive.at(member)) from exc
            progress("restoring conversations", done, len(archive.files))
    finally:
        await asyncio.to_thread(archive.close)
    return report


async def _restore_one(
    store: StoreConnection, archive: _Archive, checked: CheckedConversation, report: RestoreReport
) -> None:
    cid = checked.cid
    if await store.backend.read(lambda tx: _held(tx, cid)):
        report.present += 1
        return
    # Bytes the archive holds are stored from it (and must hash to their name); a reference to
    # any other blob must be one the tenant can already see (`reference_blobs`).
    own = sorted({sha for _, sha in checked.references if sha in archive.blobs})

    async def put_own(into: BlobStore) -> list[StoredBlob]:
        return [await _put(archive, into, sha) for sha in own]

    def write(tx: Tx, _messages: Any, blobs: TreeBlobs) -> dict[str, int] | None:
        if _held(tx, cid):
            return None
        # Catalogue rows first with the archive's times (an existing row is kept as it is).
        tx.insert_rows(
            tx.statements.insert_attachment,
            [
                (b.sha256, b.size, b.media_type, _stamp(tx, archive, b.sha256))
                for b in blobs.stored.values()
            ],
        )
        counts = restore_rows(tx, checked.rows)
        queue_messages(tx, cid, [row["seq"] for row in checked.rows.get(schema.messages.name, [])])
        namespaces = reference_blobs(tx, cid, checked.tenant, checked.messages, blobs)
        references = [
            {"conversation_id": cid, "seq": seq, "sha256": sha, "namespace": namespaces[sha]}
            for seq, sha in checked.references
        ]
        if references:
            restore_rows(tx, {schema.blob_refs.name: references})
            counts[schema.blob_refs.name] = len(references)
        # Metadata tags derive from the metadata, by this version's rules.
        replace_tags(tx, cid, checked.tenant, _created(tx, checked), checked.metadata)
        return counts

    counts = await write_tree(
        BlobContext.of(store),
        TreeHeader(cid, checked.tenant, checked.title, checked.metadata),
        checked.messages,
        write,
        blobs=put_own,
    )
    if counts is None:
        report.present += 1
        return
    report.restored += 1
    report.digests.update(sha for _, sha in checked.references)
    report.blobs = len(report.digests)
    for name, n in counts.items():
        report.rows[name] = report.rows.get(name, 0) + n


def _held(tx: Tx, cid: str) -> bool:
    return bool(tx.fetch(CONVERSATION_EXISTS, {"cid": cid}))


def _created(tx: Tx, checked: CheckedConversation) -> Any:
    (header,) = checked.rows[schema.conversations.name]
    return tx.codec.dump_time(datetime.fromisoformat(header["created_at"]))


async def _put(archive: _Archive, into: BlobStore, sha256: str) -> StoredBlob:
    described = archive.blobs[sha256]
    member = described.file
    stored = await into.put_stream(
        _member_chunks(archive, member, described.size), media_type=described.media_type
    )
    if stored.sha256 != sha256:
        raise MalformedExportError(
            f"the bytes hash to {stored.sha256}, not to their name", position=archive.at(member)
        )
    return stored


async def _member_chunks(archive: _Archive, member: str, size: int) -> AsyncIterator[bytes]:
    """The bytes of a blob member, refused as soon as they run past the manifest's ``size``."""
    stream = await asyncio.to_thread(archive.open, member)
    read = 0
    try:
        while chunk := await asyncio.to_thread(
            archive.chunk, stream, member, min(_CHUNK, size + 1 - read)
        ):
            read += len(chunk)
            if read > size:
                raise MalformedExportError(
                    f"holds more than the {size:,} bytes the manifest says",
                    position=archive.at(member),
                )
            yield chunk
    finally:
        await asyncio.to_thread(stream.close)
    if read != size:
        raise MalformedExportError(
            f"holds {read:,} bytes, not the {size:,} the manifest says", position=archive.at(member)
        )


def _stamp(tx: Tx, archive: _Archive, sha256: str) -> Any:
    described = archive.blobs.get(sha256)
    created = described.created_at if described is not None else None
    try:
        when = datetime.fromisoformat(created) if created else None
    except ValueError:
        when = None
    return tx.codec.dump_time(when if when is not None and when.tzinfo else _arguments.now())
