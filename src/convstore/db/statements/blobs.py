"""Statements on blob bookkeeping: references, the attachment catalogue, tombstones, releases.

Invariants:

- ``blob_refs`` says which message references which blob in which namespace: what garbage
  collection, fsck and tenant visibility ask. The bytes are never in the database.
- Catalogue rows are locked in digest order (`lock_attachments_exclusive`, and the order
  `catalogue_attachments` inserts in), the order appends lock them in, so a collector and an
  append never wait on each other in a cycle.
- A tombstone marks a blob garbage collection is deleting; ``deleted_at`` (the storage's clock)
  records when its bytes went. A release (`convstore.store.maintenance.released_blobs`) lets the
  next collection skip the grace period.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Delete,
    Insert,
    Select,
    Update,
    bindparam,
    delete,
    insert,
    literal,
    null,
    select,
    true,
    update,
)

from convstore.db.schema import (
    attachments,
    blob_refs,
    blob_tombstones,
    conversations,
    released_blobs,
)
from convstore.db.statements._common import Scoped, json_list, scoped, upsert_ignore

__all__ = [
    "DELETE_RELEASED",
    "DELETE_SETTLED_RELEASE",
    "FINISH_TOMBSTONE",
    "INSERT_RELEASED",
    "LOCK_ATTACHMENT_SHARED",
    "PURGE_TOMBSTONES",
    "SELECT_ATTACHMENT",
    "SELECT_ATTACHMENT_NAMESPACES",
    "SELECT_ATTACHMENT_VISIBLE",
    "SELECT_BLOB_NAMESPACES",
    "SELECT_BLOB_REFERENCED_IN",
    "SELECT_REFERENCED_BLOBS",
    "SELECT_RELEASED",
    "SELECT_TOMBSTONE",
    "catalogue_attachments",
    "delete_tombstones_in",
    "delete_unreferenced_attachments_in",
    "finish_tombstones_in",
    "insert_attachment",
    "insert_blob_ref",
    "lock_attachments_exclusive",
    "mark_tombstones",
    "select_blob_refs",
    "select_blobs_referenced_in",
]

_REF = blob_refs.c
_CID: Any = bindparam("cid")


@cache
def insert_blob_ref(dialect_name: str) -> Insert:
    """A message's reference to a blob (a repeat is ignored)."""
    return upsert_ignore(dialect_name, blob_refs)


@cache
def insert_attachment(dialect_name: str) -> Insert:
    """A blob's catalogue row (a repeat is ignored)."""
    return upsert_ignore(dialect_name, attachments)


@cache
def select_blob_refs(dialect_name: str) -> Select[Any]:
    """Whole ``blob_refs`` rows of the messages whose seqs are in ``:seqs`` (a fork)."""
    seqs = json_list(dialect_name, "seqs", integers=True)
    return select(blob_refs).where(_REF.conversation_id == _CID).where(_REF.seq.in_(seqs))


SELECT_REFERENCED_BLOBS: Final = select(_REF.namespace, _REF.sha256).distinct()
"""Every (namespace, sha256) some message references."""

SELECT_BLOB_NAMESPACES: Final = (
    select(_REF.sha256, _REF.namespace).where(_REF.conversation_id == _CID).distinct()
)
"""(sha256, namespace) of every blob one conversation references."""

SELECT_BLOB_REFERENCED_IN: Final = (
    select(_REF.seq)
    .where(_REF.sha256 == bindparam("sha256"))
    .where(_REF.namespace == bindparam("namespace"))
    .limit(1)
)
"""A row if any message references blob ``:sha256`` in namespace ``:namespace``."""


def _attachment_namespaces(tenant_scoped: bool) -> Select[Any]:
    stmt = select(_REF.namespace).where(_REF.sha256 == bindparam("sha256"))
    if tenant_scoped:
        stmt = stmt.join(conversations, conversations.c.id == _REF.conversation_id).where(
            conversations.c.tenant == bindparam("for_tenant")
        )
    return stmt.distinct()


SELECT_ATTACHMENT_VISIBLE: Final[Scoped[Select[Any]]] = scoped(
    lambda s: _attachment_namespaces(s).limit(1)
)
"""The namespace of a blob some conversation (of the tenant) references."""

SELECT_ATTACHMENT_NAMESPACES: Final[Scoped[Select[Any]]] = scoped(_attachment_namespaces)
"""Every namespace in which conversations (of the tenant) reference a blob."""

SELECT_ATTACHMENT: Final = select(
    attachments.c.size, attachments.c.media_type, attachments.c.created_at
).where(attachments.c.sha256 == bindparam("sha256"))
"""(size, media type, created_at) of blob ``:sha256``'s catalogue row."""

LOCK_ATTACHMENT_SHARED: Final = (
    select(attachments.c.sha256)
    .where(attachments.c.sha256 == bindparam("sha256"))
    .with_for_update(read=True)
)
"""A blob's catalogue row, locked against a collector (``FOR SHARE``; SQLite: its write
transactions exclude each other already)."""


def _digests(dialect_name: str) -> Select[Any]:
    return json_list(dialect_name, "digests")


