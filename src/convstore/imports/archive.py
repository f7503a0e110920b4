"""``--format convstore``: an export zip, restored exactly (`convstore.store.transfer.restore`).

Unlike the product importers, which hand canonical messages to the store's append, this one
writes the archive's rows through the store's restore step: only rows carry what an exact
restore needs (seqs, every branch, the head, revisions, timestamps).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from convstore.progress import silent
from convstore.store.transfer.restore import RestoreLimits, restore_archive

from ._limits import ImportLimits
from ._report import ImportReport, Progress

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["FORMAT_NAME", "import_archive"]

FORMAT_NAME = "convstore"


async def import_archive(
    store: ConversationStore,
    path: Path,
    *,
    tenant: str | None,
    report: ImportReport,
    progress: Progress | None,
    strict: bool = False,
    limits: ImportLimits | None = None,
) -> None:
    """Restore the export zip at ``path``; counts go into ``report``.

    A restore refuses a bad archive whole, so ``strict`` changes nothing; ``limits`` give the
    restore their ``total_bytes`` (`RestoreLimits` bound the rest).
    """
    del strict
    restored = await restore_archive(
        store,
        path,
        tenant=tenant,
        progress=progress if progress is not None else silent,
        limits=RestoreLimits(total_bytes=limits.total_bytes) if limits is not None else None,
    )
    report.imported["conversation"] += restored.restored
    report.present["conversation"] += restored.present
    report.imported["message"] += restored.rows.get("messages", 0)
    report.imported["attachment"] += restored.blobs
