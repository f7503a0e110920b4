"""The ``convstore`` command: thin commands over the public API.

Invariants:

- Every command takes ``--url`` and ``--blobs`` (defaults: ``CONVSTORE_URL`` /
  ``CONVSTORE_BLOBS``, then the embedded SQLite default) and has ``--help``.
- No logic of its own: each command calls the library and formats what comes back.
- A `ConvstoreError` becomes one line on stderr and exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, get_args
from urllib.parse import quote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from convstore.capabilities import TARGETS
from convstore.cli import commands, data, search, serve
from convstore.db import DEFAULT_URL
from convstore.errors import ConvstoreError
from convstore.imports import FORMATS as IMPORT_FORMATS
from convstore.providers import SOURCES
from convstore.transcript.reasoning import ReasoningPolicy

__all__ = ["main"]


def _connection_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("storage")
    group.add_argument(
        "--url",
        default=os.environ.get("CONVSTORE_URL", DEFAULT_URL),
        help="database URL (env CONVSTORE_URL; default %(default)s)",
    )
    group.add_argument(
        "--blobs",
        default=os.environ.get("CONVSTORE_BLOBS"),
        help="blob storage URL or directory (env CONVSTORE_BLOBS). Without it: the location "
        "recorded in the database (in its settings table, by the first store that opened it), "
        "else a 'convstore-blobs' directory beside the SQLite file. A directory beside or "
        "under the SQLite file is recorded relative to it, so moving the project keeps its "
        "attachments; any other directory as an absolute path, a URL as given. "
        "'convstore blobs set URL' re-records it",
    )
    return options


_HEAD_HELP = (
    "read the path ending at message SEQ (any branch; see 'show' for the tips) instead of the "
    "active one; the stored head does not move"
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every command."""
    shared = _connection_options()
    parser = argparse.ArgumentParser(
        prog="convstore",
        description="A provider-neutral conversation store: inspect, migrate, import, render.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[shared], help=help_text, description=help_text)

    command("demo", "store a sample conversation on the embedded default and show it")
    migrate = command("migrate", "upgrade the database schema (creates it in an empty database)")
    migrate.add_argument("--revision", default="head", help="target revision (default: head)")
    partition = command(
        "partition",
        "hash-partition the per-conversation tables of a PostgreSQL database by conversation "
        "id, in place (docs/scaling.md); run again with the same modulus, it does nothing",
    )
    partition.add_argument(
        "--modulus", type=int, required=True, metavar="N", help="how many partitions per table"
    )
    listing = command("list", "list conversations, newest first, a page at a time")
    listing.add_argument("--tenant", help="only this tenant's conversations")
    listing.add_argument("--limit", type=int, default=50, help="how many per page (default 50)")
    listing.add_argument("--cursor", help="start after this cursor (printed under a full page)")
    show = command("show", "show one conversation: messages, parts, tool calls, attachments")
    show.add_argument("id", help="conversation id")
    show.add_argument("--tenant", help="the conversation's tenant")
    show.add_argument("--head", type=int, metavar="SEQ", help=_HEAD_HELP)
    show.add_argument(
        "--json",
        action="store_true",
        help="print the whole conversation as a JSON document ('import --format convstore' "
        "reads it back)",
    )
    importing = command(
        "import",
        "import a provider request payload (its messages, tools and model), a 'show --json' "
        "document, or another product's export (every conversation of it)",
    )
    importing.add_argument(
        "file",
        help="JSON file holding the payload ('-' for stdin); for an export, its file, "
        "directory or .zip",
    )
    importing.add_argument(
        "--format",
        required=True,
        choices=sorted({*SOURCES, "mistral", "kimi", "convstore", *IMPORT_FORMATS}),
        help="the payload's wire format ('convstore': a 'show --json' document or a convstore "
        "export); an export: chatgpt-export, claude-export, openwebui-export",
    )
    importing.add_argument("--title", help="title of the new conversation")
    importing.add_argument("--tenant", help="tenant of the new conversation(s)")
    rendering = command("render", "render a stored conversation as a provider request")
    rendering.add_argument("id", help="conversation id")
    rendering.add_argument("--to", required=True, choices=list(TARGETS), help="render target")
    rendering.add_argument("--model", help="the model the request is for")
    rendering.add_argument("--tenant", help="the conversation's tenant")
    rendering.add_argument(
        "--reasoning",
        choices=get_args(ReasoningPolicy),
        default="drop",
        help="reasoning the target cannot accept back: drop it or send it as text",
    )
    rendering.add_argument(
        "--diagnostics",
        action="store_true",
        help="print one JSON document with the payload and the diagnostics record (every "
        "repair and projection)",
    )
    rendering.add_argument(
        "--last",
        type=int,
        metavar="N",
        help="render a window of the newest N messages (system prompt kept, no result "
        "without its call)",
    )
    rendering.add_argument("--head", type=int, metavar="SEQ", help=_HEAD_HELP)
    rendering.add_argument(
        "--tools",
        metavar="FILE",
        help="JSON file with tool definitions to send: a list of {name, description, "
        "parameters, strict} (default: the tools imported with the conversation)",
    )
    gc = command("gc", "delete blobs no conversation references (older than a grace period)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    gc.add_argument(
        "--grace",
        type=float,
        default=3600,
        metavar="SECONDS",
        help="keep unreferenced blobs younger than this (default 3600: in-flight appends "
        "store blobs before their rows)",
    )
    gc.add_argument(
        "--watch",
        type=float,
        metavar="INTERVAL",
        help="collect again every INTERVAL seconds, beside running writers, until interrupted "
        "(a summary line per run)",
    )
    command("fsck", "check every referenced blob exists and matches its hash (exit 1 if not)")
    blobs = command("blobs", "where the attachments live: show or re-record the location")
    blobs_sub = blobs.add_subparsers(dest="blobs_command", required=True, metavar="ACTION")
    record = blobs_sub.add_parser(
        "set",
        parents=[shared],
        help="record URL as the blob location in the database (after checking it holds every "
        "referenced blob)",
        description="Record URL (a directory or fsspec URL) as the database's blob location, "
        "used by every store opened without --blobs. It is checked first: every blob a "
        "message references must be there and intact, or nothing is recorded. A directory "
        "beside or under the SQLite file is recorded relative to it.",
    )
    record.add_argument("location", metavar="URL", help="the blob location to record")
    blobs_sub.add_parser(
        "show", parents=[shared], help="print the recorded blob location", description=None
    )
    serve.add_arguments(command("serve", "serve the read-only web inspector (convstore[web])"))
    search.add_arguments(command("search", "find messages and conversation titles by their text"))
    data.add_arguments(
        command(
            "export",
            "write conversations (all of a tenant's, or named ones), their attachments and a "
            "manifest to a zip; 'import OUT.zip --format convstore' restores it exactly",
        ),
        command(
            "erase",
            "delete every conversation of a tenant (one transaction) and, at the next gc or "
            "with --now, the blobs only it referenced",
        ),
        command(
            "prune",
            "delete conversations not written for a period, in short batches, beside running "
            "writers",
        ),
    )
    return parser


Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]

