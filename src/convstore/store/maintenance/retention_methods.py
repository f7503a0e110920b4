"""`ConversationStore`'s methods that delete data by policy: a whole tenant, or by age.

`erase_tenant` (`convstore.store.maintenance._erase`) and `prune`
(`convstore.store.maintenance._prune`); each checks the store is open and calls its module, imported
when it runs.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from convstore.progress import Progress, silent
from convstore.store._connection import StoreConnection
from convstore.store.maintenance._prune import DEFAULT_BATCH, DEFAULT_RETENTION

if TYPE_CHECKING:
    from convstore.store.maintenance._erase import EraseReport
    from convstore.store.maintenance._prune import PruneReport

__all__ = ["RetentionMethods"]


class RetentionMethods(StoreConnection):
    """Erasing a tenant and pruning old conversations."""

    async def erase_tenant(
        self, tenant: str, *, now: bool = False, compact: bool = False, progress: Progress = silent
    ) -> EraseReport:
        """Delete every row of ``tenant`` in one transaction; what was removed.

        Blobs nothing references any more are deleted by the next gc, or at once with ``now``;
        ``compact`` then rewrites the database so the rows leave its files (`store.erase`).
        """
        from convstore.store.maintenance._erase import erase_tenant

        self._require_open()
        return await erase_tenant(self, tenant, now=now, compact=compact, progress=progress)

    async def prune(
        self,
        *,
        older_than: timedelta = DEFAULT_RETENTION,
        tenant: str | None = None,
        dry_run: bool = False,
        batch: int = DEFAULT_BATCH,
        progress: Progress = silent,
    ) -> PruneReport:
        """Delete conversations not written for ``older_than``, ``batch`` per transaction.

        A conversation written while the prune runs is kept (`convstore.store.maintenance._prune`).
        """
        from convstore.store.maintenance._prune import prune

        self._require_open()
        return await prune(
            self,
            older_than=older_than,
            tenant=tenant,
            dry_run=dry_run,
            batch=batch,
            progress=progress,
        )
