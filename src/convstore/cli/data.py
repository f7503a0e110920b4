"""``convstore export``, ``erase`` and ``prune``: thin commands over the store's data methods.

Each prints what it did on stdout and its progress on stderr (`convstore.progress`).
"""

from __future__ import annotations

import argparse

from convstore.cli.commands import existing_store
from convstore.errors import InvalidInputError
from convstore.progress import ProgressReporter

__all__ = ["erase", "export", "prune"]


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


async def erase(args: argparse.Namespace) -> int:
    """Erase every row of a tenant; its blobs at the next gc, or now."""
    if not args.tenant:
        raise InvalidInputError("--tenant must name a tenant")
    async with existing_store(args) as store:
        with ProgressReporter() as progress:
            report = await store.erase_tenant(
                args.tenant, now=args.now, compact=args.compact, progress=progress
            )
    for table, count in sorted(report.rows.items()):
        print(f"{table}: {count:,} rows deleted")
    released = len(report.released)
    if args.now:
        print(f"blobs: {len(report.deleted):,} of {released:,} no longer referenced deleted")
    else:
        print(f"blobs: {released:,} no longer referenced; the next 'convstore gc' deletes them")
    if args.compact:
        print("database compacted: the erased rows are gone from its files")
    print(f"erased tenant {report.tenant!r}: {report.conversations:,} conversations")
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
