"""Statements on conversation headers and their metadata tags: create, read, list, prune.

Invariants:

- Every statement that names one conversation binds it as ``:cid``; a `Scoped` one also has a
  form restricted to ``:for_tenant``.
- `CONVERSATION_COLUMNS` is a header's layout wherever one is read (a lock, a load, a summary
  and a listing page, which add the message count); `HeaderAt` names its positions.
- Listing and pruning walk creation order (``created_at``, ``id``), which never changes, so a
  walk by cursor neither skips nor repeats a conversation while others write.
- The head update of an append (``advance_conversation``) is with the append's statements
  (`convstore.db.statements`).
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
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    tuple_,
    union_all,
    update,
)

from convstore.db.schema import conversation_tags, conversations, messages
from convstore.db.statements._common import (
    Scoped,
    by_conversation,
    column_names,
    positions,
    scoped,
    upsert_ignore,
)

__all__ = [
    "CONVERSATION_COLUMNS",
    "CONVERSATION_EXISTS",
    "DELETE_CONVERSATION",
    "DELETE_CONVERSATION_TAGS",
    "INSERT_CONVERSATION",
    "INSERT_CONVERSATION_TAGS",
    "LOCK_CONVERSATION",
    "PRUNE_COLUMNS",
    "PRUNE_DELETE",
    "SELECT_CONVERSATION",
    "SELECT_SUMMARY",
    "SET_HEADER",
    "HeaderAt",
    "PruneAt",
    "RowAt",
    "insert_conversation_if_absent",
    "list_page",
    "prune_page",
    "tenant_conversation_ids",
]

CONVERSATION_COLUMNS = (
    conversations.c.id,
    conversations.c.tenant,
    conversations.c.title,
    conversations.c.metadata,
    conversations.c.last_seq,
    conversations.c.created_at,
    conversations.c.updated_at,
    conversations.c.state,
    conversations.c.head_seq,
    conversations.c.revision,
    conversations.c.branched,
)
"""A conversation's header, in the order `convstore.db.mapping.decode_conversation` reads it."""

_AT: Final = positions(CONVERSATION_COLUMNS)


class HeaderAt:
    """Where each column is in a `CONVERSATION_COLUMNS` row."""

    id: Final = _AT["id"]
    tenant: Final = _AT["tenant"]
    title: Final = _AT["title"]
    metadata: Final = _AT["metadata"]
    last_seq: Final = _AT["last_seq"]
    created_at: Final = _AT["created_at"]
    updated_at: Final = _AT["updated_at"]
    state: Final = _AT["state"]
    head_seq: Final = _AT["head_seq"]
    revision: Final = _AT["revision"]
    branched: Final = _AT["branched"]
    message_count: Final = len(CONVERSATION_COLUMNS)
    """Only in a summary or listing row (`SELECT_SUMMARY`, `list_page`): after the header."""


_ROW: Final = {name: i for i, name in enumerate(column_names(conversations))}


class RowAt:
    """Where each column is in a whole ``conversations`` row (`INSERT_CONVERSATION`)."""

    created_at: Final = _ROW["created_at"]
    updated_at: Final = _ROW["updated_at"]
    revision: Final = _ROW["revision"]


def _message_count() -> Any:
    return (
        select(func.count())
        .where(messages.c.conversation_id == conversations.c.id)
        .scalar_subquery()
    )


INSERT_CONVERSATION: Final = insert(conversations)
"""A whole row, every column in table order."""


@cache
def insert_conversation_if_absent(dialect_name: str) -> Insert:
    """`INSERT_CONVERSATION`, ignored when the id is taken."""
    return upsert_ignore(dialect_name, conversations)


LOCK_CONVERSATION: Final[Scoped[Select[Any]]] = scoped(
    lambda s: select(*CONVERSATION_COLUMNS).where(by_conversation(s)).with_for_update()
)
"""The header, locked for the rest of the transaction (``FOR UPDATE``; SQLite's write
transactions hold the database lock already)."""

