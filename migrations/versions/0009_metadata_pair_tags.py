"""Metadata pair tags: a two-entry filter is one index range.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26

Every conversation with at most 8 metadata entries gets a ``conversation_tags`` row per pair
of entries (a digest of both); a wider one gets one ``WIDE`` row instead. A filter on two or
more entries then walks its first two entries' pair tag (and the wide conversations) instead
of one entry's tag checked against the other, which read ``page / P(other | first)`` rows
(about 2,000 for a 1-in-10,000 pair at a million conversations). No schema change: the rows
go into 0004's table and indexes.

The downgrade deletes exactly those rows; the entry tags of 0004 are left as they were.
"""

import hashlib
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from convstore.db.types import UTCDateTime

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 1000
_PAIRED_ENTRIES = 8


# The tag rules as this revision wrote them; the store computes the same (the module
# convstore.store.metadata_tags). Kept here, not imported, so this revision keeps doing what it
# did whatever later code does.
def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _digest(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _added_tags(meta: dict[str, Any]) -> list[str]:
    """The pair tags of ``meta``, or the wide tag."""
    if len(meta) > _PAIRED_ENTRIES:
        return [_digest(["*"])]
    return [
        _digest([[a, _canonical(meta[a])], [b, _canonical(meta[b])]])
        for a, b in itertools.combinations(sorted(meta), 2)
    ]


_conversations = sa.table(
    "conversations",
    sa.column("id", sa.String()),
    sa.column("tenant", sa.String()),
    sa.column("metadata", sa.JSON()),
    sa.column("created_at", UTCDateTime()),
)
_tags = sa.table(
    "conversation_tags",
    sa.column("conversation_id", sa.String()),
    sa.column("tag", sa.String()),
    sa.column("tenant", sa.String()),
    sa.column("created_at", UTCDateTime()),
)


def _rows() -> Iterator[dict[str, Any]]:
    """A row per added tag of every conversation, read by id in batches (bounded memory)."""
    bind = op.get_bind()
    c = _conversations.c
    query = sa.select(c.id, c.tenant, c.metadata, c.created_at).where(c.metadata.is_not(None))
    after = None
    while True:
        page = query if after is None else query.where(c.id > after)
        batch = bind.execute(page.order_by(c.id).limit(_BATCH)).all()
        if not batch:
            return
        for cid, tenant, stored, created in batch:
            # SQLite's JSON text where the dialect did not decode it.
            meta = json.loads(stored) if isinstance(stored, str) else stored
            if isinstance(meta, dict):
                for tag in sorted(set(_added_tags(meta))):
                    yield {
                        "conversation_id": cid,
                        "tag": tag,
                        "tenant": tenant,
                        "created_at": created,
                    }
        after = batch[-1][0]


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    while batch := list(itertools.islice(rows, _BATCH)):
        yield batch


def upgrade() -> None:
    bind = op.get_bind()
    for batch in _batches(_rows()):
        bind.execute(sa.insert(_tags), batch)


def downgrade() -> None:
    bind = op.get_bind()
    delete = sa.delete(_tags).where(
        _tags.c.conversation_id == sa.bindparam("cid"), _tags.c.tag == sa.bindparam("t")
    )
    for batch in _batches(_rows()):
        bind.execute(delete, [{"cid": r["conversation_id"], "t": r["tag"]} for r in batch])
