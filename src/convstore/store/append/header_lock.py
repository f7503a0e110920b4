"""A write's hold on its conversation: the header row locked, then advanced to a new revision.

Invariants:

- Every write locks the conversation's header row first (`lock`). That one statement proves the
  conversation exists and is visible to the tenant, checks ``expected_revision``, serialises
  writers of one conversation on every database, and yields the counters the write advances.
- A write that changed the conversation ends with `advance`: the counters it changed are stored
  with a fresh, random revision (`new_revision`), so a revision is never seen twice.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from convstore.db.tx import Row, Tx
from convstore.errors import ConversationNotFoundError, RevisionConflictError

__all__ = ["Header", "advance", "lock", "new_revision"]


def new_revision() -> str:
    """An opaque revision token: random, so it never repeats for a conversation."""
    return secrets.token_hex(8)


@dataclass(slots=True)
class Header:
    """A conversation's header row, as locked by `lock`."""

    cid: str
    tenant: str | None
    title: str | None
    metadata: Any
    last_seq: int
    created_at: Any
    updated_at: Any
    state: Any
    head_seq: int | None
    revision: str
    branched: bool

    @classmethod
    def of(cls, row: Row) -> Header:
        """From a ``CONVERSATION_COLUMNS`` row."""
        (cid, tenant, title, metadata, last_seq, created, updated, state, head, revision,
         branched) = row  # fmt: skip
        return cls(cid, tenant, title, metadata, last_seq, created, updated, state, head,
                   revision, bool(branched))  # fmt: skip


def lock(tx: Tx, cid: str, tenant: str | None, expected_revision: str | None) -> Header:
    """Lock the conversation's header for this transaction and check ``expected_revision``."""
    rows = tx.fetch(
        tx.statements.lock_conversation.pick(tenant), {"cid": cid, "for_tenant": tenant}
    )
    if not rows:
        raise ConversationNotFoundError(cid)
    header = Header.of(rows[0])
    if expected_revision is not None and expected_revision != header.revision:
        raise RevisionConflictError(cid, expected_revision, header.revision)
    return header


def advance(tx: Tx, header: Header, now: datetime) -> str:
    """Store ``header``'s counters with a new revision (and ``updated_at``); the revision."""
    header.revision = new_revision()
    tx.execute(
        tx.statements.advance_conversation,
        {
            "cid": header.cid,
            "last_seq": header.last_seq,
            "head_seq": header.head_seq,
            "branched": header.branched,
            "revision": header.revision,
            "now": tx.codec.dump_time(now),
        },
    )
    return header.revision
