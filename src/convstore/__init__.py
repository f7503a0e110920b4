"""convstore: the conversation store for chat applications and agents.

Canonical, provider-neutral conversations stored as relational rows (SQLite by default,
PostgreSQL for deployments), attachment bytes in content-addressed fsspec storage, and a
renderer that turns any stored history into a request each LLM provider accepts.

Everything public is re-exported here; modules whose names start with an underscore, and
everything not listed in ``__all__``, may change without notice.

The names load their modules on first use (module ``__getattr__``, from ``_lazy``):
``import convstore`` costs only the error classes, so the command line and applications that
need a part of the library do not pay for the rest (SQLAlchemy, pydantic models, providers).
Type checkers read the imports under ``TYPE_CHECKING`` below; ``_LAZY`` must name the same
modules (``tests/test_public_api.py`` checks both against ``__all__``).

Packages: ``model`` (the canonical values), ``store`` (`ConversationStore`, the single write
boundary), ``db`` (schema, statements, backends), ``blobs`` (attachment bytes), ``transcript``
(the provider-neutral plan), ``providers`` (one module per wire format), ``integrations``
(frameworks), ``imports`` (other products' exports), ``web`` (the inspector), ``mcp`` (the MCP
server), ``cli`` (the command line), ``_compat`` (other libraries' internals).

Modules: ``errors`` (the error tree), ``capabilities`` (what each target accepts, as data),
``limits`` and ``message_checks`` (what a message may hold, and the check), ``parsing`` and
``rendering`` (wire JSON in, requests out), ``sync`` (a blocking facade), ``json_input`` and
``zip_input`` (untrusted JSON and zips read safely), ``media_types``, ``progress``, and the
private ``_lazy`` (names loaded on first use), ``_search_tool`` (search as an agent's
tool), ``_serving`` (uvicorn for ``serve`` and ``mcp``), ``_http_guard`` (how both servers read
a request's host and token), ``_words`` (counts in plain English).
"""

from __future__ import annotations

from convstore._lazy import lazy_attributes
from convstore.errors import (
    AsyncOnlyError,
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    AttachmentTooLargeError,
    BlobStorageError,
    ClosedError,
    ConflictError,
    ConversationNotFoundError,
    ConversationOwnedByAnotherTenantError,
    ConversationRefusedError,
    ConvstoreError,
    DatabaseError,
    DatabaseNotFoundError,
    ExportLimitError,
    InvalidInputError,
    InvalidMessageError,
    MalformedExportError,
    MalformedPayloadError,
    MediaTypeMismatchError,
    MessageNotFoundError,
    MissingDependencyError,
    NotFoundError,
    RevisionConflictError,
    SchemaError,
    SchemaOutOfDateError,
    StorageError,
    ToolCallConflictError,
    ToolCallNotFoundError,
    UnsupportedFormatError,
)

# Not `typing.TYPE_CHECKING`: importing typing costs a command line's startup more than the
# rest of this module; type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from convstore._search_tool import SEARCH_TOOL_PARAMETERS, SearchToolHit, search_tool
    from convstore.capabilities import TARGETS, Capabilities, capabilities_for
    from convstore.db import DEFAULT_URL, migrate
    from convstore.model import (
        AttachmentRef,
        Branch,
        Compaction,
        ContentOutput,
        Conversation,
        ErrorOutput,
        FilePart,
        JsonOutput,
        Message,
        MessageTree,
        NativeRecord,
        OrphanResult,
        Part,
        ResultKind,
        Role,
        TextPart,
        ThinkingPart,
        ToolCall,
        ToolCallPart,
        ToolCallStatus,
        ToolDefinition,
        ToolOutput,
        ToolResultPart,
        TreeNode,
        Usage,
        dump_messages,
        load_messages,
    )
    from convstore.parsing import parse, parse_response, parse_tools
    from convstore.rendering import Rendered, render
    from convstore.store import (
        AppendResult,
        ConversationPage,
        ConversationStore,
        ConversationSummary,
        FsckReport,
        GarbageReport,
        NativeEntry,
        NativePath,
        SearchHit,
        SearchPage,
        collect_garbage,
        fsck,
    )

