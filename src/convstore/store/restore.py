"""Restoring an export zip (`convstore.store.export`): every conversation exactly as it was.

``import_file(store, "export.zip", "convstore")`` lands here (`convstore.imports.archive`).

Invariants:

- Each conversation is written from its archive rows in one transaction: ids, every branch,
  the head, seqs, revision, timestamps, state, lifecycles and checkpoints come back as they
  were, so ``show --json`` of a restored conversation equals the exported document.
- A conversation whose id the database already holds is left as it is and counted as
  present: restoring the same export twice adds nothing.
- Blob bytes are stored (hash-checked against their name) before the rows that reference
  them, in the namespace the importing store gives the conversation's tenant, and held
  against garbage collection in the rows' transaction exactly as an append holds them.
- ``tenant=`` moves every restored conversation to that tenant; otherwise each keeps its own.
- The manifest and every conversation file are checked before that conversation is written:
  a damaged archive raises `MalformedExportError` naming the member, and nothing of the
  damaged conversation is written (those before it are).
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Select, bindparam, select

from convstore.blobs import BlobStore, StoredBlob
from convstore.db import schema
from convstore.db.tx import Tx
from convstore.errors import BlobStorageError, MalformedExportError
from convstore.progress import Progress, silent
from convstore.store import appending, arguments, writes
from convstore.store.archive_rows import ArchiveRows, read_archive, restore_rows
from convstore.store.attachments import BlobContext, namespace_of
from convstore.store.export import EXPORT_FORMAT, EXPORT_VERSION, MANIFEST
from convstore.store.header_lock import lock
from convstore.store.metadata_tags import replace_tags

if TYPE_CHECKING:
    from convstore.store.connection import StoreConnection

__all__ = ["RestoreReport", "restore_archive"]

_COLLECTED_RETRIES: Final = 3


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

    def __init__(self, path: Path) -> None:
        try:
            self.zip = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise MalformedExportError(f"not a readable zip: {exc}", position=str(path)) from exc
        self.path = path
        manifest = self.json(MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
            raise MalformedExportError(f"not a {EXPORT_FORMAT} manifest", position=self._at())
        if manifest.get("version") != EXPORT_VERSION:
            raise MalformedExportError(
                f"{EXPORT_FORMAT} version {manifest.get('version')!r} is not supported",
                position=self._at(),
            )
        try:
            self.files: list[str] = [str(c["file"]) for c in manifest["conversations"]]
            self.blobs = {
                str(b["sha256"]): _Blob(
                    int(b["size"]), str(b["media_type"]), b.get("created_at"), str(b["file"])
                )
                for b in manifest["blobs"]
            }
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedExportError(
                f"the manifest's conversations or blobs are malformed: {exc!r}",
                position=self._at(),
            ) from exc

    def _at(self, member: str = MANIFEST) -> str:
        return f"{self.path}, {member}"

    def json(self, member: str) -> Any:
        try:
            return json.loads(self.zip.read(member))
        except KeyError as exc:
            raise MalformedExportError(
                "missing from the archive", position=self._at(member)
            ) from exc
        except (OSError, zipfile.BadZipFile, ValueError) as exc:
            raise MalformedExportError(f"unreadable: {exc}", position=self._at(member)) from exc

    def conversation(self, member: str) -> tuple[ArchiveRows, Any]:
        document = self.json(member)
        archive = document.get("archive") if isinstance(document, dict) else None
        return read_archive(archive, self._at(member)), document

    def blob(self, sha256: str) -> bytes:
        described = self.blobs.get(sha256)
        if described is None:
            raise MalformedExportError(f"blob {sha256} is not listed", position=self._at())
        try:
            return self.zip.read(described.file)
        except KeyError as exc:
            raise MalformedExportError(
                "missing from the archive", position=self._at(described.file)
            ) from exc
        except (OSError, zipfile.BadZipFile) as exc:
            raise MalformedExportError(
                f"unreadable: {exc}", position=self._at(described.file)
            ) from exc

    def close(self) -> None:
        self.zip.close()


async def restore_archive(
    store: StoreConnection,
    path: Path,
    *,
    tenant: str | None = None,
    progress: Progress = silent,
) -> RestoreReport:
    """Restore the export at ``path`` into ``store``; what was written."""
    archive = await asyncio.to_thread(_Archive, path)
    report = RestoreReport()
    try:
        for done, member in enumerate(archive.files, 1):
            rows, _ = await asyncio.to_thread(archive.conversation, member)
            await _restore_one(store, archive, rows, tenant, report, member)
            progress("restoring conversations", done, len(archive.files))
    finally:
        await asyncio.to_thread(archive.close)
    return report


def _retarget(rows: ArchiveRows, tenant: str | None, namespace: str) -> None:
    """Move the rows to ``tenant`` (when given) and their blob references to ``namespace``."""
    for name, table_rows in rows.items():
        table = schema.metadata.tables[name]
        for row in table_rows:
            if tenant is not None and "tenant" in table.c:
                row["tenant"] = tenant
            if table is schema.blob_refs:
                row["namespace"] = namespace


async def _restore_one(
    store: StoreConnection,
    archive: _Archive,
    rows: ArchiveRows,
    tenant: str | None,
    report: RestoreReport,
    member: str,
) -> None:
    header = rows[schema.conversations.name][0]
    cid = header.get("id")
    if not isinstance(cid, str):
        raise MalformedExportError(
            "the conversation has no id", position=f"{archive.path}, {member}"
        )
    owner = tenant if tenant is not None else header.get("tenant")
    blobs = store.blob_store.namespace(namespace_of(store.dedupe, owner))
    _retarget(rows, tenant, blobs.namespace_name)
    digests = sorted({str(r.get("sha256")) for r in rows.get(schema.blob_refs.name, [])})
    if await store.backend.read(lambda tx: _held(tx, cid)):
        report.present += 1
        return
    for _ in range(_COLLECTED_RETRIES):
        stored = [await _put(archive, blobs, sha) for sha in digests]

        def write(tx: Tx, stored: list[StoredBlob] = stored) -> dict[str, int] | None:
            if _held(tx, cid):
                return None
            st = tx.statements
            tx.insert_rows(
                st.insert_attachment,
                [(b.sha256, b.size, b.media_type, _stamp(tx, archive, b.sha256)) for b in stored],
            )
            written = {b.sha256: b.written_at for b in stored if b.written_at is not None}
            writes.hold_blobs(tx, {b.sha256: blobs.namespace_name for b in stored}, written)
            counts = restore_rows(tx, rows)
            # Metadata tags derive from the metadata, by this version's rules: an archive
            # written before pair tags existed lacks them, so they are rebuilt.
            header = lock(tx, cid, None, None)
            metadata = tx.codec.load_json(header.metadata)
            replace_tags(tx, cid, header.tenant, header.created_at, metadata)
            return counts

        try:
            counts = await store.backend.write(write)
        except writes.BlobBeingCollectedError as collected:
            await appending.wait_for_collection(BlobContext.of(store), collected.blobs)
            continue
        if counts is None:
            report.present += 1
        else:
            report.restored += 1
            report.digests.update(b.sha256 for b in stored)
            report.blobs = len(report.digests)
            for name, n in counts.items():
                report.rows[name] = report.rows.get(name, 0) + n
        return
    raise BlobStorageError(
        f"an attachment of conversation {cid!r} was being garbage-collected and could not be "
        "stored again; nothing of it was written: retry the import"
    )


@cache
def _exists() -> Select[Any]:
    c = schema.conversations.c
    return select(c.id).where(c.id == bindparam("cid"))


def _held(tx: Tx, cid: str) -> bool:
    return bool(tx.fetch(_exists(), {"cid": cid}))


async def _put(archive: _Archive, blobs: BlobStore, sha256: str) -> StoredBlob:
    data = await asyncio.to_thread(archive.blob, sha256)
    described = archive.blobs[sha256]
    stored = await blobs.put(data, media_type=described.media_type)
    if stored.sha256 != sha256:
        raise MalformedExportError(
            f"the bytes hash to {stored.sha256}, not to their name",
            position=f"{archive.path}, {described.file}",
        )
    return stored


def _stamp(tx: Tx, archive: _Archive, sha256: str) -> Any:
    created = archive.blobs[sha256].created_at
    try:
        when = datetime.fromisoformat(created) if created else None
    except ValueError:
        when = None
    return tx.codec.dump_time(when if when is not None and when.tzinfo else arguments.now())
