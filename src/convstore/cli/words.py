"""Counts in plain English for the command line's reports: ``1 message``, ``2 messages``."""

from __future__ import annotations

__all__ = ["plural"]

_IRREGULAR = {"entry": "entries", "reply": "replies", "summary": "summaries"}


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one."""
    if count == 1:
        return f"1 {noun}"
    many = _IRREGULAR.get(noun) or (noun + "es" if noun.endswith(("s", "x", "ch")) else noun + "s")
    return f"{count:,} {many}"
