"""Store features the inspector uses through one seam each.

Invariants:

- Each function calls the public store API only, so the pages do not change when the store
  grows. (Search needs no seam any more: the pages call `ConversationStore.search`.)
"""

from __future__ import annotations

from convstore.model import Conversation
from convstore.store import ConversationStore

__all__ = ["load_path"]


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
