"""How much of an export one import may read and hold: `ImportLimits`, and the byte budget.

An export is a stranger's file. Nothing it says about itself (a zip header's sizes, a file's
length) is trusted: bytes are counted as they are read, and reading stops with
`ExportLimitError` (naming the member and the limit) the moment a count crosses its limit.

=====================  ===========  ==========================================================
limit                  default      what it bounds
=====================  ===========  ==========================================================
``conversation_size``  32 MiB       the estimated memory of one decoded conversation (see
                                    `convstore.imports._jsonstream`): its JSON text, plus a
                                    fixed cost per object, array, string and element
``member_bytes``       16 GiB       the bytes read from one file of the export (decompressed)
``total_bytes``        64 GiB       the bytes read from the whole export: conversation files
                                    and assets together (decompressed)
``zip_entries``        100,000      a zip's entries, counted in its central directory before
                                    the zip is opened (`convstore.zip_input`)
``zip_directory_                     a zip's central directory
bytes``                32 MiB
=====================  ===========  ==========================================================

An asset (an uploaded or generated file) is also held to the store's own attachment limit
(``max_attachment_size``): one over it is kept as a reference. At most two conversations are
held at once (one written while the next is read), so with the defaults an import's peak
memory stays under 300 MB whatever the export holds.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Final

from convstore.errors import ExportLimitError, InvalidInputError
from convstore.zip_input import MAX_DIRECTORY_BYTES, MAX_ENTRIES

__all__ = ["DEFAULT_LIMITS", "Budget", "ImportLimits"]

_MIB: Final = 1 << 20
_GIB: Final = 1 << 30


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """What one import may read; pass ``import_file(..., limits=ImportLimits(...))`` to change."""

    conversation_size: int = 32 * _MIB
    """Estimated bytes of memory one decoded conversation may take (its text counted once per
    character, four times when it is not ASCII, plus a fixed cost per JSON object, array,
    string and element)."""
    member_bytes: int = 16 * _GIB
    """Bytes read from one file of the export (after decompression)."""
    total_bytes: int = 64 * _GIB
    """Bytes read from the whole export (after decompression), assets included."""
    zip_entries: int = MAX_ENTRIES
    """Entries (files and folders) a zip export may hold, counted in its central directory
    before it is opened: each costs about 700 bytes of memory for as long as the import runs."""
    zip_directory_bytes: int = MAX_DIRECTORY_BYTES
    """Largest central directory of a zip export, in bytes."""

    def __post_init__(self) -> None:
        for name in (
            "conversation_size",
            "member_bytes",
            "total_bytes",
            "zip_entries",
            "zip_directory_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"ImportLimits.{name} must be a positive integer")


DEFAULT_LIMITS: Final = ImportLimits()


class Budget:
    """The bytes an import has read so far, against ``limits.total_bytes`` (thread-safe)."""

    def __init__(self, limits: ImportLimits) -> None:
        self.limits = limits
        self._used = 0
        self._lock = threading.Lock()

    def spend(self, count: int, member: str) -> None:
        """Count ``count`` more bytes read from ``member``; `ExportLimitError` past the limit."""
        with self._lock:
            self._used += count
            used = self._used
        if used > self.limits.total_bytes:
            raise ExportLimitError(
                f"the export holds more than {self.limits.total_bytes:,} bytes "
                "(ImportLimits.total_bytes)",
                position=member,
                limit="total_bytes",
            )
