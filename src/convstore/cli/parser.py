"""Every ``convstore`` command's options, and where its handler lives: the command table.

Invariants:

- Cheap to import: argparse and the standard library only, so ``convstore --help`` (and a
  usage error) never loads SQLAlchemy, pydantic or a provider module. The names the options
  offer (render targets, payload and export formats, the default URL) are spelled here and
  checked against the library's own by ``tests/cli/test_lazy_cli.py``.
- A handler is named, not imported: ``"convstore.cli.search:search"`` is loaded only when that
  command runs (`load_handler`). Handler modules may import whatever they need at the top.

Adding a command: write ``def _NAME_options(parser)`` below (argparse only), add a `Command` to
`COMMANDS`, and put ``async def handler(args) -> int`` in a module of its own under
``convstore.cli``; ``tests/cli/test_lazy_cli.py`` proves ``--help`` stayed cheap and
``tests/public_api.txt`` records the new options.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re

# Not `typing.TYPE_CHECKING` (nor dataclasses): each costs ``--help`` more than this whole
# module; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from datetime import timedelta
    from typing import Any, Final, NoReturn, TypeAlias

    Handler: TypeAlias = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]
    QuickHandler: TypeAlias = Callable[[argparse.Namespace], int | None]

__all__ = [
    "COMMANDS",
    "DEFAULT_URL",
    "EXPORT_FORMATS",
    "PAYLOAD_FORMATS",
    "REASONING_POLICIES",
    "RENDER_TARGETS",
    "Command",
    "Handler",
    "QuickHandler",
    "build_parser",
    "command_parser",
    "load_handler",
    "load_quick",
    "parse_period",
    "port",
]

DEFAULT_URL: Final = "sqlite+aiosqlite:///convstore.db"
"""`convstore.db.DEFAULT_URL`, spelled here so the parser does not import the database layer."""

RENDER_TARGETS: Final = (
    "openai-chat",
    "mistral",
    "kimi",
    "openai-responses",
    "anthropic",
    "gemini",
)
"""`convstore.TARGETS`, in its order."""

PAYLOAD_FORMATS: Final = (
    "anthropic",
    "gemini",
    "kimi",
    "mistral",
    "openai-chat",
    "openai-responses",
)
"""The wire formats ``import`` parses as one request payload (`convstore.parse` sources)."""

EXPORT_FORMATS: Final = ("chatgpt-export", "claude-export", "convstore", "openwebui-export")
"""The export formats ``import`` reads (`convstore.imports.FORMATS`)."""

REASONING_POLICIES: Final = ("drop", "text")
"""`convstore.transcript.reasoning.ReasoningPolicy`."""


class Command:
    """One command: its name, its one-line help, its options and where its handler lives.

    ``handler`` is ``"module:function"``, imported when the command runs. ``quick``, when set,
    is a blocking ``"module:function"`` tried first, before asyncio and the store load: it
    answers (an exit status) or returns ``None``, having printed nothing, and the handler runs.
    """

    __slots__ = ("handler", "help", "name", "options", "quick")

    def __init__(
        self,
        name: str,
        help: str,
        options: Callable[[argparse.ArgumentParser], None] | None,
        handler: str,
        quick: str | None = None,
    ) -> None:
        self.name = name
        self.help = help
        self.options = options
        self.handler = handler
        self.quick = quick

    def __repr__(self) -> str:
        return f"Command({self.name!r}, handler={self.handler!r})"


def load_handler(command: Command) -> Handler:
    """The command's handler, its module imported now."""
    module, _, function = command.handler.partition(":")
    handler: Handler = getattr(importlib.import_module(module), function)
    return handler


def load_quick(command: Command) -> QuickHandler | None:
    """The command's quick path (see `Command`), its module imported now; ``None``: none."""
    if command.quick is None:
        return None
    module, _, function = command.quick.partition(":")
    quick: QuickHandler = getattr(importlib.import_module(module), function)
    return quick


