"""The store: `ConversationStore`, the single write boundary, and the operations behind it.

``writes`` and ``reads`` hold the operations as functions of one transaction; ``lifecycle``
the tool-call state machine; ``attachments`` the blobs-before-rows step.
"""

from convstore.store.conversation_store import DEFAULT_MAX_ATTACHMENT_SIZE, ConversationStore
from convstore.store.maintenance import (
    FsckReport,
    GarbageReport,
    collect_garbage,
    fsck,
    record_blob_location,
)
from convstore.store.native import NativeEntry, NativePath
from convstore.store.reads import ConversationPage, ConversationSummary
from convstore.store.results import AppendResult
from convstore.store.search import SearchHit, SearchPage

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
