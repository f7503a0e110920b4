"""Projecting canonical tool-call ids and tool names onto what a target accepts.

Invariants (within one render):

- Deterministic: the same calls, in the same order, project to the same wire ids.
- Injective: two different canonical ids never share a wire id, and two different tool names
  never share a wire name. A collision is resolved by a suffix, never by reusing.
- A call and its result always use the same projection (the result looks its call up).
- An id or name that already satisfies the target is kept as it is, so same-provider replays
  send the provider's own ids back: such ids are reserved before any other is fitted, so a
  fitted id never takes one that was valid as it stood.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable
from functools import cache

from convstore.capabilities import Capabilities, IdStyle

__all__ = ["IdProjector"]

_BASE62 = string.digits + string.ascii_letters

# Bound once: an enum member lookup goes through the enum's metaclass, once per call otherwise.
_FREE = IdStyle.FREE
_MISTRAL = IdStyle.MISTRAL


def _digest(text: str, salt: int = 0) -> bytes:
    return hashlib.sha256(f"{salt}:{text}".encode()).digest()


def _base62(data: bytes, length: int) -> str:
    number = int.from_bytes(data, "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        out.append(_BASE62[digit])
    return "".join(out)


@cache
def _invalid(charset: str) -> re.Pattern[str]:
    """Matches one character outside ``charset`` (a regex character class body)."""
    return re.compile(f"[^{charset}]")


def _starts_alpha(text: str) -> bool:
    first = text[0]
    return first == "_" or (first.isascii() and first.isalpha())


def _is_mistral_id(text: str) -> bool:
    """Mistral's tool-call id shape: exactly 9 ASCII letters and digits."""
    return len(text) == 9 and text.isascii() and text.isalnum()


def _fit(text: str, charset: str, max_length: int, must_start_alpha: bool) -> str:
    """``text`` with invalid characters replaced, shortened with a hash suffix if too long."""
    invalid = _invalid(charset)
    valid_chars = len(text) <= max_length and text and not invalid.search(text)
    if valid_chars and (not must_start_alpha or _starts_alpha(text)):
        return text  # already valid: the common case, without building a new string
    cleaned = invalid.sub("_", text) or "_"
    if must_start_alpha and not _starts_alpha(cleaned):
        cleaned = "_" + cleaned
    if len(cleaned) > max_length:
        suffix = "_" + _base62(_digest(text), 8)
        cleaned = cleaned[: max_length - len(suffix)] + suffix
    return cleaned


class IdProjector:
    """Wire ids and names for one render."""

    def __init__(self, capabilities: Capabilities) -> None:
        self._caps = capabilities
        self._style = capabilities.id_style
        self._ids: dict[str, str] = {}
        self._id_owner: dict[str, str] = {}
        self._fitted: dict[str, str] = {}  # canonical id -> fitted form, computed once
        self._names: dict[str, str] = {}
        self._name_owner: dict[str, str] = {}

    def reserve(self, call_ids: Iterable[str], names: Iterable[str]) -> None:
        """Claim every id and name that is valid for the target as it stands."""
        caps = self._caps
        if self._style is not IdStyle.KIMI:
            for call_id in call_ids:
                if self._valid_id(call_id):
                    self._id_owner.setdefault(call_id, call_id)
        for name in names:
            fitted = _fit(name, caps.name_charset, caps.name_max_length, caps.name_must_start_alpha)
            if fitted == name:
                self._name_owner.setdefault(name, name)

    def _valid_id(self, call_id: str) -> bool:
        if self._style is _MISTRAL:
            return _is_mistral_id(call_id)
        return self._fit_id(call_id) == call_id

    def _fit_id(self, call_id: str) -> str:
        fitted = self._fitted.get(call_id)
        if fitted is None:
            caps = self._caps
            fitted = self._fitted[call_id] = _fit(
                call_id, caps.id_charset, caps.id_max_length, False
            )
        return fitted

    @property
    def id_map(self) -> dict[str, str]:
        """Canonical id -> wire id, for every call projected so far."""
        return dict(self._ids)

    @property
    def name_map(self) -> dict[str, str]:
        """Canonical name -> wire name, for the names that had to change."""
        return {k: v for k, v in self._names.items() if k != v}

    def name(self, canonical: str) -> str:
        """The wire tool name."""
        known = self._names.get(canonical)
        if known is not None:
            return known
        caps = self._caps
        base = _fit(canonical, caps.name_charset, caps.name_max_length, caps.name_must_start_alpha)
        wire = self._unique(base, canonical, self._name_owner, caps.name_max_length)
        self._names[canonical] = wire
        return wire

    def call_id(self, canonical: str, wire_name: str) -> str:
        """The wire id for a new call (each canonical id is projected once per render)."""
        known = self._ids.get(canonical)
        if known is not None:
            return known
        style = self._style
        if style is _FREE:
            base = self._fit_id(canonical)
            wire = self._unique(base, canonical, self._id_owner, self._caps.id_max_length)
        elif style is _MISTRAL:
            wire = self._mistral(canonical)
        else:
            assert style is IdStyle.KIMI
            # The index counts every call of the transcript, in order, from zero.
            wire = f"functions.{wire_name}:{len(self._ids)}"
            self._id_owner[wire] = canonical
        self._ids[canonical] = wire
        return wire

    def _mistral(self, canonical: str) -> str:
        if _is_mistral_id(canonical):
            candidate = canonical
        else:
            candidate = _base62(_digest(canonical), 9)
        salt = 0
        while self._id_owner.get(candidate, canonical) != canonical:
            salt += 1
            candidate = _base62(_digest(canonical, salt), 9)
        self._id_owner[candidate] = canonical
        return candidate

    @staticmethod
    def _unique(base: str, canonical: str, owners: dict[str, str], max_length: int) -> str:
        candidate, n = base, 1
        while owners.get(candidate, canonical) != canonical:
            n += 1
            suffix = f"_{n}"
            candidate = base[: max_length - len(suffix)] + suffix
        owners[candidate] = canonical
        return candidate
