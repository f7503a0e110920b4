"""``convstore list`` and ``convstore show``: the commands that read conversations.

Invariant: ``list`` loads only the store's connection and its listing (no pydantic model, no
renderer); ``show`` loads the models it prints, when it runs.
"""

from __future__ import annotations

import argparse
import json

from convstore.cli.stores import existing_store
from convstore.store.conversations.listing import ConversationSummary

__all__ = ["list_conversations", "show", "summary_table"]


def summary_table(rows: list[ConversationSummary]) -> str:
    """Conversations as an aligned table."""
    if not rows:
        return "no conversations"
    header = f"{'id':<28} {'updated (UTC)':<19} {'msgs':>5}  {'tenant':<12} title"
    return "\n".join(
        [header]
        + [
            f"{row.id:<28} {row.updated_at:%Y-%m-%d %H:%M:%S} {row.message_count:>5}  "
            f"{(row.tenant or '-'):<12} {row.title or '-'}"
            for row in rows
        ]
    )


async def list_conversations(args: argparse.Namespace) -> int:
    """Print a page of conversations, newest first, and how to get the next one."""
    async with existing_store(args) as store:
        page = await store.list_conversations(
            tenant=args.tenant, limit=args.limit, cursor=args.cursor
        )
    print(summary_table(page))
    if page.next_cursor is not None:
        print(f"more: convstore list --cursor {page.next_cursor}")
    return 0


async def show(args: argparse.Namespace) -> int:
    """Print one conversation."""
    from convstore.cli.views import conversation_view
    from convstore.store.transfer.documents import conversation_document

    async with existing_store(args) as store:
        conversation = await store.load(args.id, tenant=args.tenant, head_seq=args.head)
        tips = await store.branches(args.id, tenant=args.tenant)
    if args.json:
        document = conversation_document(conversation)
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print(conversation_view(conversation, tips))
    return 0
