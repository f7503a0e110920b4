"""Statements on messages: a path or window read, the tree's shape, deletes, compactions, keys.

Invariants:

- Reads of a path come in three column sets (whole messages, `MESSAGE_COLUMNS`; seqs alone,
  `MESSAGE_KEY_COLUMNS`, for a reader holding most of them decoded; native records,
  `NATIVE_COLUMNS`) over the same four shapes: the whole of an unbranched conversation, a
  window of one by ``seq``, a window of a branched one walked up the parent pointers, and the
  seqs of a JSON array. `MessageAt` names a message row's positions.
- A walk up the tree (`SELECT_PATH_WINDOW`, `SELECT_PATH_UP`, `SELECT_MEET`) costs the distance
  it walks, never the conversation's length.
- `INSERT_MESSAGE` binds a whole row, every column in table order (`MessageRowAt` names its
  positions).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Delete,
    Insert,
    Integer,
    Select,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal_column,
    select,
    union_all,
)

from convstore.db.schema import append_keys, compactions, conversations, messages
from convstore.db.statements._common import Scoped, column_names, json_list, positions, scoped

__all__ = [
    "COPY_COMPACTIONS",
    "DELETE_MESSAGE",
    "FIND_MESSAGE",
    "INSERT_APPEND_KEY",
    "INSERT_COMPACTION",
    "INSERT_COMPACTION_ROW",
    "INSERT_MESSAGE",
    "MESSAGE_COLUMNS",
    "MESSAGE_KEY_COLUMNS",
    "NATIVE_COLUMNS",
    "SELECT_APPEND_KEY",
    "SELECT_CHILD",
    "SELECT_COMPACTIONS",
    "SELECT_MEET",
    "SELECT_MESSAGES",
    "SELECT_MESSAGES_BEFORE",
    "SELECT_MESSAGE_BY_ID",
    "SELECT_MESSAGE_KEYS",
    "SELECT_MESSAGE_KEYS_BEFORE",
    "SELECT_NATIVE",
    "SELECT_NATIVE_BEFORE",
    "SELECT_NATIVE_PATH_WINDOW",
    "SELECT_PATH_UP",
    "SELECT_PATH_WINDOW",
    "SELECT_PATH_WINDOW_KEYS",
    "SELECT_TREE",
    "MessageAt",
    "MessageRowAt",
    "copy_messages",
    "message_id_taken",
    "select_message_keys_in",
    "select_messages_in",
]

MESSAGE_COLUMNS = (
    messages.c.seq,
    messages.c.parent_seq,
    messages.c.role,
    messages.c.provider,
    messages.c.model,
    messages.c.created_at,
    messages.c.details,
    messages.c.message_id,
    messages.c.parts,
    messages.c.native,
    messages.c.usage,
)
"""A message, in the order `convstore.db.mapping.decode_messages` reads it."""

_AT: Final = positions(MESSAGE_COLUMNS)


class MessageAt:
    """Where each column is in a `MESSAGE_COLUMNS` row (``seq`` also in the two below)."""

    seq: Final = _AT["seq"]
    parent_seq: Final = _AT["parent_seq"]
    role: Final = _AT["role"]
    provider: Final = _AT["provider"]
    model: Final = _AT["model"]
    created_at: Final = _AT["created_at"]
    details: Final = _AT["details"]
    message_id: Final = _AT["message_id"]
    parts: Final = _AT["parts"]
    native: Final = _AT["native"]
    usage: Final = _AT["usage"]


INSERT_MESSAGE: Final[Insert] = insert(messages)
"""A whole row, every column in table order: an append's messages."""

_ROW: Final = {name: i for i, name in enumerate(column_names(messages))}


class MessageRowAt:
    """Where each column is in a whole ``messages`` row (`INSERT_MESSAGE`)."""

    seq: Final = _ROW["seq"]
    parent_seq: Final = _ROW["parent_seq"]


MESSAGE_KEY_COLUMNS = (messages.c.seq,)
"""What a load asks of a message it may hold decoded already (`convstore.store.load.message_cache`):
on an unbranched conversation the primary key index alone answers."""

