"""What an import did: counts by kind, and what it could not do."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

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
        """One line per count, for people."""

        def counts(c: Counter[str]) -> str:
            return ", ".join(f"{n:,} {k}" for k, n in sorted((+c).items())) or "nothing"

        lines = [
            f"imported ({self.format}): {counts(self.imported)}",
            f"already present: {counts(self.present)}",
        ]
        if self.unmapped:
            lines.append(f"kept as notes (unmapped): {counts(self.unmapped)}")
        lines.extend(f"error: {e}" for e in self.errors)
        return "\n".join(lines)
