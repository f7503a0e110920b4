"""``store.erase_tenant(tenant)``: every row of a tenant gone in one transaction; its blobs next.

Invariants:

- One write transaction deletes the tenant's rows from every per-conversation table
  (`convstore.store.transfer.archive_rows.TABLES`: messages, tool calls, compactions, metadata tags,
  idempotency keys, LangGraph checkpoints, blob references, and any table added later with a
  ``conversation_id``), children first, then the conversations themselves (their title,
  metadata and state). Search entries go with their messages: the database maintains them.
  The deletes are explicit, not left to cascades, so the report counts each table's rows.
- A concurrent write to one of the tenant's conversations either commits before the erase
  (and is erased) or finds the conversation gone (`ConversationNotFoundError`); a
  conversation the tenant creates after the erase is a new one.
- The bytes are content addressed and may be shared (global deduplication, or another
  tenant's identical file in the shared namespace), so they are not deleted in the
  transaction. The report lists the blobs the erased rows referenced that nothing references
  any more, and the transaction records them (`convstore.store.maintenance.released_blobs`): the
  next garbage collection deletes them whatever their age, or ``now=True`` deletes them at once.
  Either way through garbage collection's own marking protocol, so an append racing to
  reference the same bytes stores them again rather than losing them. An append whose bytes
  went in while the erase ran, and whose rows then find the conversation gone, records its
  bytes as released too (`released_blobs.release_after_failure`).
- Deleted rows can outlive the delete in the database's files (SQLite free pages and WAL;
  PostgreSQL dead row versions until a ``VACUUM FULL``, and its WAL). ``compact=True``
  (``erase --compact``) rewrites the database afterwards; docs/data-in-and-out.md says what
  remains even then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from convstore.db import schema
from convstore.db.backend import compact as compact_database
from convstore.db.statements.maintenance import ERASE_LOCK, ERASE_REFERENCED, erase_delete
from convstore.db.tx import Tx
from convstore.errors import InvalidInputError
from convstore.limits import check_text
from convstore.progress import Progress, silent
from convstore.store.maintenance import released_blobs
from convstore.store.maintenance.garbage import collect_released
from convstore.store.transfer.archive_rows import TABLES

if TYPE_CHECKING:
    from convstore.store._connection import StoreConnection

__all__ = ["EraseReport", "erase_tenant"]


@dataclass(frozen=True, slots=True)
class EraseReport:
    """What `erase_tenant` removed."""

    tenant: str
    rows: dict[str, int] = field(default_factory=dict)
    """Rows deleted, by table (``conversations``, ``messages``, ``tool_calls``, ...)."""
    released: list[str] = field(default_factory=list)
    """Blobs the erased rows referenced and nothing references now (``[<namespace>:]<digest>``,
    as gc names them): the next gc deletes them, whatever their age."""
    deleted: list[str] = field(default_factory=list)
    """Of those, the blobs already deleted (``now=True``)."""

    @property
    def conversations(self) -> int:
        """Conversations erased."""
        return self.rows.get(schema.conversations.name, 0)

    @property
    def messages(self) -> int:
        """Messages erased, on every branch."""
        return self.rows.get(schema.messages.name, 0)


def _erase(tx: Tx, tenant: str) -> tuple[dict[str, int], list[released_blobs.Released]]:
    params = {"tenant": tenant}
    # PostgreSQL: appends in flight to these conversations commit first (their rows are then
    # erased and counted); later ones wait and find the conversations gone. SQLite has one
    # writer at a time already.
    tx.fetch(ERASE_LOCK, params)
    blobs = [(namespace, sha256) for namespace, sha256 in tx.fetch(ERASE_REFERENCED, params)]
    rows = {table.name: tx.execute(erase_delete(table), params) for table in reversed(TABLES)}
    records = released_blobs.release_unreferenced(tx, blobs, datetime.now(UTC))
    return {name: n for name, n in rows.items() if n}, records


async def erase_tenant(
    store: StoreConnection,
    tenant: str,
    *,
    now: bool = False,
    compact: bool = False,
    progress: Progress = silent,
) -> EraseReport:
    """Erase every conversation of ``tenant``; with ``now``, delete its released blobs too.

    ``compact`` then rewrites the database so the erased rows leave its files as well
    (`convstore.db.backend.compact`: SQLite ``VACUUM``, PostgreSQL ``VACUUM FULL``).
    """
    if not isinstance(tenant, str) or not tenant:
        raise InvalidInputError("erase_tenant needs a tenant (a non-empty string)")
    check_text(tenant, "tenant")
    rows, released = await store.backend.write(lambda tx: _erase(tx, tenant))
    # The search index drops the erased documents and every segment that held them.
    await store.search_index.purge(tenant)
    progress("erasing tenant", 1, 1)
    labels = [f"{ns}:{sha}" if ns else sha for ns, sha, _ in released]
    deleted = await collect_released(store, released, progress=progress) if now else []
    if compact:
        await compact_database(store.backend)
        progress("compacting the database", 1, 1)
    return EraseReport(tenant, rows, labels, deleted)
