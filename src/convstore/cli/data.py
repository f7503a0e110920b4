"""``convstore export``, ``erase`` and ``prune``: thin commands over the store's data methods.

Each prints what it did on stdout and its progress on stderr (`convstore.progress`).
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

from convstore.cli.commands import existing_store
from convstore.errors import InvalidInputError
from convstore.progress import ProgressReporter

__all__ = ["add_arguments", "erase", "export", "parse_period", "prune"]

_PERIOD = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_period(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w``, ``45s`` (or their sums, ``1d12h``) as a timedelta."""
    parts = _PERIOD.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a period: a number and a unit (s, m, h, d, w), e.g. 30d"
        )
    return sum((timedelta(**{_UNITS[u]: int(n)}) for n, u in parts), timedelta())


def add_arguments(
    export_parser: argparse.ArgumentParser,
    erase_parser: argparse.ArgumentParser,
    prune_parser: argparse.ArgumentParser,
) -> None:
    """The options of the three commands."""
    export_parser.add_argument("out", metavar="OUT.zip", help="the zip to write")
    export_parser.add_argument("--tenant", help="only this tenant's conversations")
    export_parser.add_argument(
        "--conversation",
        action="append",
        metavar="ID",
        help="only this conversation (repeat for more)",
    )
    erase_parser.add_argument("--tenant", required=True, help="the tenant to erase")
    erase_parser.add_argument(
        "--now",
        action="store_true",
        help="delete the blobs only this tenant referenced now, not at the next gc",
    )
    prune_parser.add_argument(
        "--older-than",
        required=True,
        type=parse_period,
        metavar="PERIOD",
        help="delete conversations not written for this long (30d, 12h, 2w, ...)",
    )
    prune_parser.add_argument("--tenant", help="only this tenant's conversations")
    prune_parser.add_argument(
        "--dry-run", action="store_true", help="count what would be deleted, delete nothing"
    )


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
            report = await store.erase_tenant(args.tenant, now=args.now, progress=progress)
    for table, count in sorted(report.rows.items()):
        print(f"{table}: {count:,} rows deleted")
    released = len(report.released)
    if args.now:
        print(f"blobs: {len(report.deleted):,} of {released:,} no longer referenced deleted")
    else:
        print(f"blobs: {released:,} no longer referenced; the next 'convstore gc' deletes them")
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
