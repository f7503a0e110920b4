"""Store-wide settings kept in the database: where the blobs live.

Invariants:

- The blob location is recorded once, by the first store that opens the database with a
  durable location (a directory, ``file://``, ``s3://``, ``gs://``; never ``memory://``). A
  local directory beside or under the SQLite file's directory is recorded *relative to that
  directory* (``convstore-blobs``), so moving the project (``mv project elsewhere``) keeps its
  attachments; any other directory as an absolute path; a URL unchanged. A store opened
  without ``blobs=`` uses the recorded location, so maintenance commands run from any directory
  reach the same blobs; ``blobs=`` always wins. ``convstore blobs set URL`` re-records it
  (`replace`), after checking that the new location holds the referenced blobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not at run time: ``convstore search``'s read-only path resolves with it
    from convstore.db.tx import Tx

__all__ = [
    "BLOBS_KEY",
    "absolute",
    "blob_location",
    "record",
    "recordable",
    "replace",
    "resolve",
    "to_record",
]

BLOBS_KEY = "blobs"


def recordable(url: str) -> bool:
    """Whether a blob location outlives the process (``memory://`` does not)."""
    return not url.startswith("memory://")


def absolute(url: str) -> str:
    """A local directory as an absolute path; URLs with a scheme unchanged."""
    if "://" in url and not url.startswith("file://"):
        return url
    return str(Path(url.removeprefix("file://")).resolve())


def to_record(url: str, database: Path | None) -> str:
    """What to record for ``url``: relative to ``database``'s directory when beside or under it.

    ``database`` is the SQLite file (``None`` for a server database: always absolute).
    """
    location = absolute(url)
    if database is None or "://" in location:
        return location
    try:
        return Path(location).relative_to(database.resolve().parent).as_posix()
    except ValueError:
        return location


def resolve(recorded: str, database: Path | None) -> str:
    """A recorded location as a usable one (a relative one is taken from ``database``'s dir)."""
    if database is None or "://" in recorded or Path(recorded).is_absolute():
        return recorded
    return str(database.resolve().parent / recorded)


def blob_location(tx: Tx) -> str | None:
    """The recorded blob location (as recorded: maybe relative), if any."""
    rows = tx.fetch(tx.statements.select_setting, {"key": BLOBS_KEY})
    if not rows:
        return None
    ((value,),) = rows  # the key is the primary key
    return str(value)


def record(tx: Tx, url: str) -> str:
    """Record ``url`` unless a location is recorded already; the recorded one."""
    tx.insert_rows(tx.statements.insert_setting_if_absent, [(BLOBS_KEY, url)])
    recorded = blob_location(tx)
    assert recorded is not None  # inserted, or there already
    return recorded


def replace(tx: Tx, url: str) -> None:
    """Record ``url`` in place of whatever was recorded."""
    tx.execute(tx.statements.delete_setting, {"key": BLOBS_KEY})
    tx.insert_rows(tx.statements.insert_setting_if_absent, [(BLOBS_KEY, url)])
