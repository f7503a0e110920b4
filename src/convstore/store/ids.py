"""Identifiers the store mints.

Invariants:

- Conversation ids are 26 characters of Crockford base32: 48 bits of milliseconds since the
  epoch, then 80 random bits (the ULID layout). They sort by creation time, which keeps
  B-tree inserts local on server databases, and are unguessable.
"""

from __future__ import annotations

import secrets
import time

__all__ = ["new_id"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id() -> str:
    """A new, time-ordered, random identifier."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))