SELECT_CONVERSATION: Final[Scoped[Select[Any]]] = scoped(
    lambda s: select(*CONVERSATION_COLUMNS).where(by_conversation(s))
)

SELECT_SUMMARY: Final[Scoped[Select[Any]]] = scoped(
    lambda s: select(*CONVERSATION_COLUMNS, _message_count()).where(by_conversation(s))
)
"""The header and its message count (`ConversationSummary`: `convstore.store.conversations`)."""

SET_HEADER: Final[Update] = (
    update(conversations)
    .where(conversations.c.id == bindparam("cid"))
    .values(
        title=bindparam("title"),
        metadata=bindparam("metadata", type_=conversations.c.metadata.type),
        state=bindparam("state", type_=conversations.c.state.type),
        revision=bindparam("revision"),
        updated_at=bindparam("now"),
    )
)
"""Sets ``title``, ``metadata``, ``state``, ``revision`` and ``updated_at``."""

DELETE_CONVERSATION: Final[Scoped[Delete]] = scoped(
    lambda s: delete(conversations).where(by_conversation(s))
)

INSERT_CONVERSATION_TAGS: Final = insert(conversation_tags)

DELETE_CONVERSATION_TAGS: Final[Delete] = delete(conversation_tags).where(
    conversation_tags.c.conversation_id == bindparam("cid")
)


CONVERSATION_EXISTS: Final = select(conversations.c.id).where(
    conversations.c.id == bindparam("cid")
)
"""The id ``:cid`` if a conversation (of any tenant) has it."""


@cache
def tenant_conversation_ids(scoped: bool, *, by_creation: bool = False) -> Select[Any]:
    """The ids of the conversations (of tenant ``:tenant`` when ``scoped``).

    ``by_creation``: oldest first (an export's order), else in no order (a subquery).
    """
    c = conversations.c
    query = select(c.id)
    if scoped:
        query = query.where(c.tenant == bindparam("tenant"))
    return query.order_by(c.created_at, c.id) if by_creation else query


# ---------------------------------------------------------------------------------------------
# listing


@cache
def list_page(*, tenant_scoped: bool, after_cursor: bool, tags: int) -> Select[Any]:
    """One page of conversations, newest first: one index range, whatever the page's depth.

    ``tags``: how many metadata entries (``:tag0`` ...) a conversation must hold
    (`convstore.store.conversations.metadata_tags`). One entry: the page is found among its tag's
    rows (`conversation_tags`, where tenant and creation are copied). Two or more: among the
    first two entries' pair tag (``:pair``), the others checked by primary key, merged with
    the conversations too wide to hold pair tags (``:wide``), each entry checked. Only the
    page's conversations are read. Without entries the conversations' own listing indexes
    are walked. The cursor is one row comparison, ``(created_at, id) < (:after_created,
    :after_id)``, which both databases answer as an index range (an ``OR`` of the two
    conditions they would filter row by row). Built once per shape (the raw SQLite path
    compiles each statement object once). Rows: `CONVERSATION_COLUMNS`, then the count.
    """
    limit = bindparam("limit", type_=BigInteger)
    columns = (*CONVERSATION_COLUMNS, _message_count())
    if not tags:
        conv = conversations.c
        stmt = select(*columns)
        if tenant_scoped:
            stmt = stmt.where(conv.tenant == bindparam("for_tenant"))
        if after_cursor:
            stmt = stmt.where(tuple_(conv.created_at, conv.id) < _after())
        # Creation order never changes, so a cursor walk neither skips nor repeats anything
        # while other writers update conversations.
        return stmt.order_by(conv.created_at.desc(), conv.id.desc()).limit(limit)
    if tags == 1:
        found = _tag_walk("tag0", [], tenant_scoped=tenant_scoped, after_cursor=after_cursor)
    else:
        paired = _tag_walk(
            "pair", [f"tag{i}" for i in range(2, tags)], tenant_scoped, after_cursor
        ).subquery("paired")
        wide = _tag_walk(
            "wide", [f"tag{i}" for i in range(tags)], tenant_scoped, after_cursor
        ).subquery("wide")
        either = union_all(select(*paired.c), select(*wide.c)).subquery("either")
        found = (
            select(*either.c)
            .order_by(either.c.created_at.desc(), either.c.conversation_id.desc())
            .limit(limit)
        )
    # The page is settled among the tags alone, before any conversation row is read: a
    # planner that joined first could scan the conversations to hash them.
    page = found.subquery("page")
    return (
        select(*columns)
        .select_from(page.join(conversations, conversations.c.id == page.c.conversation_id))
        .order_by(page.c.created_at.desc(), page.c.conversation_id.desc())
    )


