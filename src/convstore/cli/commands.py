"""The commands behind ``convstore``: each opens the store, calls the API, prints the result."""

from __future__ import annotations

import argparse
import json

from convstore.cli.demo import run_demo
from convstore.cli.views import conversation_view, summary_table
from convstore.db import migrate as migrate_database
from convstore.model import dump_messages
from convstore.store import ConversationStore

__all__ = ["demo", "list_conversations", "migrate", "show"]


def _store(args: argparse.Namespace) -> ConversationStore:
    return ConversationStore(args.url, blobs=args.blobs)


async def demo(args: argparse.Namespace) -> int:
    """Store a sample conversation and print what was stored."""
    async with _store(args) as store:
        await run_demo(store)
    return 0


async def migrate(args: argparse.Namespace) -> int:
    """Upgrade the schema."""
    await migrate_database(args.url, args.revision)
    print(f"migrated {args.url} to {args.revision}")
    return 0


async def list_conversations(args: argparse.Namespace) -> int:
    """Print the most recently updated conversations."""
    async with _store(args) as store:
        rows = await store.list_conversations(tenant=args.tenant, limit=args.limit)
    print(summary_table(rows))
    return 0


async def show(args: argparse.Namespace) -> int:
    """Print one conversation."""
    async with _store(args) as store:
        conversation = await store.load(args.id, tenant=args.tenant)
    if args.json:
        print(json.dumps(dump_messages(conversation.messages), indent=2, ensure_ascii=False))
    else:
        print(conversation_view(conversation))
    return 0
