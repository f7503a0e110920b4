"""Opening an untrusted zip: its central directory bounded before `zipfile` reads it.

`zipfile.ZipFile` reads the whole central directory on open, one `ZipInfo` per entry (about
700 bytes each: 137 MB for 200,000 entries) after reading the directory into memory as one
string, whatever the entries are. A zip of a few megabytes can declare, or hold, millions of
empty entries. `open_zip` first reads the end-of-directory record (and its ZIP64 form) and
walks the directory itself, a header at a time in constant memory, counting entries; over
``max_entries`` or ``max_directory_bytes`` it refuses with `ExportLimitError` before
`zipfile` reads anything. The count is the directory's own, never the declared total alone
(which may understate it): the walk stops at the declared size or at the first record that is
not a directory header, whichever comes first, and `zipfile` then reports any damage itself.

What every reader of zips from outside uses: the importers (`convstore.imports`) and the
restore of an export (`convstore.store.transfer.restore`).
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import BinaryIO, Final

from convstore.errors import ExportLimitError

__all__ = ["MAX_DIRECTORY_BYTES", "MAX_ENTRIES", "directory_entries", "open_zip"]

MAX_ENTRIES: Final = 100_000
"""Default most entries (files and folders) in one zip's central directory (~70 MB opened)."""

MAX_DIRECTORY_BYTES: Final = 32 * 1024 * 1024
"""Default largest central directory, in bytes (read whole by `zipfile`)."""

_END: Final = b"PK\x05\x06"
_END_SIZE: Final = 22
_ZIP64_LOCATOR: Final = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE: Final = 20
_ZIP64_END: Final = b"PK\x06\x06"
_ENTRY: Final = b"PK\x01\x02"
_ENTRY_SIZE: Final = 46
_CHUNK: Final = 1024 * 1024


def open_zip(
    path: Path,
    *,
    max_entries: int = MAX_ENTRIES,
    max_directory_bytes: int = MAX_DIRECTORY_BYTES,
    owner: str = "ImportLimits",
) -> zipfile.ZipFile:
    """``path`` opened as a zip once its directory is within the limits.

    ``owner`` names the caller's settings in the error (``ImportLimits.zip_entries``,
    ``RestoreLimits.zip_directory_bytes``). Raises `ExportLimitError` (``limit`` is
    ``"zip_entries"`` or ``"zip_directory_bytes"``); `zipfile.BadZipFile` and `OSError` as
    `zipfile` does.
    """
    with path.open("rb") as raw:
        found = directory_entries(raw, max_entries=max_entries, max_bytes=max_directory_bytes)
    if found is not None:
        count, size = found
        if size > max_directory_bytes:
            raise ExportLimitError(
                f"the zip's central directory is {size:,} bytes, more than the"
                f" {max_directory_bytes:,} it may be ({owner}.zip_directory_bytes)",
                position=str(path),
                limit="zip_directory_bytes",
            )
        if count > max_entries:
            raise ExportLimitError(
                f"the zip holds more than {max_entries:,} entries ({owner}.zip_entries)",
                position=str(path),
                limit="zip_entries",
            )
    return zipfile.ZipFile(path)


def directory_entries(raw: BinaryIO, *, max_entries: int, max_bytes: int) -> tuple[int, int] | None:
    """(entries, directory bytes) of the zip in ``raw``, counting at most ``max_entries + 1``.

    ``None`` when no end-of-directory record is found (not a zip: `zipfile` says so). A
    declared directory over ``max_bytes`` is returned unread; a declared count over
    ``max_entries`` is returned as ``max_entries + 1`` unread.
    """
    raw.seek(0, 2)
    length = raw.tell()
    tail_start = max(0, length - (_END_SIZE + 0xFFFF))
    raw.seek(tail_start)
    tail = raw.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        return None
    end_offset = tail_start + at
    (_sig, _disk, _cd_disk, _here, declared, size, _offset, _comment) = struct.unpack(
        "<4s4H2LH", tail[at : at + _END_SIZE]
    )
    start = end_offset - size
    locator = at - _ZIP64_LOCATOR_SIZE
    if locator >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR:
        (zip64_offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        raw.seek(zip64_offset)
        record = raw.read(56)
        if len(record) == 56 and record[:4] == _ZIP64_END:
            declared, size = struct.unpack("<2Q", record[32:48])
            start = zip64_offset - size
    if size > max_bytes:
        return declared, size
    if declared > max_entries:
        return max_entries + 1, size
    return _count(raw, max(start, 0), size, max_entries), size


def _count(raw: BinaryIO, start: int, size: int, max_entries: int) -> int:
    """Directory headers in ``size`` bytes from ``start``, up to ``max_entries + 1``."""
    raw.seek(start)
    buffer = b""
    consumed = 0  # bytes of the directory before `buffer`
    position = 0  # the next header's offset in `buffer`
    count = 0
    while consumed + position + _ENTRY_SIZE <= size and count <= max_entries:
        if len(buffer) - position < _ENTRY_SIZE:
            consumed += position
            buffer = buffer[position:] + raw.read(_CHUNK)
            position = 0
            if len(buffer) < _ENTRY_SIZE:
                break
        if buffer[position : position + 4] != _ENTRY:
            break
        name, extra, comment = struct.unpack("<3H", buffer[position + 28 : position + 34])
        count += 1
        step = _ENTRY_SIZE + name + extra + comment
        skip = position + step - len(buffer)
        if skip > 0:  # the header's variable part runs past the buffer: seek over it
            consumed += len(buffer) + skip
            raw.seek(skip, 1)
            buffer, position = b"", 0
        else:
            position += step
    return count
