"""What "nothing was written" means in the v2 tests: a conversation's whole observable state.

`snapshot` reads a conversation through the public API only: its active path (messages with
seq, parent, id and parts), its tool calls with their lifecycles, its head, revision, state,
title, metadata and branches. Two equal snapshots mean no write happened in between, including
none that a later read would notice only through the revision.
"""

from __future__ import annotations

from typing import Any

from convstore import ConversationStore
from tests.store.reference import call_projection, message_projection

__all__ = ["snapshot"]


async def snapshot(store: ConversationStore, cid: str, *, tenant: str | None = None) -> Any:
    """Everything `load` and `branches` say about ``cid``, comparable with ``==``."""
    loaded = await store.load(cid, tenant=tenant)
    branches = await store.branches(cid, tenant=tenant)
    return {
        "messages": [message_projection(m) for m in loaded.messages],
        "tool_calls": [call_projection(c) for c in loaded.tool_calls],
        "head_seq": loaded.head_seq,
        "revision": loaded.revision,
        "state": loaded.state,
        "title": loaded.title,
        "metadata": loaded.metadata,
        "compactions": [c.model_dump(mode="json") for c in loaded.compactions],
        "branches": [(b.head_seq, b.active) for b in branches],
    }
