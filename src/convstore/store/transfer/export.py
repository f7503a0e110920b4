"""``store.export(path, tenant=None, conversation_ids=None)``: conversations and blobs, one zip.

The zip (docs/export.md describes it for people who receive one)::

    manifest.json                    what is inside (written last, read first)
    conversations/000001.json        one per conversation: the ``show --json`` document, plus
                                     "archive": its rows (`convstore.store.transfer.archive_rows`)
    blobs/<sha256>                   each attachment's bytes once, named by their SHA-256

Invariants:

- Each conversation file is the ``show --json`` document of the conversation's active path
  (readable by people and by ``convstore import --format convstore`` on its own) with one
  more key, ``archive``, holding every row of the conversation: all branches, the head,
  seqs, the revision, timestamps, lifecycles and checkpoints. The two come from the same
  revision: the rows are read again if a writer changed the conversation in between.
- Blobs are the exact bytes, read hash-verified, stored once per digest whatever namespace
  or conversation referenced them; the manifest lists each with its size, media type and
  catalogue time.
- The zip is written beside ``path`` and renamed into place when complete: a failed export
  leaves no partial file.
- Blocking file work runs in a worker thread; memory holds one conversation and one blob at
  a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from convstore.db.statements.blobs import SELECT_ATTACHMENT
from convstore.db.statements.conversations import tenant_conversation_ids
from convstore.db.tx import Tx
from convstore.errors import ConversationNotFoundError, InvalidInputError, RevisionConflictError
from convstore.progress import Progress, silent
from convstore.store import _arguments
from convstore.store.transfer.archive_rows import dump_rows
from convstore.store.transfer.documents import conversation_document

if TYPE_CHECKING:
    from convstore.blobs import BlobStore
    from convstore.db.backend import Backend
    from convstore.model import Conversation
    from convstore.store.conversations.listing import ConversationSummary


class ConversationReader(Protocol):
    """What an export reads through (a `ConversationStore`)."""

    @property
    def backend(self) -> Backend:
        """The database backend."""
        ...

    @property
    def blob_store(self) -> BlobStore:
        """The blob store."""
        ...

    async def load(self, conversation_id: str) -> Conversation:
        """The conversation's active path."""
        ...

    async def get_conversation(
        self, conversation_id: str, *, tenant: str | None = None
    ) -> ConversationSummary:
        """The conversation's header."""
        ...


__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "ConversationReader",
    "ExportReport",
    "export_archive",
]

EXPORT_FORMAT: Final = "convstore.export"
EXPORT_VERSION: Final = 1
MANIFEST: Final = "manifest.json"

