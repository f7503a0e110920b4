"""``convstore import FILE --format chatgpt-export|claude-export|openwebui-export|...``.

Exports (a file, a directory or a ``.zip``) go through `convstore.imports.import_file`; the
report is printed on stdout, progress on stderr. The exit status is 1 when a conversation
of the export could not be imported (the others were).
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

from convstore.imports import FORMATS, import_file
from convstore.progress import ProgressReporter
from convstore.store import ConversationStore

__all__ = ["handles", "import_export"]


def handles(args: argparse.Namespace) -> bool:
    """Whether ``args`` name an export (rather than a single payload or document)."""
    if args.format not in FORMATS:
        return False
    if args.format != "convstore":
        return True
    # `--format convstore` also reads one 'show --json' document (a JSON file or stdin).
    path = Path(args.file)
    return args.file != "-" and (path.is_dir() or zipfile.is_zipfile(path))


async def import_export(store: ConversationStore, args: argparse.Namespace) -> int:
    """Import the export ``args.file`` into ``store``; prints the report."""
    with ProgressReporter() as progress:
        report = await import_file(
            store, args.file, args.format, tenant=args.tenant, progress=progress
        )
    print(report.summary())
    return 1 if report.errors else 0
