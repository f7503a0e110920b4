"""Every statement the store runs, by table, and the set a backend runs for its dialect.

Where the SQL for each table lives (module-level Core statements, LangGraph's
``checkpoint-postgres`` style; builders, cached, where a statement depends on the dialect):

- ``conversations``: headers and metadata tags: create, lock, read, an append's head update,
  list pages, prune.
- ``messages``: an append's message rows, paths and windows, the tree's shape, message deletes,
  compactions, append keys.
- ``tool_calls``: call rows and lifecycles, pending, interrupted and cancelled calls.
- ``blobs``: blob references, the attachment catalogue, tombstones, releases.
- ``maintenance``: settings, a tenant's erase, a conversation's rows whole (export, restore).
- ``search_sql``: the search query as SQL text, one statement set per database (no
  SQLAlchemy: the command line's read-only search runs it through ``sqlite3``); ``search``:
  the same text as the store's statements.
- ``checkpoints``: LangGraph's checkpoint tables.
- ``_common``: what they share (tenant scoping, upserts, JSON lists, row positions).

This module holds `Statements`, the set a `Tx` carries.

Invariants:

- Statements are SQLAlchemy Core objects with named bind parameters. A `Tx` either compiles
  them to the driver's SQL (SQLite hot path) or executes them through SQLAlchemy (PostgreSQL);
  the SQL text has one source either way. No module outside ``convstore.db`` writes SQL.
- ``INSERT`` statements bind every column in table order, so the row builders in
  `convstore.store` produce plain tuples in `column_names(table)` order.
- Rows are read by name: each column list has a class of its positions beside it (`HeaderAt`,
  `MessageAt`, `LifecycleAt`, ...), derived from the list.
- Upserts use the dialect's own ``ON CONFLICT`` construct; nothing else is dialect-specific.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from convstore._lazy import lazy_attributes

# Not `typing.TYPE_CHECKING` (see ``convstore/__init__.py``); type checkers treat it as true.
# SQLAlchemy and the table modules load when a backend asks for its statements (`for_dialect`)
# or a name of ``_common`` is first used: ``search_sql`` is imported without them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from sqlalchemy import Delete, Insert, Select, TextClause, Update

    from convstore.db.statements._common import Scoped, column_names

__all__ = ["Scoped", "Statements", "column_names"]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "Scoped": "convstore.db.statements._common",
        "column_names": "convstore.db.statements._common",
    },
    globals(),
    __all__,
)


@dataclass(frozen=True, slots=True)
class Statements:
    """The store's statements for one dialect: what a `Tx` carries (``tx.statements``).

    Each field is the statement of the same name in its table's module (upper case there, or
    its builder called with the dialect).
    """

    # conversations
    insert_conversation: Insert
    insert_conversation_if_absent: Insert
    lock_conversation: Scoped[Select[Any]]
    """The header, locked for the rest of the transaction (``FOR UPDATE``; SQLite's write
    transactions hold the database lock already)."""
    select_conversation: Scoped[Select[Any]]
    select_summary: Scoped[Select[Any]]
    """The header and its message count (`ConversationSummary`: `convstore.store.conversations`)."""
    advance_conversation: Update
    """Sets ``last_seq``, ``head_seq``, ``branched``, ``revision`` and ``updated_at``."""
    set_header: Update
    """Sets ``title``, ``metadata``, ``state``, ``revision`` and ``updated_at``."""
    delete_conversation: Scoped[Delete]
    insert_conversation_tags: Insert
    delete_conversation_tags: Delete
    # messages
    insert_message: Insert
    queue_for_search: TextClause | None
    """PostgreSQL: queue inserted messages for the search index (`convstore.db.search_queue`);
    ``None`` on SQLite, whose index needs no queue."""
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
    asks (`convstore.store.load.message_cache`)."""
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
        """The statements for ``dialect_name`` (``sqlite`` or ``postgresql``)."""
        from convstore.db.statements import blobs as b
        from convstore.db.statements import conversations as c
        from convstore.db.statements import maintenance as mt
        from convstore.db.statements import messages as m
        from convstore.db.statements import search
        from convstore.db.statements import tool_calls as t

        d = dialect_name
        return cls(
            insert_conversation=c.INSERT_CONVERSATION,
            insert_conversation_if_absent=c.insert_conversation_if_absent(d),
            lock_conversation=c.LOCK_CONVERSATION,
            select_conversation=c.SELECT_CONVERSATION,
            select_summary=c.SELECT_SUMMARY,
            advance_conversation=c.ADVANCE_CONVERSATION,
            set_header=c.SET_HEADER,
            delete_conversation=c.DELETE_CONVERSATION,
            insert_conversation_tags=c.INSERT_CONVERSATION_TAGS,
            delete_conversation_tags=c.DELETE_CONVERSATION_TAGS,
            insert_message=m.INSERT_MESSAGE,
            queue_for_search=None if d == "sqlite" else search.QUEUE,
            insert_blob_ref=b.insert_blob_ref(d),
            insert_attachment=b.insert_attachment(d),
            select_messages=m.SELECT_MESSAGES,
            select_messages_before=m.SELECT_MESSAGES_BEFORE,
            select_path_window=m.SELECT_PATH_WINDOW,
            select_path_up=m.SELECT_PATH_UP,
            select_meet=m.SELECT_MEET,
            select_native=m.SELECT_NATIVE,
            select_native_before=m.SELECT_NATIVE_BEFORE,
            select_native_path_window=m.SELECT_NATIVE_PATH_WINDOW,
            select_messages_in=m.select_messages_in(d),
            select_message_keys=m.SELECT_MESSAGE_KEYS,
            select_message_keys_before=m.SELECT_MESSAGE_KEYS_BEFORE,
            select_path_window_keys=m.SELECT_PATH_WINDOW_KEYS,
            select_message_keys_in=m.select_message_keys_in(d),
            select_tree=m.SELECT_TREE,
            select_message_by_id=m.SELECT_MESSAGE_BY_ID,
            find_message=m.FIND_MESSAGE,
            select_child=m.SELECT_CHILD,
            delete_message=m.DELETE_MESSAGE,
            delete_calls_of=t.delete_calls_of(d),
            message_id_taken=m.message_id_taken(d),
            copy_messages=m.copy_messages(d),
            insert_tool_call=t.INSERT_TOOL_CALL,
            select_tool_call=t.SELECT_TOOL_CALL,
            select_tool_calls=t.SELECT_TOOL_CALLS,
            select_tool_calls_in=t.select_tool_calls_in(d),
            select_call_states=t.SELECT_CALL_STATES,
            select_call_states_in=t.select_call_states_in(d),
            select_call_states_reaching_back=t.select_call_states_reaching_back(d),
            select_lifecycles_in=t.select_lifecycles_in(d),
            copy_tool_calls=t.copy_tool_calls(d),
            set_lifecycle=t.SET_LIFECYCLE,
            interrupt_pending=t.INTERRUPT_PENDING,
            select_pending=t.SELECT_PENDING,
            cancel_pending=t.CANCEL_PENDING,
            cancel_call=t.CANCEL_CALL,
            insert_compaction=m.INSERT_COMPACTION,
            select_compactions=m.SELECT_COMPACTIONS,
            copy_compactions=m.COPY_COMPACTIONS,
            insert_compaction_row=m.INSERT_COMPACTION_ROW,
            insert_append_key=m.INSERT_APPEND_KEY,
            select_append_key=m.SELECT_APPEND_KEY,
            select_blob_refs=b.select_blob_refs(d),
            select_referenced_blobs=b.SELECT_REFERENCED_BLOBS,
            select_blob_namespaces=b.SELECT_BLOB_NAMESPACES,
            select_blob_referenced_in=b.SELECT_BLOB_REFERENCED_IN,
            select_attachment_visible=b.SELECT_ATTACHMENT_VISIBLE,
            select_attachment_namespaces=b.SELECT_ATTACHMENT_NAMESPACES,
            lock_attachment_shared=b.LOCK_ATTACHMENT_SHARED,
            lock_attachments_exclusive=b.lock_attachments_exclusive(d),
            select_blobs_referenced_in=b.select_blobs_referenced_in(d),
            select_setting=mt.SELECT_SETTING,
            insert_setting_if_absent=mt.insert_setting_if_absent(d),
            delete_setting=mt.DELETE_SETTING,
            catalogue_attachments=b.catalogue_attachments(d),
            mark_tombstones=b.mark_tombstones(d),
            delete_tombstones_in=b.delete_tombstones_in(d),
            finish_tombstones_in=b.finish_tombstones_in(d),
            delete_unreferenced_attachments_in=b.delete_unreferenced_attachments_in(d),
            finish_tombstone=b.FINISH_TOMBSTONE,
            purge_tombstones=b.PURGE_TOMBSTONES,
            select_tombstone=b.SELECT_TOMBSTONE,
        )