_PERIOD = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_period(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w``, ``45s`` (or their sums, ``1d12h``) as a timedelta.

    A period reaching back before the year 1 (the calendar's start) is refused here, as a
    usage error, rather than overflowing in the command.
    """
    from datetime import UTC, datetime, timedelta  # here: only prune reads a period

    parts = _PERIOD.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a period: a number and a unit (s, m, h, d, w), e.g. 30d"
        )
    reach = datetime.now(UTC) - datetime.min.replace(tzinfo=UTC)
    try:
        period = sum((timedelta(**{_UNITS[u]: int(n)}) for n, u in parts), timedelta())
    except OverflowError:  # beyond timedelta's range (a billion days)
        period = timedelta.max
    if period > reach:
        raise argparse.ArgumentTypeError(
            f"{text!r} reaches back before the year 1: give at most {reach.days:,}d"
        )
    return period


def port(text: str) -> int:
    """A TCP port number, 0 to 65535 (0: any free port)."""
    if not text.isascii() or not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: a number from 0 to 65535")
    return int(text)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line (what was wrong, where to read more)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def _connection_options() -> _Parser:
    options = _Parser(add_help=False)
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


def _flag(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """An on/off option: absent, False; given, True."""
    parser.add_argument(name, action="store_true", help=help)


def _migrate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revision", default="head", help="target revision (default: head)")


def _partition_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--modulus", type=int, required=True, metavar="N", help="how many partitions per table"
    )


def _list_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", help="only this tenant's conversations")
    parser.add_argument("--limit", type=int, default=50, help="how many per page (default 50)")
    parser.add_argument("--cursor", help="start after this cursor (printed under a full page)")


def _show_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="conversation id")
    parser.add_argument("--tenant", help="the conversation's tenant")
    parser.add_argument("--head", type=int, metavar="SEQ", help=_HEAD_HELP)
    _flag(
        parser,
        "--json",
        "print the whole conversation as a JSON document ('import --format convstore' "
        "reads it back)",
    )


def _import_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file",
        help="JSON file holding the payload ('-' for stdin); for an export, its file, "
        "directory or .zip",
    )
    parser.add_argument(
        "--format",
        choices=sorted({*PAYLOAD_FORMATS, *EXPORT_FORMATS}),
        help="what FILE is (default: detected from its contents, and said on stderr): a "
        "payload's wire format, 'convstore' (a 'show --json' document or a convstore export) "
        "or an export: chatgpt-export, claude-export, openwebui-export",
    )
    parser.add_argument("--title", help="title of the new conversation")
    parser.add_argument("--tenant", help="tenant of the new conversation(s)")
    _flag(
        parser,
        "--strict",
        "an export: stop at the first conversation that cannot be imported (default: "
        "report it and import the rest)",
    )


def _render_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="conversation id")
    parser.add_argument("--to", required=True, choices=list(RENDER_TARGETS), help="render target")
    parser.add_argument("--model", help="the model the request is for")
    parser.add_argument("--tenant", help="the conversation's tenant")
    parser.add_argument(
        "--reasoning",
        choices=REASONING_POLICIES,
        default="drop",
        help="reasoning the target cannot accept back: drop it or send it as text",
    )
    _flag(
        parser,
        "--diagnostics",
        "print one JSON document with the payload and the diagnostics record (every "
        "repair and projection)",
    )
    parser.add_argument(
        "--last",
        type=int,
        metavar="N",
        help="render a window of the newest N messages (system prompt kept, no result "
        "without its call)",
    )
    parser.add_argument("--head", type=int, metavar="SEQ", help=_HEAD_HELP)
    parser.add_argument(
        "--tools",
        metavar="FILE",
        help="JSON file with tool definitions to send: a list of {name, description, "
        "parameters, strict} (default: the tools imported with the conversation)",
    )


def _gc_options(parser: argparse.ArgumentParser) -> None:
    _flag(parser, "--dry-run", "list what would be deleted")
    parser.add_argument(
        "--grace",
        type=float,
        default=3600,
        metavar="SECONDS",
        help="keep unreferenced blobs younger than this (default 3600: in-flight appends "
        "store blobs before their rows)",
    )
    parser.add_argument(
        "--watch",
        type=float,
        metavar="INTERVAL",
        help="collect again every INTERVAL seconds, beside running writers, until interrupted "
        "(a summary line per run)",
    )


def _blobs_options(parser: argparse.ArgumentParser) -> None:
    blobs_sub = parser.add_subparsers(dest="blobs_command", required=True, metavar="ACTION")
    shared = _connection_options()
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


def _listen_options(
    parser: argparse.ArgumentParser, *, default_port: int, prefix: str = ""
) -> None:
    """``--host`` and ``--port`` of a server (``serve``, ``mcp``): loopback unless told."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"{prefix}address to listen on (default %(default)s; any other than loopback needs "
        "--token)",
    )
    parser.add_argument(
        "--port",
        type=port,
        default=default_port,
        help=f"{prefix}port (default %(default)s; 0: any free)",
    )


def _serve_options(parser: argparse.ArgumentParser) -> None:
    _listen_options(parser, default_port=8765)
    parser.add_argument("--tenant", help="show only this tenant's conversations and attachments")
    parser.add_argument(
        "--token",
        default=os.environ.get("CONVSTORE_TOKEN") or None,
        help="require this token on every request (env CONVSTORE_TOKEN); open the page once "
        "with ?token=... or send 'Authorization: Bearer ...'",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header names NAME (repeatable; loopback names "
        "and the --host address are always allowed)",
    )
    _flag(parser, "--quiet", "no access log line per request on stderr")


def _mcp_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", help="serve only this tenant's conversations")
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default: an MCP client starts the command) or http (Streamable HTTP at /mcp)",
    )
    _listen_options(parser, default_port=8766, prefix="http: ")
    parser.add_argument(
        "--token",
        default=os.environ.get("CONVSTORE_TOKEN") or None,
        help="http: require 'Authorization: Bearer TOKEN' on every request (env CONVSTORE_TOKEN)",
    )


def _search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "query",
        help='words, "phrases" and -excluded terms (each found as a substring); a query '
        "may begin with '-'",
    )
    parser.add_argument("--tenant", help="only this tenant's conversations")
    parser.add_argument("--conversation", metavar="ID", help="only this conversation")
    parser.add_argument("--limit", type=int, default=20, help="how many hits (default 20)")
    parser.add_argument("--cursor", help="the next page (printed under a full page)")
    _flag(parser, "--thinking", "search the models' thinking text too")
    _flag(parser, "--json", "print the hits as JSON")