_HANDLERS: dict[str, Handler] = {
    "demo": commands.demo,
    "migrate": commands.migrate,
    "partition": commands.partition,
    "list": commands.list_conversations,
    "show": commands.show,
    "import": commands.import_payload,
    "render": commands.render,
    "gc": commands.gc,
    "fsck": commands.fsck_command,
    "blobs": commands.blobs_command,
    "serve": serve.serve,
    "search": search.search,
    "export": data.export,
    "erase": data.erase,
    "prune": data.prune,
}


_USERINFO_PASSWORD = re.compile(r"://[^/@:]*:([^/@]+)@")


def _without_password(text: str, url: str) -> str:
    """``text`` with the database password, however it is spelled in ``url``, masked."""
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError):
        # Not a URL SQLAlchemy reads (a bad port, say): find the userinfo's password by hand.
        found = _USERINFO_PASSWORD.search(url)
        password = found.group(1) if found else None
    if not password:
        return text
    for spelling in {str(password), quote(str(password), safe=""), quote(str(password))}:
        text = text.replace(spelling, "***")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    handler = _HANDLERS[args.command]
    try:
        if args.blobs is not None and args.command not in ("blobs", "demo", "migrate"):
            notice = asyncio.run(commands.recorded_location_notice(args))
            if notice is not None:
                print(f"convstore: {notice}", file=sys.stderr)
        return asyncio.run(handler(args))
    except ConvstoreError as exc:
        message = _without_password(str(exc), args.url)
        print(f"convstore: {type(exc).__name__}: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
