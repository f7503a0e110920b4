"""Opening the store a command works on, and what a command says about where it is.

Invariant: imports only the store's connection and the database URL helpers, so a reading
command (``search``, ``list``, ``show``) pays for opening a store and nothing else: the
append pipeline, the renderers and the importers load only in the commands that use them.
The store itself loads when a store is opened, not with this module: ``search``'s read-only
path (`convstore.cli.search`) uses `location_notice` without it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from convstore import db  # its names load on first use, not with this module
from convstore.errors import DatabaseNotFoundError, InvalidInputError

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = [
    "existing_store",
    "location_notice",
    "masked_url",
    "open_store",
    "recorded_location_notice",
]


def open_store(args: argparse.Namespace) -> ConversationStore:
    """The store at ``--url`` with ``--blobs`` (a new SQLite database is created)."""
    from convstore.store import ConversationStore

    return ConversationStore(args.url, blobs=args.blobs)


def existing_store(args: argparse.Namespace) -> ConversationStore:
    """A store on a database that must already exist: reading commands never create one.

    A mistyped ``--url`` would otherwise create an empty SQLite file, migrate it and report an
    empty, successful listing.
    """
    path = db.sqlite_path(args.url)
    if path is not None and not path.exists():
        raise DatabaseNotFoundError(str(path))
    return open_store(args)


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for anything printed)."""
    try:
        return db.parse_url(url).render_as_string(hide_password=True)
    except InvalidInputError:
        return "<an unparsable URL>"


async def recorded_location_notice(args: argparse.Namespace) -> str | None:
    """What to say when ``--blobs`` is given and the recorded location no longer exists."""
    path = db.sqlite_path(args.url)
    if path is not None and not path.exists():
        return None
    import asyncio

    from convstore.store import ConversationStore

    # memory:// blobs: reading the recorded location must not record one.
    async with ConversationStore(args.url, blobs="memory://convstore-cli-notice") as store:
        recorded = store.recorded_blobs_url
    if recorded is None or "://" in recorded or await asyncio.to_thread(Path(recorded).exists):
        return None
    return _notice(recorded, args)


def location_notice(recorded: str | None, args: argparse.Namespace) -> str | None:
    """What to say when ``--blobs`` is given and ``recorded`` (resolved) does not exist.

    Blocking (a file system check): for the event loop, `recorded_location_notice`.
    """
    if recorded is None or "://" in recorded or Path(recorded).exists():
        return None
    return _notice(recorded, args)


def _notice(recorded: str, args: argparse.Namespace) -> str:
    return (
        f"the blob location recorded in the database ({recorded}) does not exist (moved?); "
        f"using --blobs {args.blobs}. To record it for every later command, run: "
        f"convstore blobs set {args.blobs} --url {masked_url(args.url)}"
    )
