"""The canonical, provider-neutral conversation model.

Frozen pydantic v2 values, tagged by a literal ``kind`` (parts, outputs) or a `Role` enum
(messages). Nothing in this package does I/O or knows a provider's wire format; the store maps
these values to rows and the renderers map them to provider JSON.
"""

from convstore.model.content import AttachmentRef, FilePart, TextPart
from convstore.model.conversation import (
    Branch,
    Compaction,
    Conversation,
    OrphanResult,
    ToolCall,
    ToolCallStatus,
)
from convstore.model.messages import Message, Role
from convstore.model.outputs import ContentOutput, ErrorOutput, JsonOutput, ResultKind, ToolOutput
from convstore.model.parts import Part, ThinkingPart, ToolCallPart, ToolResultPart
from convstore.model.records import NativeRecord, Usage
from convstore.model.serialization import FORMAT_VERSION, dump_messages, load_messages
from convstore.model.tool_definitions import TOOL_DEFINITIONS, ToolDefinition
from convstore.model.tree import MessageTree, TreeNode

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
