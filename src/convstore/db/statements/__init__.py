"""Every statement the store runs, built once from the schema for one dialect.

Invariants:

- Statements are SQLAlchemy Core objects with named bind parameters. A `Tx` either compiles
  them to the driver's SQL (SQLite hot path) or executes them through SQLAlchemy (PostgreSQL);
  the SQL text has one source either way.
- ``INSERT`` statements bind every column in table order, so the row builders in
  `convstore.store` produce plain tuples in `column_names(table)` order.
- Upserts use the dialect's own ``ON CONFLICT`` construct; nothing else is dialect-specific.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Delete,
    Insert,
    Integer,
    Select,
    Table,
    Update,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    literal_column,
    null,
    select,
    true,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from convstore.db.schema import (
    append_keys,
    attachments,
    blob_refs,
    blob_tombstones,
    compactions,
    conversation_tags,
    conversations,
    messages,
    settings,
    tool_calls,
)

__all__ = [
    "CONVERSATION_COLUMNS",
    "LIFECYCLE_COLUMNS",
    "MESSAGE_COLUMNS",
    "MESSAGE_KEY_COLUMNS",
    "Scoped",
    "Statements",
    "column_names",
    "list_page",
]

S = TypeVar("S", Select[Any], Update, Delete)


def column_names(table: Table) -> tuple[str, ...]:
    """Column names in table order: the tuple layout of that table's rows."""
    return tuple(c.name for c in table.columns)


@dataclass(frozen=True, slots=True)
class Scoped(Generic[S]):
    """One statement in two forms: for any tenant, and restricted to ``:for_tenant``."""

    any_tenant: S
    one_tenant: S

    def pick(self, tenant: str | None) -> S:
        """The form to run when the caller passed ``tenant``."""
        return self.any_tenant if tenant is None else self.one_tenant


def _scoped(build: Callable[[bool], S]) -> Scoped[S]:
    return Scoped(any_tenant=build(False), one_tenant=build(True))


def _by_conversation(tenant_scoped: bool) -> ColumnElement[bool]:
    where = conversations.c.id == bindparam("cid")
    if tenant_scoped:
        where = where & (conversations.c.tenant == bindparam("for_tenant"))
    return where


def _upsert_ignore(dialect_name: str, table: Table) -> Insert:
    match dialect_name:
        case "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        case "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing()
        case _:
            raise NotImplementedError(f"no upsert for dialect {dialect_name!r}")


def _json_list(dialect_name: str, name: str, *, integers: bool = False) -> Select[Any]:
    """The values of a JSON array of strings or integers bound as ``:name``, as a subquery.

    One parameter however long the list, so the statement compiles once (an expanding ``IN``
    would compile per length on the raw SQLite path).
    """
    match dialect_name:
        case "sqlite":
            return select(literal_column("value")).select_from(func.json_each(bindparam(name)))
        case "postgresql":
            values = func.json_array_elements_text(cast(bindparam(name, type_=JSON), JSON))
            return select(cast(values, Integer) if integers else values)
        case _:
            raise NotImplementedError(f"no JSON arrays for dialect {dialect_name!r}")


_PENDING: Any = literal_column("'pending'")
"""Written into the SQL rather than bound: SQLite matches a query to the partial index on
pending calls by this value, and a bound value makes it re-prepare the statement on every
execution (a twentieth of an append)."""

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

MESSAGE_KEY_COLUMNS = (messages.c.seq,)
"""What a load asks of a message it may hold decoded already (`convstore.store.message_cache`):
on an unbranched conversation the primary key index alone answers."""

LIFECYCLE_COLUMNS = (
    tool_calls.c.id,
    tool_calls.c.seq,
    tool_calls.c.idx,
    tool_calls.c.status,
    tool_calls.c.result_kind,
    tool_calls.c.result_seq,
    tool_calls.c.result_idx,
    tool_calls.c.created_at,
    tool_calls.c.completed_at,
    tool_calls.c.cancelled_at,
)
"""A call's lifecycle without what its part already says (name, arguments): what a load reads
of the calls its messages made, which it builds from their parts."""

