"""Metadata filters as index ranges: one tag row per top-level metadata entry.

``list_conversations(metadata={"project": "p7", "user": "u3"})`` lists the conversations whose
metadata holds each of those entries. Every entry of a conversation's metadata is stored as a
``conversation_tags`` row whose tag digests the key and the value, written in the same
transaction as the conversation's header (create, get-or-create, metadata update, fork). A
filter computes the same digests and reads one tag's rows newest first, checking the others
by primary key, so it costs what the page costs, not what the table holds.

Invariants:

- Values compare as JSON values: strings, booleans, null, objects (whatever their key order)
  and arrays exactly; numbers by value (``1`` and ``1.0`` are equal), but ``true`` is not
  ``1``. Only top-level keys are filtered on; a nested value matches as a whole.
- A tag is the first 128 bits of SHA-256 over the canonical JSON of ``[key, value]``: fixed
  size in every index, whatever the value holds. (A collision would need 2^64 distinct
  entries.)
- The digest is part of the stored data: migration ``0004`` wrote it for existing rows with
  the same rule, so changing it needs a migration that rewrites the tags.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from convstore.db.tx import Tx

__all__ = ["replace_tags", "tag", "tags_of", "write_tags"]

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


def tag(key: str, value: Any) -> str:
    """The tag of the metadata entry ``key: value``."""
    text = json.dumps(
        [key, _canonical(value)], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def tags_of(metadata: Mapping[str, Any] | None) -> list[str]:
    """The tags of every top-level entry of ``metadata``."""
    return [tag(key, value) for key, value in (metadata or {}).items()]


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