@cache
def lock_attachments_exclusive(dialect_name: str) -> Select[Any]:
    """The catalogue rows of the digests in the JSON array ``:digests``, locked.

    Locked against appends referencing them (``FOR UPDATE``), in digest order (the order
    appends lock them in).
    """
    return (
        select(attachments.c.sha256)
        .where(attachments.c.sha256.in_(_digests(dialect_name)))
        .order_by(attachments.c.sha256)
        .with_for_update()
    )


@cache
def select_blobs_referenced_in(dialect_name: str) -> Select[Any]:
    """Which digests of ``:digests`` some part references in namespace ``:namespace``."""
    return (
        select(_REF.sha256)
        .distinct()
        .where(_REF.namespace == bindparam("namespace"))
        .where(_REF.sha256.in_(_digests(dialect_name)))
    )


@cache
def catalogue_attachments(dialect_name: str) -> Insert:
    """A placeholder catalogue row for each digest of ``:digests`` that has none.

    Size 0, ``created_at`` ``:stamp``; existing rows are left as they are.
    """
    values = _digests(dialect_name).subquery()
    return upsert_ignore(dialect_name, attachments).from_select(
        list(attachments.c.keys()),
        select(
            values.c[0],
            literal(0, BigInteger),
            literal("application/octet-stream"),
            bindparam("stamp", type_=attachments.c.created_at.type),
        )
        # SQLite reads ``ON CONFLICT`` after a bare ``FROM`` as a join constraint.
        .where(true())
        .order_by(values.c[0]),  # the order appends lock catalogue rows in
    )


@cache
def mark_tombstones(dialect_name: str) -> Insert:
    """A mark in namespace ``:ns`` for each digest of ``:digests``.

    ``deleted_at`` NULL, ``created_at`` ``:stamp``; the digests must have none
    (`delete_tombstones_in` first).
    """
    values = _digests(dialect_name).subquery()
    return insert(blob_tombstones).from_select(
        list(blob_tombstones.c.keys()),
        select(
            bindparam("ns", type_=blob_tombstones.c.namespace.type),
            values.c[0],
            bindparam("stamp", type_=blob_tombstones.c.created_at.type),
            null(),
        ),
    )


@cache
def delete_tombstones_in(dialect_name: str) -> Delete:
    """The marks of the digests of ``:digests`` in namespace ``:ns``."""
    return (
        delete(blob_tombstones)
        .where(blob_tombstones.c.namespace == bindparam("ns"))
        .where(blob_tombstones.c.sha256.in_(_digests(dialect_name)))
    )


@cache
def finish_tombstones_in(dialect_name: str) -> Update:
    """Record when the bytes of the digests of ``:digests`` in namespace ``:ns`` went.

    ``:deleted_at``: the storage's clock.
    """
    # Parameters named apart from the columns: SQLAlchemy reserves column names in the SET
    # clause of an UPDATE for the values it sets.
    return (
        update(blob_tombstones)
        .where(blob_tombstones.c.namespace == bindparam("ns"))
        .where(blob_tombstones.c.sha256.in_(_digests(dialect_name)))
        .values(deleted_at=bindparam("deleted_at"))
    )


@cache
def delete_unreferenced_attachments_in(dialect_name: str) -> Delete:
    """The catalogue rows of the digests of ``:digests`` that no part references any more."""
    return (
        delete(attachments)
        .where(attachments.c.sha256.in_(_digests(dialect_name)))
        .where(~select(_REF.sha256).where(_REF.sha256 == attachments.c.sha256).exists())
    )


FINISH_TOMBSTONE: Final[Update] = (
    update(blob_tombstones)
    .where(blob_tombstones.c.namespace == bindparam("ns"))
    .where(blob_tombstones.c.sha256 == bindparam("digest"))
    .values(deleted_at=bindparam("deleted_at"))
)
"""Record when (storage clock) a marked blob's bytes were deleted."""

PURGE_TOMBSTONES: Final[Delete] = delete(blob_tombstones).where(
    blob_tombstones.c.deleted_at < bindparam("before")
)

SELECT_TOMBSTONE: Final = (
    select(blob_tombstones.c.deleted_at)
    .where(blob_tombstones.c.namespace == bindparam("ns"))
    .where(blob_tombstones.c.sha256 == bindparam("digest"))
)

# ---------------------------------------------------------------------------------------------
# releases (`convstore.store.maintenance.released_blobs`)

INSERT_RELEASED: Final = insert(released_blobs)
"""(namespace, sha256, released_at) rows."""

DELETE_RELEASED: Final[Delete] = delete(released_blobs).where(
    released_blobs.c.namespace == bindparam("ns"), released_blobs.c.sha256 == bindparam("sha")
)

DELETE_SETTLED_RELEASE: Final[Delete] = delete(released_blobs).where(
    released_blobs.c.namespace == bindparam("ns"),
    released_blobs.c.sha256 == bindparam("sha"),
    released_blobs.c.released_at == bindparam("at"),
)
"""A release, unless an erase rewrote it (another ``:at``) since garbage collection read it."""

SELECT_RELEASED: Final = select(
    released_blobs.c.namespace, released_blobs.c.sha256, released_blobs.c.released_at
).order_by(released_blobs.c.namespace, released_blobs.c.sha256)
"""Every release not yet settled: (namespace, sha256, released_at)."""