NATIVE_COLUMNS = (messages.c.seq, messages.c.message_id, messages.c.native)
"""What a native read takes of a message: one JSON column, beside its seq and application id."""


def _find_message(tenant_scoped: bool) -> Select[Any]:
    stmt = (
        select(messages.c.conversation_id, *MESSAGE_COLUMNS)
        .join(conversations, conversations.c.id == messages.c.conversation_id)
        .where(messages.c.message_id == bindparam("message_id"))
    )
    if tenant_scoped:
        stmt = stmt.where(conversations.c.tenant == bindparam("for_tenant"))
    return stmt.order_by(messages.c.created_at.desc(), messages.c.conversation_id.desc()).limit(1)


def _chain(*columns: Any) -> Select[Any]:
    """``columns`` of every message of ``:cid``, by ``seq`` (an unbranched path, whole)."""
    return (
        select(*columns)
        .where(messages.c.conversation_id == bindparam("cid"))
        .order_by(messages.c.seq)
    )


def _chain_before(*columns: Any) -> Select[Any]:
    """``columns`` of the newest ``:n`` messages below ``:before`` by ``seq``, newest first."""
    return (
        select(*columns)
        .where(messages.c.conversation_id == bindparam("cid"))
        .where(messages.c.seq < bindparam("before", type_=BigInteger))
        .order_by(messages.c.seq.desc())
        .limit(bindparam("n", type_=BigInteger))
    )


def _path_window(*columns: Any) -> Select[Any]:
    """``columns`` of the newest ``:n`` messages before ``:before`` on the path to ``:head``.

    A recursive walk up the parent pointers that stops once it has ``:n`` messages below
    ``:before``: its cost follows the window (and its distance from the head), not the size of
    the conversation or how many branches it has.
    """
    cid: Any = bindparam("cid")
    before = bindparam("before", type_=BigInteger)
    n = bindparam("n", type_=BigInteger)
    below = case((messages.c.seq < before, 1), else_=0)
    path = (
        select(messages.c.seq, messages.c.parent_seq, below.label("taken"))
        .where(messages.c.conversation_id == cid)
        .where(messages.c.seq == bindparam("head"))
        .cte("path", recursive=True)
    )
    step = messages.alias("step")
    path = path.union_all(
        select(
            step.c.seq,
            step.c.parent_seq,
            path.c.taken + case((step.c.seq < before, 1), else_=0),
        )
        .where(step.c.conversation_id == cid)
        .where(step.c.seq == path.c.parent_seq)
        .where(path.c.taken < n)
    )
    return (
        select(*columns)
        .where(messages.c.conversation_id == cid)
        .where(messages.c.seq.in_(select(path.c.seq).where(path.c.seq < before)))
        .order_by(messages.c.seq.desc())
        .limit(n)
    )


def _path_up() -> Select[Any]:
    """(seq, parent_seq, role) of the path ending at ``:start``, walked up from ``:start``.

    The walk goes on while the message it stands on is above ``:floor`` or, when ``:to_user``
    is 1, until it has passed a user message: it costs the distance walked, never the length
    of the conversation. Rows come in no particular order.
    """
    cid: Any = bindparam("cid")
    floor = bindparam("floor", type_=BigInteger)
    to_user = bindparam("to_user", type_=Integer)
    is_user = case((messages.c.role == "user", 1), else_=0)
    up = (
        select(messages.c.seq, messages.c.parent_seq, messages.c.role, is_user.label("seen"))
        .where(messages.c.conversation_id == cid)
        .where(messages.c.seq == bindparam("start", type_=BigInteger))
        .cte("up", recursive=True)
    )
    step = messages.alias("step")
    up = up.union_all(
        select(
            step.c.seq,
            step.c.parent_seq,
            step.c.role,
            case((step.c.role == "user", 1), else_=up.c.seen),
        )
        .where(step.c.conversation_id == cid)
        .where(step.c.seq == up.c.parent_seq)
        .where((up.c.seq > floor) | ((up.c.seen == 0) & (to_user == 1)))
    )
    return select(up.c.seq, up.c.parent_seq, up.c.role)


