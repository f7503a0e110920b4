"""Conversations as listed: summaries (a header and its message count), pages and cursors.

Each read is a function of one open read transaction (``fn(tx)``), like
`convstore.store.load.reads`.

Invariants:

- Listing order is creation time, then id, newest first; creation time never changes, so a walk
  by cursor sees every conversation that existed when it started exactly once, however the
  others are written meanwhile.
- A cursor is opaque to callers (URL-safe base64 of the position); one that does not decode is
  refused with `InvalidInputError`, never taken as "from the start".
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic_core import from_json, to_json
from sqlalchemy import Select

from convstore.db.statements.conversations import list_page
from convstore.db.tx import Codec, Row, Tx
from convstore.errors import ConversationNotFoundError, InvalidInputError
from convstore.store.conversations.metadata_tags import WIDE, filter_tags

__all__ = [
    "ConversationPage",
    "ConversationSummary",
    "encode_cursor",
    "get_conversation",
    "list_conversations",
    "page_query",
]


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation's header, without its messages."""

    id: str
    title: str | None
    tenant: str | None
    metadata: dict[str, Any]
    message_count: int
    """Messages stored, on every branch."""
    created_at: datetime
    updated_at: datetime
    revision: str = ""
    cursor: str = ""
    """Pass as ``cursor=`` to list the conversations after this one."""


class ConversationPage(list[ConversationSummary]):
    """One page of `list_conversations`: a list, plus where the next page starts."""

    next_cursor: str | None = None
    """The cursor of the next page; ``None`` on the last page."""

    @property
    def has_more(self) -> bool:
        """Whether another page follows."""
        return self.next_cursor is not None


def encode_cursor(created_at: datetime, cid: str) -> str:
    """An opaque cursor for the listing position of one conversation."""
    raw = to_json([created_at.isoformat(), cid])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, cid = from_json(base64.urlsafe_b64decode(padded.encode("ascii")))
        return datetime.fromisoformat(created), str(cid)
    except (ValueError, TypeError, binascii.Error, UnicodeError) as exc:
        raise InvalidInputError(f"not a list_conversations cursor: {cursor!r}") from exc


def list_conversations(
    tx: Tx,
    tenant: str | None,
    limit: int,
    cursor: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ConversationPage:
    """Conversations, newest first (by creation, then id), ``limit`` at a time.

    Creation order never changes, so a walk by cursor sees every conversation that existed
    when it started exactly once, however the others are written meanwhile. One statement per
    page (`convstore.db.statements.conversations.list_page`): an index range whatever the
    page's depth, the metadata filter included, so a read never holds its snapshot across pages.
    """
    codec = tx.codec
    stmt, params = page_query(codec, tenant, limit, cursor, metadata)
    page = ConversationPage()
    for row in tx.fetch(stmt, params):
        page.append(_summary(row, codec))
    if len(page) > limit:
        del page[limit:]
        page.next_cursor = page[-1].cursor if page else None
    return page


def page_query(
    codec: Codec,
    tenant: str | None,
    limit: int,
    cursor: str | None,
    metadata: Mapping[str, Any] | None,
) -> tuple[Select[Any], dict[str, Any]]:
    """The statement of one page and its parameters.

    It asks for ``limit + 1`` rows: the last tells whether another page follows.
    """
    tags = filter_tags(metadata)
    params: dict[str, Any] = {"for_tenant": tenant, "limit": limit + 1}
    params.update({f"tag{i}": t for i, t in enumerate(tags.entries)})
    if tags.pair is not None:
        params.update(pair=tags.pair, wide=WIDE)
    if cursor is not None:
        after_created, params["after_id"] = _decode_cursor(cursor)
        params["after_created"] = codec.dump_time(after_created)
    stmt = list_page(
        tenant_scoped=tenant is not None, after_cursor=cursor is not None, tags=len(tags.entries)
    )
    return stmt, params


def _summary(row: Row, codec: Codec) -> ConversationSummary:
    """A `ConversationSummary` from a ``select_summary`` or listing row."""
    (cid, tenant, title, meta, _last, created, updated, _state, _head, revision, _branched,
     count) = row  # fmt: skip
    created_at = codec.load_time(created)
    return ConversationSummary(
        id=cid,
        title=title,
        tenant=tenant,
        metadata=codec.load_json(meta) or {},
        message_count=count,
        created_at=created_at,
        updated_at=codec.load_time(updated),
        revision=revision,
        cursor=encode_cursor(created_at, cid),
    )


def get_conversation(tx: Tx, cid: str, tenant: str | None) -> ConversationSummary:
    """The header of one conversation; `ConversationNotFoundError` if it is not visible."""
    rows = tx.fetch(tx.statements.select_summary.pick(tenant), {"cid": cid, "for_tenant": tenant})
    if not rows:
        raise ConversationNotFoundError(cid)
    return _summary(rows[0], tx.codec)