_LAZY: dict[str, str] = {
    "SEARCH_TOOL_PARAMETERS": "convstore._search_tool",
    "SearchToolHit": "convstore._search_tool",
    "search_tool": "convstore._search_tool",
    "TARGETS": "convstore.capabilities",
    "Capabilities": "convstore.capabilities",
    "capabilities_for": "convstore.capabilities",
    "DEFAULT_URL": "convstore.db",
    "migrate": "convstore.db",
    "AttachmentRef": "convstore.model",
    "Branch": "convstore.model",
    "Compaction": "convstore.model",
    "ContentOutput": "convstore.model",
    "Conversation": "convstore.model",
    "ErrorOutput": "convstore.model",
    "FilePart": "convstore.model",
    "JsonOutput": "convstore.model",
    "Message": "convstore.model",
    "MessageTree": "convstore.model",
    "NativeRecord": "convstore.model",
    "OrphanResult": "convstore.model",
    "Part": "convstore.model",
    "ResultKind": "convstore.model",
    "Role": "convstore.model",
    "TextPart": "convstore.model",
    "ThinkingPart": "convstore.model",
    "ToolCall": "convstore.model",
    "ToolCallPart": "convstore.model",
    "ToolCallStatus": "convstore.model",
    "ToolDefinition": "convstore.model",
    "ToolOutput": "convstore.model",
    "ToolResultPart": "convstore.model",
    "TreeNode": "convstore.model",
    "Usage": "convstore.model",
    "dump_messages": "convstore.model",
    "load_messages": "convstore.model",
    "parse": "convstore.parsing",
    "parse_response": "convstore.parsing",
    "parse_tools": "convstore.parsing",
    "Rendered": "convstore.rendering",
    "render": "convstore.rendering",
    "AppendResult": "convstore.store",
    "ConversationPage": "convstore.store",
    "ConversationStore": "convstore.store",
    "ConversationSummary": "convstore.store",
    "FsckReport": "convstore.store",
    "GarbageReport": "convstore.store",
    "NativeEntry": "convstore.store",
    "NativePath": "convstore.store",
    "SearchHit": "convstore.store",
    "SearchPage": "convstore.store",
    "collect_garbage": "convstore.store",
    "fsck": "convstore.store",
}
"""Each lazily loaded public name and the module that defines it."""

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "SEARCH_TOOL_PARAMETERS",
    "TARGETS",
    "AppendResult",
    "AsyncOnlyError",
    "AttachmentCorruptedError",
    "AttachmentNotFoundError",
    "AttachmentRef",
    "AttachmentTooLargeError",
    "BlobStorageError",
    "Branch",
    "Capabilities",
    "ClosedError",
    "Compaction",
    "ConflictError",
    "ContentOutput",
    "Conversation",
    "ConversationNotFoundError",
    "ConversationOwnedByAnotherTenantError",
    "ConversationPage",
    "ConversationRefusedError",
    "ConversationStore",
    "ConversationSummary",
    "ConvstoreError",
    "DatabaseError",
    "DatabaseNotFoundError",
    "ErrorOutput",
    "ExportLimitError",
    "FilePart",
    "FsckReport",
    "GarbageReport",
    "InvalidInputError",
    "InvalidMessageError",
    "JsonOutput",
    "MalformedExportError",
    "MalformedPayloadError",
    "MediaTypeMismatchError",
    "Message",
    "MessageNotFoundError",
    "MessageTree",
    "MissingDependencyError",
    "NativeEntry",
    "NativePath",
    "NativeRecord",
    "NotFoundError",
    "OrphanResult",
    "Part",
    "Rendered",
    "ResultKind",
    "RevisionConflictError",
    "Role",
    "SchemaError",
    "SchemaOutOfDateError",
    "SearchHit",
    "SearchPage",
    "SearchToolHit",
    "StorageError",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolCallConflictError",
    "ToolCallNotFoundError",
    "ToolCallPart",
    "ToolCallStatus",
    "ToolDefinition",
    "ToolOutput",
    "ToolResultPart",
    "TreeNode",
    "UnsupportedFormatError",
    "Usage",
    "__version__",
    "capabilities_for",
    "collect_garbage",
    "dump_messages",
    "fsck",
    "load_messages",
    "migrate",
    "parse",
    "parse_response",
    "parse_tools",
    "render",
    "search_tool",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