def _child() -> Select[Any]:
    """A child of message ``:seq``, found by two index lookups.

    The message ``:seq + 1`` if it is one (a chain's child), else one found by
    ``ix_messages_branch_children`` (every other child is in that index).
    """
    msg = messages.c
    cid: Any = bindparam("cid")
    seq = bindparam("seq", type_=Integer)
    children = union_all(
        select(msg.seq)
        .where(msg.conversation_id == cid)
        .where(msg.seq == seq + 1)
        .where(msg.parent_seq == seq),
        select(msg.seq)
        .where(msg.conversation_id == cid)
        .where(msg.parent_seq == seq)
        # The index's condition, with its literal (a parameter would hide from PostgreSQL's
        # generic plans that the index applies).
        .where(msg.parent_seq != msg.seq - literal_column("1")),
    ).subquery("children")
    return select(children.c.seq).limit(1)


def _meet() -> Select[Any]:
    """Walk up from ``:a`` and ``:b`` (0: the empty path) until the two walks meet.

    Each step moves whichever side stands on the larger ``seq`` (a parent's ``seq`` is always
    smaller than its child's) to its parent, 0 above a root. One row per step: the ``a``
    values are the first path's messages after the meeting point, the ``b`` values the
    second's, and the last row holds the meeting point (the paths' last shared message, or 0)
    twice. The cost is the two paths' distance from it, not the conversation's length.
    """
    cid: Any = bindparam("cid")
    start = select(
        cast(bindparam("a", type_=Integer), Integer).label("a"),
        cast(bindparam("b", type_=Integer), Integer).label("b"),
    ).cte("meet", recursive=True)
    step = messages.alias("step")
    a_higher = start.c.a > start.c.b
    meet = start.union_all(
        select(
            case((a_higher, func.coalesce(step.c.parent_seq, 0)), else_=start.c.a),
            case((start.c.b > start.c.a, func.coalesce(step.c.parent_seq, 0)), else_=start.c.b),
        )
        .where(step.c.conversation_id == cid)
        .where(step.c.seq == case((a_higher, start.c.a), else_=start.c.b))
        .where(start.c.a != start.c.b)
    )
    return select(meet.c.a, meet.c.b)


_CID: Any = bindparam("cid")

SELECT_MESSAGES: Final = _chain(*MESSAGE_COLUMNS)
"""Every message of a conversation, by ``seq`` (the whole path of an unbranched one)."""
SELECT_MESSAGES_BEFORE: Final = _chain_before(*MESSAGE_COLUMNS)
"""The newest ``:n`` messages below ``:before`` by ``seq`` (windows of an unbranched one)."""
SELECT_PATH_WINDOW: Final = _path_window(*MESSAGE_COLUMNS)
SELECT_PATH_UP: Final = _path_up()
SELECT_MEET: Final = _meet()
SELECT_MESSAGE_KEYS: Final = _chain(*MESSAGE_KEY_COLUMNS)
SELECT_MESSAGE_KEYS_BEFORE: Final = _chain_before(*MESSAGE_KEY_COLUMNS)
SELECT_PATH_WINDOW_KEYS: Final = _path_window(*MESSAGE_KEY_COLUMNS)
"""The three above as seqs only (and `select_message_keys_in`): what a load whose messages are
mostly decoded already asks (`convstore.store.load.message_cache`)."""
SELECT_NATIVE: Final = _chain(*NATIVE_COLUMNS)
"""(seq, message id, native record) of every message of a conversation, by ``seq``."""
SELECT_NATIVE_BEFORE: Final = _chain_before(*NATIVE_COLUMNS)
"""The same for the newest ``:n`` below ``:before`` by ``seq`` (an unbranched window)."""
SELECT_NATIVE_PATH_WINDOW: Final = _path_window(*NATIVE_COLUMNS)
"""The same for the newest ``:n`` below ``:before`` on the path ending at ``:head``."""


