"""Store features the inspector uses that may not have landed yet, behind one seam each.

Invariants:

- Each function calls the public store API when the store has it (`ConversationStore.search`)
  and falls back to what the public API already offers otherwise, so the
  pages do not change when the store grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from convstore.model import Conversation
from convstore.store import ConversationStore, ConversationSummary

__all__ = ["TitleMatches", "load_path", "title_search"]

_SCAN_PAGE = 500
_SCAN_LIMIT = 10_000
"""Conversations one title search looks through before it hands back a cursor to go on."""


async def load_path(
    store: ConversationStore,
    conversation_id: str,
    *,
    tenant: str | None,
    head_seq: int | None,
    last: int,
    before_seq: int | None,
) -> Conversation:
    """The path root → ``head_seq`` (the active path when ``None``), newest ``last`` first.

    The stored head is never moved (``load(head_seq=)``).
    """
    return await store.load(
        conversation_id, tenant=tenant, last=last, before_seq=before_seq, head_seq=head_seq
    )


@dataclass(frozen=True, slots=True)
class TitleMatches:
    """Conversations whose title contains the query, and where to go on looking."""

    rows: list[ConversationSummary]
    next_cursor: str | None


async def title_search(
    store: ConversationStore,
    query: str,
    *,
    tenant: str | None,
    metadata: dict[str, Any] | None,
    limit: int,
    cursor: str | None,
) -> TitleMatches:
    """Conversations whose title contains ``query`` (case-insensitive), newest first.

    The stand-in for the store's full-text search where it has none: it looks through at
    most a bounded number of conversations per call and returns a cursor to go on.
    """
    needle = query.casefold()
    rows: list[ConversationSummary] = []
    scanned = 0
    while scanned < _SCAN_LIMIT:
        page = await store.list_conversations(
            tenant=tenant, limit=_SCAN_PAGE, cursor=cursor, metadata=metadata
        )
        for row in page:
            scanned += 1
            cursor = row.cursor
            if row.title is not None and needle in row.title.casefold():
                rows.append(row)
                if len(rows) == limit:
                    return TitleMatches(rows, cursor)
        if not page.has_more:
            return TitleMatches(rows, None)
    return TitleMatches(rows, cursor)
