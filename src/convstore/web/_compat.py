"""Store features the inspector uses that may not have landed yet, behind one seam each.

Invariants:

- Each function calls the public store API when the store has it (`ConversationStore.search`,
  ``load(head_seq=)``) and falls back to what the public API already offers otherwise, so the
  pages do not change when the store grows.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from convstore.errors import ConversationNotFoundError
from convstore.model import Conversation
from convstore.store import ConversationStore, ConversationSummary, reads

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

    The stored head is never moved.
    """
    if head_seq is None:
        return await store.load(conversation_id, tenant=tenant, last=last, before_seq=before_seq)
    if "head_seq" in inspect.signature(store.load).parameters:
        load: Any = store.load
        loaded: Conversation = await load(
            conversation_id, tenant=tenant, last=last, before_seq=before_seq, head_seq=head_seq
        )
        return loaded
    return await _load_branch(store, conversation_id, tenant, head_seq, last, before_seq)


async def _load_branch(
    store: ConversationStore,
    conversation_id: str,
    tenant: str | None,
    head_seq: int,
    last: int,
    before_seq: int | None,
) -> Conversation:
    """``load(head_seq=)`` for a store without it: the path read with the store's own reads.

    Remove once ``ConversationStore.load`` takes ``head_seq`` everywhere the inspector runs.
    """
    header = await store.load(conversation_id, tenant=tenant, last=0)  # the tenant check
    # Untyped on purpose: these are the store's private reads of the release without
    # ``load(head_seq=)``; the release with it never comes here.
    internals: Any = reads

    def read(tx: Any) -> tuple[list[Any], list[Any]]:
        seqs = internals.path_seqs(tx, conversation_id, head_seq)
        if before_seq is not None:
            seqs = [seq for seq in seqs if seq < before_seq]
        messages = internals.messages_at(tx, conversation_id, seqs[-last:] if last else [])
        return messages, internals._calls_of(tx, conversation_id, messages, everything=False)

    messages, calls = await store.backend.read(read)
    if not messages and before_seq is None:
        raise ConversationNotFoundError(conversation_id)
    return header.model_copy(update={"messages": messages, "tool_calls": calls})


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
