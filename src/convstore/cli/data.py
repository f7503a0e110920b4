"""``convstore export``, ``erase`` and ``prune``: thin commands over the store's data methods.

Each prints what it did on stdout and its progress on stderr (`convstore.progress`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Final

from convstore._words import plural
from convstore.cli.stores import existing_store
from convstore.errors import InvalidInputError, NotFoundError
from convstore.progress import ProgressReporter
from convstore.store import ConversationStore

__all__ = ["erase", "export", "prune"]

_PAGE: Final = 500


async def export(args: argparse.Namespace) -> int:
    """Write conversations, blobs and a manifest to a zip."""
    async with existing_store(args) as store:
        with ProgressReporter() as progress:
            report = await store.export(
                args.out,
                tenant=args.tenant,
                conversation_ids=args.conversation,
                progress=progress,
            )
    print(
        f"exported {report.conversations:,} conversations ({report.messages:,} messages) and "
        f"{report.blobs:,} blobs ({report.blob_bytes:,} bytes) to {report.path}"
    )
    return 0


async def _tenant_size(store: ConversationStore, tenant: str) -> tuple[int, int]:
    """The tenant's conversations and messages (every branch), by the public listing."""
    conversations = messages = 0
    cursor: str | None = None
    while True:
        page = await store.list_conversations(tenant=tenant, limit=_PAGE, cursor=cursor)
        conversations += len(page)
        messages += sum(row.message_count for row in page)
        if page.next_cursor is None:
            return conversations, messages
        cursor = page.next_cursor


def _confirmed(question: str) -> bool:
    """Whether the person at the terminal answers yes (blocking: run in a thread)."""
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


async def erase(args: argparse.Namespace) -> int:
    """Erase every row of a tenant; its blobs at the next gc, or now.

    ``--dry-run`` says what would go. Otherwise a person at a terminal is asked first, and
    without a terminal ``--yes`` is required. A tenant with no conversations is an error (a
    misspelt tenant would otherwise "succeed").
    """
    if not args.tenant:
        raise InvalidInputError("--tenant must name a tenant")
    interactive = sys.stdin.isatty()
    if not (args.yes or args.dry_run or interactive):
        print(
            f"convstore erase: erasing tenant {args.tenant!r} cannot be undone; without a "
            "terminal to confirm on, add --yes (or --dry-run to see what would go)",
            file=sys.stderr,
        )
        return 2
    async with existing_store(args) as store:
        conversations, messages = await _tenant_size(store, args.tenant)
        if conversations == 0:
            raise NotFoundError(
                f"tenant {args.tenant!r} has no conversations: nothing to erase (check the "
                "name; 'convstore list --tenant NAME' shows a tenant's conversations)"
            )
        what = (
            f"tenant {args.tenant!r}: {plural(conversations, 'conversation')} "
            f"({plural(messages, 'message')}), their tool calls, checkpoints and search "
            "entries; attachments no other conversation references are released "
            + ("and deleted now" if args.now else "for the next 'convstore gc'")
        )
        if args.dry_run:
            print(f"would erase {what}; nothing erased (--dry-run)")
            return 0
        if not args.yes:
            question = f"erase {what}? This cannot be undone. [y/N] "
            if not await asyncio.to_thread(_confirmed, question):
                print("nothing erased", file=sys.stderr)
                return 1
        with ProgressReporter() as progress:
            report = await store.erase_tenant(
                args.tenant, now=args.now, compact=args.compact, progress=progress
            )
    for table, count in sorted(report.rows.items()):
        print(f"{table}: {plural(count, 'row')} deleted")
    released = len(report.released)
    if args.now:
        print(f"blobs: {len(report.deleted):,} of {released:,} no longer referenced deleted")
    else:
        print(f"blobs: {released:,} no longer referenced; the next 'convstore gc' deletes them")
    if args.compact:
        print("database compacted: the erased rows are gone from its files")
    print(f"erased tenant {report.tenant!r}: {plural(report.conversations, 'conversation')}")
    return 0


async def prune(args: argparse.Namespace) -> int:
    """Delete conversations not written within a period."""
    async with existing_store(args) as store:
        with ProgressReporter() as progress:
            report = await store.prune(
                older_than=args.older_than,
                tenant=args.tenant,
                dry_run=args.dry_run,
                progress=progress,
            )
    verb = "would delete" if report.dry_run else "deleted"
    print(
        f"{verb} {report.deleted:,} of {report.examined:,} conversations created before "
        f"{report.cutoff.isoformat()} (not written since); kept {report.kept:,} written meanwhile"
    )
    return 0
