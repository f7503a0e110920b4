"""Counts in plain English for reports people read: ``1 message``, ``2 messages``."""

from __future__ import annotations

__all__ = ["listing", "plural"]

_IRREGULAR = {"entry": "entries", "reply": "replies", "summary": "summaries"}


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, the noun in the plural unless the count is one."""
    if count == 1:
        return f"1 {noun}"
    many = _IRREGULAR.get(noun) or (noun + "es" if noun.endswith(("s", "x", "ch")) else noun + "s")
    return f"{count:,} {many}"


def listing(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(words) > 1:
        return f"{', '.join(words[:-1])} and {words[-1]}"
    return words[0] if words else ""
