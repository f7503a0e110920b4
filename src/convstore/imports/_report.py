"""What an import did: counts by kind, and what it could not do."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from convstore._words import listing, plural
from convstore.progress import Progress

__all__ = ["ImportReport", "Progress"]


@dataclass(slots=True)
class ImportReport:
    """Counts by kind (``"conversation"``, ``"message"``, ``"attachment"``, ...).

    ``imported`` were written; ``present`` were already stored (a re-import) and left as they
    were; ``unmapped`` are things of the export the importer kept only as a note or a
    placeholder (by kind, e.g. ``"content_type:tether_quote"``); ``errors`` name each
    conversation that was not written and why (the rest of the file was imported).
    """

    format: str
    imported: Counter[str] = field(default_factory=Counter)
    present: Counter[str] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """What the import did, in sentences (one a line); nothing said of an empty count."""
        lines = []
        imported, present = _counts(self.imported), _counts(self.present)
        if imported:
            lines.append(f"imported {imported}")
        if present:
            lines.append(f"already present (left as they were): {present}")
        if not imported and not present and not self.errors:
            lines.append("nothing to import: the export holds no conversations")
        unmapped = +self.unmapped
        if unmapped:
            kinds = ", ".join(f"{k} ({n:,})" for k, n in sorted(unmapped.items()))
            lines.append(
                f"kept as notes: {plural(sum(unmapped.values()), 'item')} convstore has no "
                f"part for: {kinds}"
            )
        if self.errors:
            lines.append(f"not imported: {plural(len(self.errors), 'conversation')}:")
            lines.extend(f"  {e}" for e in self.errors)
        return "\n".join(lines)


_KINDS: Final = ("conversation", "message", "attachment")
"""The kinds every format counts, in the order a report names them (others follow by name)."""


def _counts(counter: Counter[str]) -> str:
    """``1 conversation, 3 messages and 2 attachments`` (a kind at zero left out)."""
    order = [*_KINDS, *sorted(k for k in counter if k not in _KINDS)]
    return listing([plural(counter[k], k.replace("_", " ")) for k in order if counter[k] > 0])