def _after() -> Any:
    created = bindparam("after_created", type_=conversations.c.created_at.type)
    return tuple_(created, bindparam("after_id"))


def _tag_walk(
    walked: str, checked: list[str], tenant_scoped: bool, after_cursor: bool
) -> Select[Any]:
    """The newest ``:limit`` conversations holding tag ``:walked`` and each of ``checked``.

    ``:walked`` is an index range walked newest first; each of ``checked`` one probe of the
    primary key (the index alone).
    """
    walk = conversation_tags.alias(f"w_{walked}")
    found = select(walk.c.conversation_id, walk.c.created_at).where(walk.c.tag == bindparam(walked))
    for name in checked:
        other = conversation_tags.alias(f"c_{walked}_{name}")
        found = found.where(
            select(other.c.conversation_id)
            .where(other.c.conversation_id == walk.c.conversation_id)
            .where(other.c.tag == bindparam(name))
            .exists()
        )
    if tenant_scoped:
        found = found.where(walk.c.tenant == bindparam("for_tenant"))
    if after_cursor:
        found = found.where(tuple_(walk.c.created_at, walk.c.conversation_id) < _after())
    return found.order_by(walk.c.created_at.desc(), walk.c.conversation_id.desc()).limit(
        bindparam("limit", type_=BigInteger)
    )


# ---------------------------------------------------------------------------------------------
# pruning (`convstore.store.maintenance._prune`)

PRUNE_COLUMNS: Final = (
    conversations.c.id,
    conversations.c.revision,
    conversations.c.updated_at,
    conversations.c.created_at,
)
"""What a prune reads of each conversation created before its cutoff."""


_PRUNE_AT: Final = positions(PRUNE_COLUMNS)


class PruneAt:
    """Where each column is in a `prune_page` row."""

    id: Final = _PRUNE_AT["id"]
    revision: Final = _PRUNE_AT["revision"]
    updated_at: Final = _PRUNE_AT["updated_at"]
    created_at: Final = _PRUNE_AT["created_at"]


@cache
def prune_page(scoped: bool, first: bool) -> Select[Any]:
    """The next ``:n`` conversations created before ``:cutoff``, in creation order.

    ``scoped``: of tenant ``:tenant`` only; not ``first``: after (``:after_created``,
    ``:after_id``).
    """
    c = conversations.c
    query = select(*PRUNE_COLUMNS).where(c.created_at < bindparam("cutoff"))
    if scoped:
        query = query.where(c.tenant == bindparam("tenant"))
    if not first:
        query = query.where(
            or_(
                c.created_at > bindparam("after_created"),
                and_(c.created_at == bindparam("after_created"), c.id > bindparam("after_id")),
            )
        )
    return query.order_by(c.created_at, c.id).limit(bindparam("n"))


PRUNE_DELETE: Final[Delete] = delete(conversations).where(
    conversations.c.id == bindparam("cid"),
    conversations.c.revision == bindparam("revision"),
    conversations.c.updated_at < bindparam("cutoff"),
)
"""Conversation ``:cid``, if it still has revision ``:revision`` and was last written before
``:cutoff`` (a write since the prune read it keeps it)."""
