"""The commands behind ``convstore``: each opens the store, calls the API, prints the result."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import timedelta
from pathlib import Path

from convstore.cli.demo import run_demo
from convstore.cli.views import conversation_view, summary_table
from convstore.db import migrate as migrate_database
from convstore.errors import InvalidInputError
from convstore.model import dump_messages
from convstore.parsing import parse
from convstore.store import ConversationStore, collect_garbage, fsck

__all__ = [
    "demo",
    "fsck_command",
    "gc",
    "import_payload",
    "list_conversations",
    "migrate",
    "render",
    "show",
]


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
    """Print a page of conversations, newest first, and how to get the next one."""
    async with _store(args) as store:
        page = await store.list_conversations(
            tenant=args.tenant, limit=args.limit, cursor=args.cursor
        )
    print(summary_table(page))
    if page.next_cursor is not None:
        print(f"more: convstore list --cursor {page.next_cursor}")
    return 0


async def show(args: argparse.Namespace) -> int:
    """Print one conversation."""
    async with _store(args) as store:
        conversation = await store.load(args.id, tenant=args.tenant)
        tips = await store.branches(args.id, tenant=args.tenant)
    if args.json:
        print(json.dumps(dump_messages(conversation.messages), indent=2, ensure_ascii=False))
    else:
        print(conversation_view(conversation, tips))
    return 0


class _ProgressLine:
    """Progress on stderr, at most every half second, so large stores show they are moving."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if done != total and now - self._last < 0.5:
            return
        self._last = now
        of = f" of {total:,}" if total is not None else ""
        print(f"  {stage}: {done:,}{of} blobs", file=sys.stderr)


async def import_payload(args: argparse.Namespace) -> int:
    """Parse a payload file, store it as a new conversation, print its id."""
    try:
        if args.file == "-":
            text = await asyncio.to_thread(sys.stdin.read)
        else:
            text = await asyncio.to_thread(Path(args.file).read_text, encoding="utf-8")
        payload = json.loads(text)
    except RecursionError as exc:
        raise InvalidInputError(
            f"cannot read a JSON payload from {args.file}: it nests too deeply to decode"
        ) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"cannot read a JSON payload from {args.file}: {exc}") from exc
    messages = parse(payload, args.format)
    async with _store(args) as store:
        conversation = await store.create_conversation(title=args.title, tenant=args.tenant)
        # An imported history is a record: a later, different result for a call is kept as
        # history rather than refused.
        await store.append(conversation.id, messages, on_conflict="keep-first")
    print(conversation.id)
    return 0


async def render(args: argparse.Namespace) -> int:
    """Print the request payload (or the diagnostics) for a stored conversation."""
    async with _store(args) as store:
        rendered = await store.render(
            args.id, args.to, model=args.model, tenant=args.tenant, reasoning=args.reasoning
        )
    document = rendered.diagnostics.to_dict() if args.diagnostics else rendered.payload
    print(json.dumps(document, indent=2, ensure_ascii=False))
    return 0


async def gc(args: argparse.Namespace) -> int:
    """Collect unreferenced blobs."""
    async with _store(args) as store:
        report = await collect_garbage(
            store,
            grace=timedelta(seconds=args.grace),
            dry_run=args.dry_run,
            progress=_ProgressLine(),
        )
        verb = "would delete" if report.dry_run else "deleted"
        for sha in report.deleted:
            print(f"{verb} {store.blob_store.key(sha)}")
    print(
        f"{report.examined:,} blobs examined, {report.referenced:,} referenced; "
        f"{verb} {len(report.deleted):,} unreferenced, kept {report.young:,} younger than "
        f"{args.grace:g}s; {report.staging:,} stale staging objects"
        + (" found" if report.dry_run else " removed")
    )
    return 0


async def fsck_command(args: argparse.Namespace) -> int:
    """Check referenced blobs; exit status 1 when any is missing or corrupted."""
    async with _store(args) as store:
        report = await fsck(store, progress=_ProgressLine())
        for sha in report.missing:
            print(f"MISSING   {store.blob_store.key(sha)}")
        for sha in report.corrupted:
            print(f"CORRUPTED {store.blob_store.key(sha)}")
        for sha in report.unreferenced:
            print(f"unreferenced {store.blob_store.key(sha)}")
    status = "ok" if report.ok else "PROBLEMS FOUND"
    print(
        f"{status}: {report.referenced:,} referenced blobs, {len(report.missing):,} missing, "
        f"{len(report.corrupted):,} corrupted; {len(report.unreferenced):,} unreferenced"
    )
    return 0 if report.ok else 1
