"""The ``convstore`` command: thin commands over the public API.

Invariants:

- Every command takes ``--url`` and ``--blobs`` (defaults: ``CONVSTORE_URL`` /
  ``CONVSTORE_BLOBS``, then the embedded SQLite default) and has ``--help``.
- No logic of its own: each command calls the library and formats what comes back.
- Lazy: the parser (`convstore.cli.parser`) is the standard library only; a command's handler
  module, and with it the library, is imported when that command runs. A command with a quick
  path (``search`` on an SQLite file) tries it first, before asyncio and the store load.
- One error policy: a failure is one line on stderr naming what was wrong (and, where the
  library knows, what to do), exit status 1; a usage error exits 2 (argparse). No traceback
  unless ``CONVSTORE_DEBUG=1``. A reader that closes stdout early (``convstore show ID |
  head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from convstore.cli.parser import COMMANDS, build_parser, command_parser, load_handler, load_quick
from convstore.errors import ConvstoreError

TYPE_CHECKING = False  # not typing's: see convstore.cli.parser
if TYPE_CHECKING:
    from collections.abc import Sequence

    from convstore.cli.parser import Handler

__all__ = ["build_parser", "main"]

_USERINFO_PASSWORD = re.compile(r"://[^/@:]*:([^/@]+)@")


def _without_password(text: str, url: str) -> str:
    """``text`` with the database password, however it is spelled in ``url``, masked."""
    from urllib.parse import quote  # only on the error path

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

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


def _option_arity(command: str) -> dict[str, int]:
    """Each option string of ``command`` and how many values it takes (0 or 1)."""
    return {
        option: 0 if action.nargs == 0 else 1
        for action in command_parser(command)._actions
        for option in action.option_strings
    }


def _dash_query_as_positional(argv: list[str]) -> list[str]:
    """``argv`` with a ``search`` query that begins with ``-`` moved behind a ``--``.

    argparse takes ``-draft`` (or ``-hello world``: ``-h`` plus text) for an option; the
    query is the first token after ``search`` that is no option of it (nor an option's value).
    """
    command_at = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if command_at is None or argv[command_at] != "search" or "--" in argv:
        return argv
    arity = _option_arity("search")
    at = command_at + 1
    while at < len(argv):
        word = argv[at]
        if word == "-" or not word.startswith("-"):
            return argv  # an ordinary query: argparse reads it
        name, has_value, _ = word.partition("=")
        known = [o for o in arity if o == name or (name.startswith("--") and o.startswith(name))]
        if len(known) == 1:
            at += 1 if has_value else 1 + arity[known[0]]
            continue
        return [*argv[:at], *argv[at + 1 :], "--", word]
    return argv


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: its reader left, and the exit's flush must not fail too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # a replaced stdout (tests) has no fd
        pass


def _fail(message: str) -> int:
    print(f"convstore: {' '.join(message.split())}", file=sys.stderr)
    if os.environ.get("CONVSTORE_DEBUG") == "1":
        import traceback

        traceback.print_exc()
    return 1


def _run(handler: Handler, args: argparse.Namespace) -> int:
    import asyncio  # here, not at the top: --help and usage errors do without it

    if args.blobs is not None and args.command not in ("blobs", "demo", "migrate"):
        from convstore.cli.stores import recorded_location_notice

        notice = asyncio.run(recorded_location_notice(args))
        if notice is not None:
            print(f"convstore: {notice}", file=sys.stderr)
    return asyncio.run(handler(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(_dash_query_as_positional(arguments))
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        quick = load_quick(command)
        if quick is not None and (status := quick(args)) is not None:
            return status
        return _run(load_handler(command), args)
    except ConvstoreError as exc:
        return _fail(f"{type(exc).__name__}: {_without_password(str(exc), args.url)}")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except OSError as exc:  # a file, a port: what the operating system refused, as it said it
        return _fail(_without_password(f"{exc}; check the path, permissions or port", args.url))
    except Exception as exc:  # a bug: say so in one line; the traceback on request
        return _fail(
            f"unexpected {type(exc).__name__}: {_without_password(str(exc), args.url)} "
            "(a bug in convstore: run again with CONVSTORE_DEBUG=1 for the traceback, and "
            "report it)"
        )