@cache
def select_messages_in(dialect_name: str) -> Select[Any]:
    """Messages whose ``seq`` is in the JSON array ``:seqs``, by ``seq``."""
    return _in_seqs(dialect_name, *MESSAGE_COLUMNS)


@cache
def select_message_keys_in(dialect_name: str) -> Select[Any]:
    """`select_messages_in` as seqs only."""
    return _in_seqs(dialect_name, *MESSAGE_KEY_COLUMNS)


def _in_seqs(dialect_name: str, *columns: Any) -> Select[Any]:
    seqs = json_list(dialect_name, "seqs", integers=True)
    return (
        select(*columns)
        .where(messages.c.conversation_id == _CID)
        .where(messages.c.seq.in_(seqs))
        .order_by(messages.c.seq)
    )


SELECT_TREE: Final = (
    select(messages.c.seq, messages.c.parent_seq, messages.c.role, messages.c.created_at)
    .where(messages.c.conversation_id == _CID)
    .order_by(messages.c.seq)
)
"""Every message's ``seq``, ``parent_seq``, role and time: the shape of the tree."""

SELECT_MESSAGE_BY_ID: Final = (
    select(*MESSAGE_COLUMNS)
    .where(messages.c.conversation_id == _CID)
    .where(messages.c.message_id == bindparam("message_id"))
)

FIND_MESSAGE: Final[Scoped[Select[Any]]] = scoped(_find_message)
"""The newest message with application id ``:message_id`` in any conversation (of the
tenant): its conversation id, then `MESSAGE_COLUMNS`."""

SELECT_CHILD: Final = _child()
"""A child of message ``:seq``, if it has one: two index lookups, never a scan (the message
``:seq + 1``, or a child found by ``ix_messages_branch_children``)."""

DELETE_MESSAGE: Final[Delete] = (
    delete(messages)
    .where(messages.c.conversation_id == _CID)
    .where(messages.c.seq == bindparam("seq"))
)


@cache
def message_id_taken(dialect_name: str) -> Select[Any]:
    """Which of the JSON array ``:ids`` of application message ids a conversation holds."""
    return (
        select(messages.c.message_id)
        .where(messages.c.conversation_id == _CID)
        .where(messages.c.message_id.in_(json_list(dialect_name, "ids")))
    )


@cache
def copy_messages(dialect_name: str) -> Select[Any]:
    """Full message rows (every column) whose ``seq`` is in ``:seqs``, for a fork."""
    seqs = json_list(dialect_name, "seqs", integers=True)
    return (
        select(messages).where(messages.c.conversation_id == _CID).where(messages.c.seq.in_(seqs))
    )


# ---------------------------------------------------------------------------------------------
# compactions and idempotency keys

INSERT_COMPACTION: Final[Insert] = insert(compactions).from_select(
    ["conversation_id", "id", "through_seq", "summary", "created_at"],
    select(
        _CID,
        func.coalesce(func.max(compactions.c.id), 0) + 1,
        bindparam("through_seq"),
        bindparam("summary"),
        bindparam("now", type_=compactions.c.created_at.type),
    ).where(compactions.c.conversation_id == _CID),
)
"""A compaction record, numbered after the conversation's others."""

SELECT_COMPACTIONS: Final = (
    select(compactions.c.through_seq, compactions.c.summary, compactions.c.created_at)
    .where(compactions.c.conversation_id == _CID)
    .order_by(compactions.c.id)
)

COPY_COMPACTIONS: Final = (
    select(compactions)
    .where(compactions.c.conversation_id == _CID)
    .where(compactions.c.through_seq <= bindparam("at_seq"))
    .order_by(compactions.c.id)
)
"""Whole compaction rows up to ``:at_seq``, for a fork."""

INSERT_COMPACTION_ROW: Final = insert(compactions)

INSERT_APPEND_KEY: Final = insert(append_keys)

SELECT_APPEND_KEY: Final = (
    select(append_keys.c.first_seq, append_keys.c.count)
    .where(append_keys.c.conversation_id == _CID)
    .where(append_keys.c.key == bindparam("key"))
)
