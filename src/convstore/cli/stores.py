"""Opening the store a command works on, and what a command says about where it is.

Invariant: imports only the store's connection and the database URL helpers, so a reading
command (``search``, ``list``, ``show``) pays for opening a store and nothing else: the
append pipeline, the renderers and the importers load only in the commands that use them.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from convstore.db import parse_url, sqlite_path
from convstore.errors import DatabaseNotFoundError, InvalidInputError
from convstore.store import ConversationStore

__all__ = ["existing_store", "masked_url", "open_store", "recorded_location_notice"]


def open_store(args: argparse.Namespace) -> ConversationStore:
    """The store at ``--url`` with ``--blobs`` (a new SQLite database is created)."""
    return ConversationStore(args.url, blobs=args.blobs)


def existing_store(args: argparse.Namespace) -> ConversationStore:
    """A store on a database that must already exist: reading commands never create one.

    A mistyped ``--url`` would otherwise create an empty SQLite file, migrate it and report an
    empty, successful listing.
    """
    path = sqlite_path(args.url)
    if path is not None and not path.exists():
        raise DatabaseNotFoundError(str(path))
    return open_store(args)


def masked_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for anything printed)."""
    try:
        return parse_url(url).render_as_string(hide_password=True)
    except InvalidInputError:
        return "<an unparsable URL>"


async def recorded_location_notice(args: argparse.Namespace) -> str | None:
    """What to say when ``--blobs`` is given and the recorded location no longer exists."""
    path = sqlite_path(args.url)
    if path is not None and not path.exists():
        return None
    # memory:// blobs: reading the recorded location must not record one.
    async with ConversationStore(args.url, blobs="memory://convstore-cli-notice") as store:
        recorded = store.recorded_blobs_url
    if recorded is None or "://" in recorded or await asyncio.to_thread(Path(recorded).exists):
        return None
    return (
        f"the blob location recorded in the database ({recorded}) does not exist (moved?); "
        f"using --blobs {args.blobs}. To record it for every later command, run: "
        f"convstore blobs set {args.blobs} --url {masked_url(args.url)}"
    )
