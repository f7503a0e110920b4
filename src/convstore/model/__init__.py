"""The canonical, provider-neutral conversation model.

Frozen pydantic v2 values, tagged by a literal ``kind`` (parts, outputs) or a `Role` enum
(messages). Nothing in this package does I/O or knows a provider's wire format; the store maps
these values to rows and the renderers map them to provider JSON.

The names load their modules on first use (module ``__getattr__``, as ``convstore`` does):
reading a `Role` or a `TreeNode` does not build the pydantic models.

- ``messages``: `Message`: a role, an ordered list of parts, and where they came from.
- ``roles``: `Role`, a plain enum with no pydantic behind it.
- ``parts``: message parts (text, files, thinking, tool calls, tool results), one tagged union.
- ``content``: parts that appear both in messages and inside a `ContentOutput`.
- ``outputs``: typed tool outputs and the ``result_kind`` that names which one a result holds.
- ``records``: what a message carries beside its parts: native record and token usage.
- ``conversation``: a loaded conversation, its tool-call lifecycles and compaction records.
- ``tree``: `MessageTree`, the shape of a history without the messages' contents.
- ``tool_definitions``: what a request offers the model to call, independent of any provider.
- ``serialization``: the stable, versioned JSON form of messages.
- ``_base``: the base every model class shares (trusted construction, validation wording).
"""

from __future__ import annotations

from convstore._lazy import lazy_attributes

# Not `typing.TYPE_CHECKING` (see ``convstore/__init__.py``); type checkers treat it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from convstore.model.content import AttachmentRef, FilePart, TextPart
    from convstore.model.conversation import (
        Branch,
        Compaction,
        Conversation,
        OrphanResult,
        ToolCall,
        ToolCallStatus,
    )
    from convstore.model.messages import Message
    from convstore.model.outputs import (
        ContentOutput,
        ErrorOutput,
        JsonOutput,
        ResultKind,
        ToolOutput,
    )
    from convstore.model.parts import Part, ThinkingPart, ToolCallPart, ToolResultPart
    from convstore.model.records import NativeRecord, Usage
    from convstore.model.roles import Role
    from convstore.model.serialization import FORMAT_VERSION, dump_messages, load_messages
    from convstore.model.tool_definitions import TOOL_DEFINITIONS, ToolDefinition
    from convstore.model.tree import MessageTree, TreeNode

_LAZY: dict[str, str] = {
    "AttachmentRef": "convstore.model.content",
    "FilePart": "convstore.model.content",
    "TextPart": "convstore.model.content",
    "Branch": "convstore.model.conversation",
    "Compaction": "convstore.model.conversation",
    "Conversation": "convstore.model.conversation",
    "OrphanResult": "convstore.model.conversation",
    "ToolCall": "convstore.model.conversation",
    "ToolCallStatus": "convstore.model.conversation",
    "Message": "convstore.model.messages",
    "Role": "convstore.model.roles",
    "ContentOutput": "convstore.model.outputs",
    "ErrorOutput": "convstore.model.outputs",
    "JsonOutput": "convstore.model.outputs",
    "ResultKind": "convstore.model.outputs",
    "ToolOutput": "convstore.model.outputs",
    "Part": "convstore.model.parts",
    "ThinkingPart": "convstore.model.parts",
    "ToolCallPart": "convstore.model.parts",
    "ToolResultPart": "convstore.model.parts",
    "NativeRecord": "convstore.model.records",
    "Usage": "convstore.model.records",
    "FORMAT_VERSION": "convstore.model.serialization",
    "dump_messages": "convstore.model.serialization",
    "load_messages": "convstore.model.serialization",
    "TOOL_DEFINITIONS": "convstore.model.tool_definitions",
    "ToolDefinition": "convstore.model.tool_definitions",
    "MessageTree": "convstore.model.tree",
    "TreeNode": "convstore.model.tree",
}
"""Each lazily loaded name and the module that defines it."""

__all__ = [
    "FORMAT_VERSION",
    "TOOL_DEFINITIONS",
    "AttachmentRef",
    "Branch",
    "Compaction",
    "ContentOutput",
    "Conversation",
    "ErrorOutput",
    "FilePart",
    "JsonOutput",
    "Message",
    "MessageTree",
    "NativeRecord",
    "OrphanResult",
    "Part",
    "ResultKind",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolCallPart",
    "ToolCallStatus",
    "ToolDefinition",
    "ToolOutput",
    "ToolResultPart",
    "TreeNode",
    "Usage",
    "dump_messages",
    "load_messages",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), __all__)
