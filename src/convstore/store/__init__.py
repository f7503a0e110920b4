"""The store: `ConversationStore`, the single write boundary, and the operations behind it.

The public face (each method checks its arguments, opens one transaction, calls one function of
a package below):

- ``conversation_store``: `ConversationStore`: messages, tool results, rendering, attachments,
  export; assembled with the methods of ``conversations``, ``history`` and ``maintenance``.
- ``_connection``: the backend, blob store and message cache of a store; open and close.
- ``_arguments``: arguments checked and turned into model values, before any storage is touched.
- ``_results``: what writes hand back beyond the stored values (`AppendResult`).
- ``ids``: identifiers the store mints.
- ``_settings``: store-wide settings kept in the database (where the blobs live).
- ``attachments``: attachment bytes: stored before the rows that reference them, read back
  hash-verified (appends, restores, checkpoints and renders all go through it).
- ``search``: full-text search over messages and conversation titles.
- ``_search_index``: keeping the deferred search index caught up (at search time, when idle).
- ``checkpoints``: LangGraph checkpoints kept with their conversations (``store.checkpoints``).

The operations, one package per process (each ``__init__`` says what its modules hold):

- ``append``: the one append pipeline: routing, planning, the SQLite and PostgreSQL fast steps,
  the general write, whole trees (restore, importers), the gc retry, the header lock.
- ``history``: pop, truncate, switch, fork, and every tool-call lifecycle rule (``lifecycle``).
- ``load``: a path or window read back: reads, PostgreSQL's one-statement loads, the message
  cache, native records, walks of the tree.
- ``conversations``: conversations as a whole: headers, metadata tags, tools, listings.
- ``maintenance``: garbage collection, fsck, released blobs, erase and prune.
- ``transfer``: export, restore, archive rows and their checks, the ``show --json`` document.

The names below load their modules on first use (module ``__getattr__``, as ``convstore``
does): a process that only searches loads the search and its connection, not the append
pipeline or the renderers behind `ConversationStore`'s other methods.
"""

from __future__ import annotations

from convstore._lazy import lazy_attributes

# Not `typing.TYPE_CHECKING` (see ``convstore/__init__.py``); type checkers treat it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from convstore.store._results import AppendResult
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
    "AppendResult": "convstore.store._results",
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
