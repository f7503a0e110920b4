"""``convstore import FILE [--format F]``: what FILE is, and an export imported whole.

Without ``--format`` the format is detected (`convstore.imports.detection`) and said on
stderr, so stdout stays the report (or a payload's new conversation id) for scripts. A file
that looks like a zip but is not one is refused as such whatever ``--format`` says.

Exports (a file, a directory or a ``.zip``) go through `convstore.imports.import_file`; the
report is printed on stdout in words (`ImportReport.summary`), progress on stderr. The exit
status is 1 when a conversation of the export could not be imported (the others were).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from convstore.imports import FORMATS, import_file
from convstore.imports.detection import (
    Detected,
    check_zip,
    detect_format,
    detect_payload,
    looks_like_zip,
)
from convstore.progress import ProgressReporter
from convstore.store import ConversationStore

__all__ = ["announce", "detect", "detect_document", "handles", "import_export"]


def announce(file: str, detected: Detected) -> None:
    """Say on stderr which format was chosen, and how to choose another."""
    print(
        f"convstore: importing {file} as {detected.format}: {detected.reason} "
        "(--format chooses another)",
        file=sys.stderr,
    )


async def detect(file: str) -> Detected | None:
    """The format of ``file``, said on stderr (None for stdin: its payload is read first)."""
    if file == "-":
        return None
    detected = await asyncio.to_thread(detect_format, Path(file))
    announce(file, detected)
    return detected


def detect_document(file: str, document: object) -> Detected:
    """The format of a payload read from ``file`` (stdin)."""
    detected = detect_payload(document)
    announce(file, detected)
    return detected


def handles(args: argparse.Namespace, fmt: str) -> bool:
    """Whether ``fmt`` for ``args.file`` names an export (not one payload or document)."""
    if fmt not in FORMATS:
        return False
    if fmt != "convstore":
        return True
    # `--format convstore` also reads one 'show --json' document (a JSON file or stdin).
    path = Path(args.file)
    return args.file != "-" and (path.is_dir() or (path.is_file() and looks_like_zip(path)))


async def import_export(store: ConversationStore, args: argparse.Namespace, fmt: str) -> int:
    """Import the export ``args.file`` into ``store``; prints the report."""
    await asyncio.to_thread(check_zip, Path(args.file))
    with ProgressReporter() as progress:
        report = await import_file(
            store, args.file, fmt, tenant=args.tenant, progress=progress, strict=args.strict
        )
    print(report.summary())
    return 1 if report.errors else 0