_REREADS: Final = 5
"""How often a conversation's rows are read again while writers keep changing it."""


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What an export wrote."""

    path: Path
    conversations: int
    messages: int
    """Messages on every branch."""
    blobs: int
    blob_bytes: int


def _column(rows: dict[str, Any], table: str, column: str) -> list[Any]:
    body = rows["tables"].get(table)
    if body is None:
        return []
    index = body["columns"].index(column)
    return [row[index] for row in body["rows"]]


async def export_archive(
    store: ConversationReader,
    path: str | PathLike[str],
    *,
    tenant: str | None = None,
    conversation_ids: Sequence[str] | None = None,
    progress: Progress = silent,
) -> ExportReport:
    """Write the tenant's conversations (or ``conversation_ids``, within the tenant) to ``path``.

    ``tenant=None`` exports every tenant's conversations. A listed id that does not exist or
    belongs to another tenant raises `ConversationNotFoundError` before anything is written.
    """
    target = Path(path)
    if conversation_ids is None:
        listed = tenant_conversation_ids(tenant is not None, by_creation=True)
        ids = await store.backend.read(
            lambda tx: [cid for (cid,) in tx.fetch(listed, {"tenant": tenant})]
        )
    else:
        ids = list(dict.fromkeys(conversation_ids))
        for cid in ids:
            _arguments.check_ref(cid, tenant)
            await store.get_conversation(cid, tenant=tenant)
    partial = target.with_name(f".{target.name}.partial")
    try:
        archive = await asyncio.to_thread(zipfile.ZipFile, partial, "w", zipfile.ZIP_DEFLATED)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the export to {target}: {exc}") from exc
    try:
        report = await _write(store, archive, ids, tenant, target, progress)
        await asyncio.to_thread(archive.close)
        await asyncio.to_thread(partial.replace, target)
    except OSError as exc:
        await asyncio.to_thread(_discard, archive, partial)
        raise InvalidInputError(f"cannot write the export to {target}: {exc}") from exc
    except BaseException:
        await asyncio.to_thread(_discard, archive, partial)
        raise
    return report


def _discard(archive: zipfile.ZipFile, partial: Path) -> None:
    with contextlib.suppress(Exception):
        archive.close()
    partial.unlink(missing_ok=True)


async def _write(
    store: ConversationReader,
    archive: zipfile.ZipFile,
    ids: list[str],
    tenant: str | None,
    target: Path,
    progress: Progress,
) -> ExportReport:
    listed: list[dict[str, Any]] = []
    blobs: dict[str, str] = {}  # digest -> the namespace it was first found in
    messages = 0
    for done, cid in enumerate(ids, 1):
        document = await _document(store, cid)
        if document is not None:
            rows = document["archive"]
            name = f"conversations/{len(listed) + 1:06d}.json"
            text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
            await asyncio.to_thread(archive.writestr, name, text)
            count = len(_column(rows, "messages", "seq"))
            messages += count
            listed.append(
                {
                    "id": cid,
                    "tenant": document["tenant"],
                    "file": name,
                    "revision": _column(rows, "conversations", "revision")[0],
                    "messages": count,
                }
            )
            for namespace, sha256 in zip(
                _column(rows, "blob_refs", "namespace"),
                _column(rows, "blob_refs", "sha256"),
                strict=True,
            ):
                blobs.setdefault(sha256, namespace)
        progress("exporting conversations", done, len(ids))
    described = []
    size = 0
    for done, (sha256, namespace) in enumerate(sorted(blobs.items()), 1):
        entry = await _blob(store, archive, namespace, sha256)
        described.append(entry)
        size += entry["size"]
        progress("exporting blobs", done, len(blobs))
    manifest = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": _arguments.now().isoformat(),
        "tenant": tenant,
        "conversations": listed,
        "blobs": described,
    }
    text = json.dumps(manifest, ensure_ascii=False, indent=1)
    await asyncio.to_thread(archive.writestr, MANIFEST, text)
    return ExportReport(target, len(listed), messages, len(described), size)


async def _document(store: ConversationReader, cid: str) -> dict[str, Any] | None:
    """The show document of ``cid`` with its rows of the same revision; None once deleted."""
    for _ in range(_REREADS):
        rows = await store.backend.read(lambda tx: dump_rows(tx, cid))
        revision = _column(rows, "conversations", "revision")
        if not revision:
            return None
        try:
            conversation = await store.load(cid)
        except ConversationNotFoundError:
            return None
        if conversation.revision == revision[0]:
            return {**conversation_document(conversation), "archive": rows}
    # Writers kept changing it: say so rather than export rows and a document that disagree.
    raise RevisionConflictError(cid, revision[0], conversation.revision)


async def _blob(
    store: ConversationReader, archive: zipfile.ZipFile, namespace: str, sha256: str
) -> dict[str, Any]:
    data = await store.blob_store.namespace(namespace).get(sha256)

    def catalogue(tx: Tx) -> dict[str, Any]:
        rows = tx.fetch(SELECT_ATTACHMENT, {"sha256": sha256})
        if not rows:
            return {"media_type": "application/octet-stream", "created_at": None}
        _size, media_type, created = rows[0]
        return {"media_type": media_type, "created_at": tx.codec.load_time(created).isoformat()}

    described = await store.backend.read(catalogue)
    name = f"blobs/{sha256}"
    # Attachments are mostly compressed media already: stored, not deflated again.
    await asyncio.to_thread(archive.writestr, name, data, zipfile.ZIP_STORED)
    return {"sha256": sha256, "size": len(data), "file": name, **described}
