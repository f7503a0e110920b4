"""The store: `ConversationStore`, the single write boundary, and the operations behind it.

The public face (each method checks its arguments, opens one transaction, calls one function):

- ``conversation_store``: `ConversationStore`: messages, tool results, rendering, attachments,
  export, erase and prune.
- ``connection``: the backend, blob store and message cache of a store; open and close.
- ``conversation_methods``: the methods on conversations as a whole (create, list, search,
  update, delete).
- ``history_methods``: the methods that edit a history (pop, truncate, fork, branches, compact).
- ``retention_methods``: the methods that delete by policy (erase a tenant, prune by age).
- ``arguments``: arguments checked and turned into model values, before any storage is touched.

Writes, each a function of one transaction:

- ``header_lock``: a write's hold on its conversation: lock the header row, advance its revision.
- ``writes``: appending a batch against its stored path (blob references, branches), cancel,
  compact, delete.
- ``batch``: a batch as rows: its messages walked in order, every call's lifecycle decided.
- ``conversations``: conversation headers: create, get-or-create, title, metadata, state patches.
- ``branches``: undo, fork and switching branches; the lifecycles a moved head settles.
- ``lifecycle``: the tool-call state machine, as pure functions.
- ``appending``: the general append path: files into the blob store, then rows; gc retries.
- ``tree_writes``: a whole tree of messages (restore, importers) through the same checks.
- ``gc_retry``: files first, then rows, retried when garbage collection races the files.
- ``lean_append``: SQLite's lean append (planned before the hop), falling back to ``writes``.
- ``one_statement``: PostgreSQL's append in one statement, falling back to ``writes``.
- ``planning``: planning an append's rows without running a statement (for the two above).
- ``metadata_tags``: one tag row per metadata entry, so metadata filters are index ranges.

Reads, each a function of one read transaction:

- ``reads``: loading a path (or a window of it), messages by seq or id, branches, blob lookups.
- ``one_statement_load``: PostgreSQL's loads and windows in one statement (no transaction).
- ``listing``: conversation summaries, pages and cursors (``list_conversations``).
- ``native``: the native records of a path, without building messages (integrations).
- ``search``: full-text search over messages and conversation titles.
- ``search_index``: keeping the deferred search index caught up (at search time, when idle).
- ``paths``: walking the message tree by parent pointers, only as far as a question needs.
- ``message_cache``: decoded messages kept per (conversation, seq): a reload decodes only news.
- ``message_reads``: a load's message rows, decoded through the message cache.

Blobs and the rest:

- ``attachments``: attachment bytes: stored before the rows that reference them, read back.
- ``maintenance``: garbage collection, ``fsck`` and recording the blob location.
- ``export``: conversations and their blobs written to one zip archive.
- ``restore``: an export archive restored, every conversation exactly as it was.
- ``archive_checks``: an archive's rows checked as ``append`` checks what it writes.
- ``archive_rows``: a conversation's rows as portable JSON and back (export and restore).
- ``erase``: every row of a tenant deleted in one transaction (``erase_tenant``).
- ``released_blobs``: blobs an erase released, deleted by the next gc whatever their age.
- ``prune``: conversations nobody wrote to within a period, deleted.
- ``documents``: a whole conversation as one JSON document (``show --json``).
- ``settings``: store-wide settings kept in the database (where the blobs live).
- ``checkpoints``: LangGraph checkpoints kept with their conversations.
- ``tools``: tool definitions kept with a conversation, in its metadata.
- ``results``: what writes hand back beyond the stored values (`AppendResult`).
- ``ids``: identifiers the store mints.

The names below load their modules on first use (module ``__getattr__``, as ``convstore``
does): a process that only searches loads the search and its connection, not the append
pipeline or the renderers behind `ConversationStore`'s other methods.
"""

from __future__ import annotations

from convstore._lazy import lazy_attributes

# Not `typing.TYPE_CHECKING` (see ``convstore/__init__.py``); type checkers treat it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from convstore.store.conversation_store import (
        DEFAULT_MAX_ATTACHMENT_SIZE,
        ConversationStore,
    )
    from convstore.store.conversations.listing import ConversationPage, ConversationSummary
    from convstore.store.load.native import NativeEntry, NativePath
    from convstore.store.maintenance.garbage import (
        FsckReport,
        GarbageReport,
        collect_garbage,
        fsck,
        record_blob_location,
    )
    from convstore.store.results import AppendResult
    from convstore.store.search import SearchHit, SearchPage

_LAZY: dict[str, str] = {
    "DEFAULT_MAX_ATTACHMENT_SIZE": "convstore.store.conversation_store",
    "ConversationStore": "convstore.store.conversation_store",
    "ConversationPage": "convstore.store.conversations.listing",
    "ConversationSummary": "convstore.store.conversations.listing",
    "FsckReport": "convstore.store.maintenance.garbage",
    "GarbageReport": "convstore.store.maintenance.garbage",
    "collect_garbage": "convstore.store.maintenance.garbage",
    "fsck": "convstore.store.maintenance.garbage",
    "record_blob_location": "convstore.store.maintenance.garbage",
    "NativeEntry": "convstore.store.load.native",
    "NativePath": "convstore.store.load.native",
    "AppendResult": "convstore.store.results",
    "SearchHit": "convstore.store.search",
    "SearchPage": "convstore.store.search",
}
"""Each lazily loaded name and the module that defines it."""

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_SIZE",
    "AppendResult",
    "ConversationPage",
    "ConversationStore",
    "ConversationSummary",
    "FsckReport",
    "GarbageReport",
    "NativeEntry",
    "NativePath",
    "SearchHit",
    "SearchPage",
    "collect_garbage",
    "fsck",
    "record_blob_location",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
