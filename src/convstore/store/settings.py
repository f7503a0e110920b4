"""Store-wide settings kept in the database: where the blobs live.

Invariants:

- The blob location is recorded once, by the first store that opens the database with a
  durable location (a directory, ``file://``, ``s3://``, ``gs://``; never ``memory://``), as an
  absolute path or URL. A store opened without ``blobs=`` uses it, so maintenance commands run
  from any directory reach the same blobs; ``blobs=`` always wins.
"""

from __future__ import annotations

from pathlib import Path

from convstore.db.tx import Tx

__all__ = ["BLOBS_KEY", "absolute", "blob_location", "record", "recordable"]

BLOBS_KEY = "blobs"


def recordable(url: str) -> bool:
    """Whether a blob location outlives the process (``memory://`` does not)."""
    return not url.startswith("memory://")


def absolute(url: str) -> str:
    """A local directory as an absolute path; URLs with a scheme unchanged."""
    if "://" in url and not url.startswith("file://"):
        return url
    return str(Path(url.removeprefix("file://")).resolve())


def blob_location(tx: Tx) -> str | None:
    """The recorded blob location, if any."""
    rows = tx.fetch(tx.statements.select_setting, {"key": BLOBS_KEY})
    return str(rows[0][0]) if rows else None


def record(tx: Tx, url: str) -> str:
    """Record ``url`` unless a location is recorded already; the recorded one."""
    tx.insert_rows(tx.statements.insert_setting_if_absent, [(BLOBS_KEY, url)])
    recorded = blob_location(tx)
    assert recorded is not None  # inserted, or there already
    return recorded
