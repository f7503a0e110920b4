"""Metadata filters as index ranges: one tag row per top-level metadata entry.

``list_conversations(metadata={"project": "p7", "user": "u3"})`` lists the conversations whose
metadata holds each of those entries. Every entry of a conversation's metadata is stored as a
``conversation_tags`` row whose tag digests the key and the value, and so is every *pair* of
entries, written in the same transaction as the conversation's header (create, get-or-create,
metadata update, fork). A filter computes the same digests and reads one tag's rows newest
first (its one entry's, or its first two entries' pair), checking any further entries by
primary key: a page of one- or two-entry matches costs what the page costs, however rare the
pair and however large the table. (Walking one entry's rows and checking the other instead
reads ``page / P(other | first)`` rows: about 2,000 for a 1-in-10,000 pair at a million
conversations.)

Invariants:

- Values compare as JSON values: strings, booleans, null, objects (whatever their key order)
  and arrays exactly; numbers by value (``1`` and ``1.0`` are equal), but ``true`` is not
  ``1``. Only top-level keys are filtered on; a nested value matches as a whole.
- A tag is the first 128 bits of SHA-256 over the canonical JSON of ``[key, value]``: fixed
  size in every index, whatever the value holds. (A collision would need 2^64 distinct
  entries.)
- Pairs are indexed for conversations with at most `PAIRED_ENTRIES` entries (their number
  grows with its square); a wider conversation holds the `WIDE` tag instead, and a filter of
  two or more entries also walks the wide conversations, checking every entry. A conversation
  is found through exactly one of the two.
- The digests are part of the stored data: migrations ``0004`` (entries) and ``0009`` (pairs,
  `WIDE`) wrote them for existing rows with the same rules, so changing them needs a migration
  that rewrites the tags.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from convstore.db.tx import Tx

__all__ = [
    "PAIRED_ENTRIES",
    "WIDE",
    "FilterTags",
    "filter_tags",
    "pair_tag",
    "replace_tags",
    "tag",
    "tags_of",
    "write_tags",
]

_EXACT_INTEGERS = 2**53
"""Beyond this, floats are not whole numbers in JSON's common reading: kept as floats."""


def _canonical(value: Any) -> Any:
    """``value`` with integral floats as integers, so numbers compare by value."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INTEGERS:
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


PAIRED_ENTRIES: Final = 8
"""Conversations with at most this many metadata entries get a tag per pair (up to 28)."""


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


WIDE: Final = _digest(["*"])
"""The tag of a conversation with more than `PAIRED_ENTRIES` entries (no pair tags).

One element, where an entry's document has two and its first a string, and a pair's has two
lists: no entry or pair digests the same document."""


def tag(key: str, value: Any) -> str:
    """The tag of the metadata entry ``key: value``."""
    return _digest([key, _canonical(value)])


def pair_tag(first: tuple[str, Any], second: tuple[str, Any]) -> str:
    """The tag of a conversation holding both entries (in either order)."""
    a, b = sorted((first[0], second[0]))
    values = {first[0]: first[1], second[0]: second[1]}
    return _digest([[a, _canonical(values[a])], [b, _canonical(values[b])]])


def tags_of(metadata: Mapping[str, Any] | None) -> list[str]:
    """Every tag a conversation with ``metadata`` holds.

    Its entries' tags, then its pairs' (or `WIDE`).
    """
    entries = list((metadata or {}).items())
    tags = [tag(key, value) for key, value in entries]
    if len(entries) > PAIRED_ENTRIES:
        return [*tags, WIDE]
    return tags + [pair_tag(a, b) for a, b in itertools.combinations(entries, 2)]


@dataclass(frozen=True, slots=True)
class FilterTags:
    """What a metadata filter walks and checks (`statements.conversations.list_page`)."""

    entries: list[str]
    """Each entry's tag, in the filter's order."""
    pair: str | None
    """The first two entries' pair tag (``None`` for a filter of fewer than two entries)."""


def filter_tags(metadata: Mapping[str, Any] | None) -> FilterTags:
    """The tags a filter on ``metadata``'s entries needs."""
    entries = list((metadata or {}).items())
    pair = pair_tag(entries[0], entries[1]) if len(entries) >= 2 else None
    return FilterTags([tag(key, value) for key, value in entries], pair)


def write_tags(
    tx: Tx, cid: str, tenant: str | None, created: Any, metadata: Mapping[str, Any] | None
) -> None:
    """Index a new conversation's metadata (``created``: its creation time as bound)."""
    rows = [(cid, t, tenant, created) for t in sorted(set(tags_of(metadata)))]
    tx.insert_rows(tx.statements.insert_conversation_tags, rows)


def replace_tags(
    tx: Tx, cid: str, tenant: str | None, created: Any, metadata: Mapping[str, Any] | None
) -> None:
    """Index a conversation's new metadata in place of its old."""
    tx.execute(tx.statements.delete_conversation_tags, {"cid": cid})
    write_tags(tx, cid, tenant, created, metadata)