_MADE_BEFORE_COLUMNS = (tool_calls.c.name, tool_calls.c.provider_id, tool_calls.c.arguments)

_NATIVE_COLUMNS = (messages.c.seq, messages.c.message_id, messages.c.native)
"""What a native read takes of a message: one JSON column, beside its seq and application id."""

_TOOL_CALL_COLUMNS = (
    tool_calls.c.id,
    tool_calls.c.seq,
    tool_calls.c.name,
    tool_calls.c.provider_id,
    tool_calls.c.arguments,
    tool_calls.c.raw_arguments,
    tool_calls.c.status,
    tool_calls.c.result_kind,
    tool_calls.c.result_seq,
    tool_calls.c.result_idx,
    tool_calls.c.details,
    tool_calls.c.created_at,
    tool_calls.c.completed_at,
)
"""The columns a `ToolCall` is built from, in the order `store.load` reads them."""


def _message_count() -> Any:
    return (
        select(func.count())
        .where(messages.c.conversation_id == conversations.c.id)
        .scalar_subquery()
    )


@cache
def list_page(*, tenant_scoped: bool, after_cursor: bool, tags: int) -> Select[Any]:
    """One page of conversations, newest first: one index range, whatever the page's depth.

    ``tags``: how many metadata entries (``:tag0`` ...) a conversation must hold
    (`convstore.store.metadata_tags`). One entry: the page is found among its tag's rows
    (`conversation_tags`, where tenant and creation are copied). Two or more: among the
    first two entries' pair tag (``:pair``), the others checked by primary key, merged with
    the conversations too wide to hold pair tags (``:wide``), each entry checked. Only the
    page's conversations are read. Without entries the conversations' own listing indexes
    are walked. The cursor is one row comparison, ``(created_at, id) < (:after_created,
    :after_id)``, which both databases answer as an index range (an ``OR`` of the two
    conditions they would filter row by row). Built once per shape (the raw SQLite path
    compiles each statement object once).
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


def _attachment_namespaces(tenant_scoped: bool) -> Select[Any]:
    stmt = select(blob_refs.c.namespace).where(blob_refs.c.sha256 == bindparam("sha256"))
    if tenant_scoped:
        stmt = stmt.join(conversations, conversations.c.id == blob_refs.c.conversation_id).where(
            conversations.c.tenant == bindparam("for_tenant")
        )
    return stmt.distinct()


def _attachment_visible(tenant_scoped: bool) -> Select[Any]:
    return _attachment_namespaces(tenant_scoped).limit(1)


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


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements for one dialect."""

    # conversations
    insert_conversation: Insert
    insert_conversation_if_absent: Insert
    lock_conversation: Scoped[Select[Any]]
    """The header, locked for the rest of the transaction (``FOR UPDATE``; SQLite's write
    transactions hold the database lock already)."""
    select_conversation: Scoped[Select[Any]]
    select_summary: Scoped[Select[Any]]
    """The header and its message count (`convstore.store.listing.ConversationSummary`)."""
    advance_conversation: Update
    """Sets ``last_seq``, ``head_seq``, ``branched``, ``revision`` and ``updated_at``."""
    set_header: Update
    """Sets ``title``, ``metadata``, ``state``, ``revision`` and ``updated_at``."""
    delete_conversation: Scoped[Delete]
    insert_conversation_tags: Insert
    delete_conversation_tags: Delete
    # messages
    insert_message: Insert
    insert_blob_ref: Insert
    insert_attachment: Insert
    select_messages: Select[Any]
    """Every message of a conversation, by ``seq`` (the whole path of an unbranched one)."""
    select_messages_before: Select[Any]
    """The newest ``:n`` messages below ``:before`` by ``seq`` (windows of an unbranched one)."""
    select_path_window: Select[Any]
    select_path_up: Select[Any]
    select_meet: Select[Any]
    select_messages_in: Select[Any]
    """Messages whose ``seq`` is in the JSON array ``:seqs``."""
    select_message_keys: Select[Any]
    select_message_keys_before: Select[Any]
    select_path_window_keys: Select[Any]
    select_message_keys_in: Select[Any]
    """The four above as seqs only: what a load whose messages are mostly decoded already
    asks (`convstore.store.message_cache`)."""
    select_native: Select[Any]
    """(seq, message id, native record) of every message of a conversation, by ``seq``."""
    select_native_before: Select[Any]
    """The same for the newest ``:n`` below ``:before`` by ``seq`` (an unbranched window)."""
    select_native_path_window: Select[Any]
    """The same for the newest ``:n`` below ``:before`` on the path ending at ``:head``."""
    select_tree: Select[Any]
    """Every message's ``seq``, ``parent_seq``, role and time: the shape of the tree."""
    select_message_by_id: Select[Any]
    find_message: Scoped[Select[Any]]
    select_child: Select[Any]
    """A child of message ``:seq``, if it has one: two index lookups, never a scan (the
    message ``:seq + 1``, or a child found by ``ix_messages_branch_children``)."""
    delete_message: Delete
    delete_calls_of: Delete
    """The calls message ``:seq`` made (ids in ``:ids``): nothing cascades from a message to its
    calls (see `convstore.db.schema.tool_calls`)."""
    message_id_taken: Select[Any]
    """Which of the JSON array ``:ids`` of application message ids a conversation holds."""
    copy_messages: Select[Any]
    """Full message rows (every column) whose ``seq`` is in ``:seqs``, for a fork."""
    # tool calls
    insert_tool_call: Insert
    select_tool_call: Select[Any]
    select_tool_calls: Select[Any]
    """Every call of a conversation."""
    select_tool_calls_in: Select[Any]
    """The calls whose ids are in the JSON array ``:ids``."""
    select_lifecycles_in: Select[Any]
    """(id, seq, status, result_kind, result_seq, result_idx, cancelled_at) of the calls in
    ``:ids``."""
    select_call_states: Select[Any]
    """`LIFECYCLE_COLUMNS` of every call of a conversation."""
    select_call_states_in: Select[Any]
    """`LIFECYCLE_COLUMNS` of the calls whose ids are in the JSON array ``:ids``."""
    select_call_states_reaching_back: Select[Any]
    """`select_call_states_in`, then name, provider id and arguments of the calls made before
    ``:first`` (for a window answering calls it did not make, and has no part of)."""
    copy_tool_calls: Select[Any]
    set_lifecycle: Update
    """Sets a call's status, result and completion time (a result stored, a path switched,
    a result popped)."""
    interrupt_pending: Update
    select_pending: Select[Any]
    cancel_pending: Update
    cancel_call: Update
    # compactions and idempotency keys
    insert_compaction: Insert
    select_compactions: Select[Any]
    copy_compactions: Select[Any]
    insert_compaction_row: Insert
    insert_append_key: Insert
    select_append_key: Select[Any]
    # blob references (gc, fsck, tenancy checks)
    select_blob_refs: Select[Any]
    select_referenced_blobs: Select[Any]
    """Every (namespace, sha256) some message references."""
    select_blob_namespaces: Select[Any]
    """(sha256, namespace) of every blob one conversation references."""
    select_blob_referenced_in: Select[Any]
    select_attachment_visible: Scoped[Select[Any]]
    """The namespace of a blob some conversation (of the tenant) references."""
    select_attachment_namespaces: Scoped[Select[Any]]
    """Every namespace in which conversations (of the tenant) reference a blob."""
    lock_attachment_shared: Select[Any]
    """A blob's catalogue row, locked against a collector (``FOR SHARE``; SQLite: its
    write transactions exclude each other already)."""
    lock_attachments_exclusive: Select[Any]
    """The catalogue rows of the digests in the JSON array ``:digests``, locked against appends
    referencing them (``FOR UPDATE``), in digest order (the order appends lock them in)."""
    select_blobs_referenced_in: Select[Any]
    """Which digests of ``:digests`` some part references in namespace ``:namespace``."""
    select_setting: Select[Any]
    insert_setting_if_absent: Insert
    delete_setting: Delete
    catalogue_attachments: Insert
    """A placeholder catalogue row (size 0, ``created_at`` ``:stamp``) for each digest of
    ``:digests`` that has none; existing rows are left as they are."""
    mark_tombstones: Insert
    """A mark (``deleted_at`` NULL, ``created_at`` ``:stamp``) in namespace ``:ns`` for each
    digest of ``:digests``, which must have none (`delete_tombstones_in` first)."""
    delete_tombstones_in: Delete
    """The marks of the digests of ``:digests`` in namespace ``:ns``."""
    finish_tombstones_in: Update
    """Record when (``:deleted_at``, storage clock) the bytes of the digests of ``:digests`` in
    namespace ``:ns`` were deleted."""
    delete_unreferenced_attachments_in: Delete
    """The catalogue rows of the digests of ``:digests`` that no part references any more."""
    finish_tombstone: Update
    """Record when (storage clock) a marked blob's bytes were deleted."""
    purge_tombstones: Delete
    select_tombstone: Select[Any]

    @classmethod
    def for_dialect(cls, dialect_name: str) -> Statements:
        """Build every statement for ``dialect_name`` (``sqlite`` or ``postgresql``)."""
        conv = conversations.c
        msg = messages.c
        call = tool_calls.c
        cid: Any = bindparam("cid")
        seqs = _json_list(dialect_name, "seqs", integers=True)
        ids = _json_list(dialect_name, "ids")
        digests = _json_list(dialect_name, "digests")
        digest_values = digests.subquery()
        seq_in = msg.seq.in_(seqs)
        return cls(
            insert_conversation=insert(conversations),
            insert_conversation_if_absent=_upsert_ignore(dialect_name, conversations),
            lock_conversation=_scoped(
                lambda s: select(*CONVERSATION_COLUMNS).where(_by_conversation(s)).with_for_update()
            ),
            select_conversation=_scoped(
                lambda s: select(*CONVERSATION_COLUMNS).where(_by_conversation(s))
            ),
            select_summary=_scoped(
                lambda s: select(*CONVERSATION_COLUMNS, _message_count()).where(_by_conversation(s))
            ),
            advance_conversation=update(conversations)
            .where(conv.id == cid)
            .values(
                last_seq=bindparam("last_seq"),
                head_seq=bindparam("head_seq"),
                branched=bindparam("branched"),
                revision=bindparam("revision"),
                updated_at=bindparam("now"),
            ),
            set_header=update(conversations)
            .where(conv.id == cid)
            .values(
                title=bindparam("title"),
                metadata=bindparam("metadata", type_=conversations.c.metadata.type),
                state=bindparam("state", type_=conversations.c.state.type),
                revision=bindparam("revision"),
                updated_at=bindparam("now"),
            ),
            delete_conversation=_scoped(lambda s: delete(conversations).where(_by_conversation(s))),
            insert_conversation_tags=insert(conversation_tags),
            delete_conversation_tags=delete(conversation_tags).where(
                conversation_tags.c.conversation_id == cid
            ),
            insert_message=insert(messages),
            insert_blob_ref=_upsert_ignore(dialect_name, blob_refs),
            insert_attachment=_upsert_ignore(dialect_name, attachments),
            select_messages=_chain(*MESSAGE_COLUMNS),
            select_messages_before=_chain_before(*MESSAGE_COLUMNS),
            select_path_window=_path_window(*MESSAGE_COLUMNS),
            select_path_up=_path_up(),
            select_meet=_meet(),
            select_native=_chain(*_NATIVE_COLUMNS),
            select_native_before=_chain_before(*_NATIVE_COLUMNS),
            select_native_path_window=_path_window(*_NATIVE_COLUMNS),
            select_messages_in=select(*MESSAGE_COLUMNS)
            .where(msg.conversation_id == cid)
            .where(seq_in)
            .order_by(msg.seq),
            select_message_keys=_chain(*MESSAGE_KEY_COLUMNS),
            select_message_keys_before=_chain_before(*MESSAGE_KEY_COLUMNS),
            select_path_window_keys=_path_window(*MESSAGE_KEY_COLUMNS),
            select_message_keys_in=select(*MESSAGE_KEY_COLUMNS)
            .where(msg.conversation_id == cid)
            .where(seq_in)
            .order_by(msg.seq),
            select_tree=select(msg.seq, msg.parent_seq, msg.role, msg.created_at)
            .where(msg.conversation_id == cid)
            .order_by(msg.seq),
            select_message_by_id=select(*MESSAGE_COLUMNS)
            .where(msg.conversation_id == cid)
            .where(msg.message_id == bindparam("message_id")),
            find_message=_scoped(_find_message),
            select_child=_child(),
            delete_message=delete(messages)
            .where(msg.conversation_id == cid)
            .where(msg.seq == bindparam("seq")),
            delete_calls_of=delete(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids))
            .where(call.seq == bindparam("seq")),
            message_id_taken=select(msg.message_id)
            .where(msg.conversation_id == cid)
            .where(msg.message_id.in_(ids)),
            copy_messages=select(messages).where(msg.conversation_id == cid).where(seq_in),
            insert_tool_call=insert(tool_calls),
            select_tool_call=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == cid)
            .where(call.id == bindparam("call_id")),
            select_tool_calls=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == cid)
            .order_by(call.seq, call.idx),
            select_tool_calls_in=select(*_TOOL_CALL_COLUMNS)
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids))
            .order_by(call.seq, call.idx),
            # No ORDER BY: a load orders calls by the messages and parts that made them.
            select_call_states=select(*LIFECYCLE_COLUMNS).where(call.conversation_id == cid),
            select_call_states_in=select(*LIFECYCLE_COLUMNS)
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids)),
            select_call_states_reaching_back=select(
                *LIFECYCLE_COLUMNS,
                *(case((call.seq < bindparam("first"), c)) for c in _MADE_BEFORE_COLUMNS),
            )
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids)),
            select_lifecycles_in=select(
                call.id,
                call.seq,
                call.status,
                call.result_kind,
                call.result_seq,
                call.result_idx,
                call.cancelled_at,
            )
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids)),
            copy_tool_calls=select(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.id.in_(ids)),
            set_lifecycle=update(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.id == bindparam("call_id"))
            .values(
                status=bindparam("status"),
                result_kind=bindparam("result_kind"),
                result_seq=bindparam("result_seq"),
                result_idx=bindparam("result_idx"),
                completed_at=bindparam("completed_at"),
            ),
            interrupt_pending=update(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.status == _PENDING)
            .where(call.seq < bindparam("before_seq"))
            .values(status="interrupted", completed_at=bindparam("now")),
            select_pending=select(call.id, call.seq)
            .where(call.conversation_id == cid)
            .where(call.status == _PENDING)
            .order_by(call.seq, call.idx),
            cancel_pending=update(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.status == _PENDING)
            .values(
                status="cancelled", completed_at=bindparam("now"), cancelled_at=bindparam("now")
            )
            .returning(call.id, call.seq, call.idx),
            cancel_call=update(tool_calls)
            .where(call.conversation_id == cid)
            .where(call.id == bindparam("call_id"))
            .values(
                status="cancelled", completed_at=bindparam("now"), cancelled_at=bindparam("now")
            ),
            insert_compaction=insert(compactions).from_select(
                ["conversation_id", "id", "through_seq", "summary", "created_at"],
                select(
                    cid,
                    func.coalesce(func.max(compactions.c.id), 0) + 1,
                    bindparam("through_seq"),
                    bindparam("summary"),
                    bindparam("now", type_=compactions.c.created_at.type),
                ).where(compactions.c.conversation_id == cid),
            ),
            select_compactions=select(
                compactions.c.through_seq, compactions.c.summary, compactions.c.created_at
            )
            .where(compactions.c.conversation_id == cid)
            .order_by(compactions.c.id),
            copy_compactions=select(compactions)
            .where(compactions.c.conversation_id == cid)
            .where(compactions.c.through_seq <= bindparam("at_seq"))
            .order_by(compactions.c.id),
            insert_compaction_row=insert(compactions),
            insert_append_key=insert(append_keys),
            select_append_key=select(append_keys.c.first_seq, append_keys.c.count)
            .where(append_keys.c.conversation_id == cid)
            .where(append_keys.c.key == bindparam("key")),
            select_blob_refs=select(blob_refs)
            .where(blob_refs.c.conversation_id == cid)
            .where(blob_refs.c.seq.in_(seqs)),
            select_referenced_blobs=select(blob_refs.c.namespace, blob_refs.c.sha256).distinct(),
            select_blob_namespaces=select(blob_refs.c.sha256, blob_refs.c.namespace)
            .where(blob_refs.c.conversation_id == cid)
            .distinct(),
            select_blob_referenced_in=select(blob_refs.c.seq)
            .where(blob_refs.c.sha256 == bindparam("sha256"))
            .where(blob_refs.c.namespace == bindparam("namespace"))
            .limit(1),
            select_attachment_visible=_scoped(_attachment_visible),
            select_attachment_namespaces=_scoped(_attachment_namespaces),
            lock_attachment_shared=select(attachments.c.sha256)
            .where(attachments.c.sha256 == bindparam("sha256"))
            .with_for_update(read=True),
            lock_attachments_exclusive=select(attachments.c.sha256)
            .where(attachments.c.sha256.in_(digests))
            .order_by(attachments.c.sha256)
            .with_for_update(),
            select_blobs_referenced_in=select(blob_refs.c.sha256)
            .distinct()
            .where(blob_refs.c.namespace == bindparam("namespace"))
            .where(blob_refs.c.sha256.in_(digests)),
            select_setting=select(settings.c.value).where(settings.c.key == bindparam("key")),
            insert_setting_if_absent=_upsert_ignore(dialect_name, settings),
            delete_setting=delete(settings).where(settings.c.key == bindparam("key")),
            catalogue_attachments=_upsert_ignore(dialect_name, attachments).from_select(
                list(attachments.c.keys()),
                select(
                    digest_values.c[0],
                    literal(0, BigInteger),
                    literal("application/octet-stream"),
                    bindparam("stamp", type_=attachments.c.created_at.type),
                )
                # SQLite reads ``ON CONFLICT`` after a bare ``FROM`` as a join constraint.
                .where(true())
                .order_by(digest_values.c[0]),  # the order appends lock catalogue rows in
            ),
            mark_tombstones=insert(blob_tombstones).from_select(
                list(blob_tombstones.c.keys()),
                select(
                    bindparam("ns", type_=blob_tombstones.c.namespace.type),
                    digest_values.c[0],
                    bindparam("stamp", type_=blob_tombstones.c.created_at.type),
                    null(),
                ),
            ),
            delete_tombstones_in=delete(blob_tombstones)
            .where(blob_tombstones.c.namespace == bindparam("ns"))
            .where(blob_tombstones.c.sha256.in_(digests)),
            # Parameters named apart from the columns: SQLAlchemy reserves column names in the
            # SET clause of an UPDATE for the values it sets.
            finish_tombstones_in=update(blob_tombstones)
            .where(blob_tombstones.c.namespace == bindparam("ns"))
            .where(blob_tombstones.c.sha256.in_(digests))
            .values(deleted_at=bindparam("deleted_at")),
            delete_unreferenced_attachments_in=delete(attachments)
            .where(attachments.c.sha256.in_(digests))
            .where(
                ~select(blob_refs.c.sha256)
                .where(blob_refs.c.sha256 == attachments.c.sha256)
                .exists()
            ),
            finish_tombstone=update(blob_tombstones)
            .where(blob_tombstones.c.namespace == bindparam("ns"))
            .where(blob_tombstones.c.sha256 == bindparam("digest"))
            .values(deleted_at=bindparam("deleted_at")),
            purge_tombstones=delete(blob_tombstones).where(
                blob_tombstones.c.deleted_at < bindparam("before")
            ),
            select_tombstone=select(blob_tombstones.c.deleted_at)
            .where(blob_tombstones.c.namespace == bindparam("ns"))
            .where(blob_tombstones.c.sha256 == bindparam("digest")),
        )