def _export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="OUT.zip", help="the zip to write")
    parser.add_argument("--tenant", help="only this tenant's conversations")
    parser.add_argument(
        "--conversation",
        action="append",
        metavar="ID",
        help="only this conversation (repeat for more)",
    )


def _erase_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenant", required=True, help="the tenant to erase")
    _flag(parser, "--now", "delete the blobs only this tenant referenced now, not at the next gc")
    _flag(
        parser, "--dry-run", "say what would be erased (conversations, messages) and erase nothing"
    )
    _flag(parser, "--yes", "erase without asking (required when stdin is not a terminal)")
    _flag(
        parser,
        "--compact",
        "then rewrite the database so the erased rows leave its files (SQLite VACUUM, "
        "PostgreSQL VACUUM FULL: each table is locked while it is rewritten)",
    )


def _prune_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--older-than",
        required=True,
        type=parse_period,
        metavar="PERIOD",
        help="delete conversations not written for this long (30d, 12h, 2w, ...)",
    )
    parser.add_argument("--tenant", help="only this tenant's conversations")
    _flag(parser, "--dry-run", "count what would be deleted, delete nothing")


COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "demo",
        "store a sample conversation on the embedded default and show it",
        None,
        "convstore.cli.commands:demo",
    ),
    Command(
        "migrate",
        "upgrade the database schema (creates it in an empty database)",
        _migrate_options,
        "convstore.cli.commands:migrate",
    ),
    Command(
        "partition",
        "hash-partition the per-conversation tables of a PostgreSQL database by conversation "
        "id, in place (docs/scaling.md); run again with the same modulus, it does nothing",
        _partition_options,
        "convstore.cli.commands:partition",
    ),
    Command(
        "list",
        "list conversations, newest first, a page at a time",
        _list_options,
        "convstore.cli.reading:list_conversations",
    ),
    Command(
        "show",
        "show one conversation: messages, parts, tool calls, attachments",
        _show_options,
        "convstore.cli.reading:show",
    ),
    Command(
        "import",
        "import a provider request payload (its messages, tools and model), a 'show --json' "
        "document, or another product's export (every conversation of it); the format is "
        "detected unless --format names it",
        _import_options,
        "convstore.cli.commands:import_payload",
    ),
    Command(
        "render",
        "render a stored conversation as a provider request",
        _render_options,
        "convstore.cli.commands:render",
    ),
    Command(
        "gc",
        "delete blobs no conversation references (older than a grace period)",
        _gc_options,
        "convstore.cli.commands:gc",
    ),
    Command(
        "fsck",
        "check every referenced blob exists and matches its hash (exit 1 if not)",
        None,
        "convstore.cli.commands:fsck_command",
    ),
    Command(
        "blobs",
        "where the attachments live: show or re-record the location",
        _blobs_options,
        "convstore.cli.commands:blobs_command",
    ),
    Command(
        "serve",
        "serve the read-only web inspector (convstore[web])",
        _serve_options,
        "convstore.cli.serve:serve",
    ),
    Command(
        "mcp",
        "serve past conversations to MCP clients (agents, desktop apps), read-only "
        "(convstore[mcp])",
        _mcp_options,
        "convstore.cli.mcp_command:mcp_command",
    ),
    Command(
        "search",
        "find messages and conversation titles by their text",
        _search_options,
        "convstore.cli.search:search",
        quick="convstore.cli.search:quick_search",
    ),
    Command(
        "export",
        "write conversations (all of a tenant's, or named ones), their attachments and a "
        "manifest to a zip; 'import OUT.zip --format convstore' restores it exactly",
        _export_options,
        "convstore.cli.data:export",
    ),
    Command(
        "erase",
        "delete every conversation of a tenant (one transaction) and, at the next gc or "
        "with --now, the blobs only it referenced; asks first on a terminal, --dry-run says "
        "what would go",
        _erase_options,
        "convstore.cli.data:erase",
    ),
    Command(
        "prune",
        "delete conversations not written for a period, in short batches, beside running writers",
        _prune_options,
        "convstore.cli.data:prune",
    ),
)


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one command alone (its own options and the shared ones)."""
    command = next(c for c in COMMANDS if c.name == name)
    parser = _Parser(prog=f"convstore {name}", parents=[_connection_options()])
    if command.options is not None:
        command.options(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every command."""
    shared = _connection_options()
    parser = _Parser(
        prog="convstore",
        description="A provider-neutral conversation store: inspect, migrate, import, render.",
        epilog="Errors are one line on stderr (exit status 1; 2 for a usage error); set "
        "CONVSTORE_DEBUG=1 to see the traceback of an unexpected one.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        child = sub.add_parser(
            command.name, parents=[shared], help=command.help, description=command.help
        )
        if command.options is not None:
            command.options(child)
    return parser
