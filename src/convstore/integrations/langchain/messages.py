"""LangChain messages as convstore messages, and back (for the LangGraph and LangChain packages).

A LangChain message (``langchain_core.messages.BaseMessage``) is stored as one canonical
`Message`: its role, its text and files as parts, an ``AIMessage``'s ``tool_calls`` as tool
calls and a ``ToolMessage`` as the result of its call (so tool lifecycles and ``store.render``
to any provider work), and the message's own JSON (``message_to_dict``) as the native record
(format ``langchain``), from which it is read back.

Invariants:

- Reading a stored message gives a message equal (``==``) to the one stored: a message whose
  JSON form does not rebuild an equal message (a value that is not JSON in its
  ``additional_kwargs``, say) is refused by `to_stored` (``None``), and the caller keeps it
  another way. Writing checks with the reader's own rebuild (`message_of_record`).
- Image, audio and file bytes inline in the content (base64 blocks, ``data:`` URLs, either base64
  alphabet as the sender wrote it) become canonical `FilePart` s, stored once as blobs, and are
  cut out of the record (`convstore.integrations._core.native_blobs`); reading puts the same
  text back.
- ``Message.id`` is the LangChain message id when it has one; the caller clears it where the
  conversation already holds that id for another message (an edit kept beside its original).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from convstore.errors import MissingDependencyError

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        message_to_dict,
        messages_from_dict,
    )
except ImportError as _missing:
    raise MissingDependencyError(__name__, "langchain-core", "langchain") from _missing
from pydantic import JsonValue, ValidationError

from convstore._compat.pydantic_internals import trusted_constructor
from convstore.errors import ConvstoreError, InvalidMessageError, ToolCallConflictError
from convstore.integrations._core.native_blobs import (
    Alphabet,
    InlineFile,
    decode_inline,
    externalize,
    restore,
)
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    NativeRecord,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from convstore.store import ConversationStore
from convstore.store.ids import new_id

__all__ = [
    "NATIVE_FORMAT",
    "append_stored",
    "from_records",
    "from_stored",
    "message_of_record",
    "resolving_repeats",
    "restore_records",
    "to_stored",
]

_T = TypeVar("_T")

NATIVE_FORMAT = "langchain"
"""The native record format of a stored LangChain message."""

_ROLES = {"human": Role.USER, "ai": Role.ASSISTANT, "system": Role.SYSTEM, "tool": Role.TOOL}
_CHAT_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
_FILE_TYPES = ("image", "audio", "file", "video")
# Where a content block keeps inline bytes: LangChain's v1 standard blocks (``base64``), its
# older data blocks (``source_type: base64`` with ``data``), OpenAI-style ``image_url`` blocks
# (a ``data:`` URL) and Anthropic-style ``source`` objects.
_BYTES_KEYS = ("base64", "data")


def _matcher(alphabet: Alphabet) -> Callable[[dict[str, JsonValue]], tuple[str, str | None] | None]:
    def match(node: dict[str, JsonValue]) -> tuple[str, str | None] | None:
        media = node.get("mime_type", node.get("media_type"))
        media_type = media if isinstance(media, str) else None
        url = node.get("url")
        if isinstance(url, str) and url[:5].lower() == "data:":
            return "url", media_type
        if node.get("type") in _FILE_TYPES or node.get("type") == "base64":
            for key in _BYTES_KEYS:
                text = node.get(key)
                if isinstance(text, str) and decode_inline(text, alphabet) is not None:
                    return key, media_type
        return None

    return match


def _files(record: JsonValue) -> tuple[JsonValue, list[InlineFile]]:
    """The record with inline bytes cut out, and the files (standard base64 or URL-safe)."""
    stripped, found = externalize(record, _matcher("standard"), "standard")
    return stripped, found


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = [
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
    ]
    return "".join(texts)


def _content_parts(content: Any, files: list[InlineFile]) -> list[TextPart | FilePart]:
    """Canonical parts of a message's content: its text blocks and its inline files, in order."""
    if isinstance(content, str):
        return [TextPart(text=content)] if content else []
    parts: list[TextPart | FilePart] = []
    pending = iter(files)
    for block in content:
        if isinstance(block, str):
            if block:
                parts.append(TextPart(text=block))
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
                parts.append(TextPart(text=block["text"]))
            elif kind in (*_FILE_TYPES, "image_url") and _holds_bytes(block):
                file = next(pending, None)
                if file is not None:
                    parts.append(file.part())
            elif kind in _FILE_TYPES and isinstance(url := block.get("url"), str):
                media = block.get("mime_type")
                parts.append(
                    FilePart.from_uri(url, media_type=media if isinstance(media, str) else None)
                )
    return parts


_RECORD_TYPES: dict[str, tuple[Callable[[dict[str, Any]], BaseMessage], frozenset[str]]] = {
    cls.model_fields["type"].default: (trusted_constructor(cls), frozenset(cls.model_fields))
    for cls in (HumanMessage, AIMessage, SystemMessage, ToolMessage, ChatMessage, FunctionMessage)
}
"""Record type -> a constructor that skips validation, and the fields a record must name."""


def message_of_record(record: Any) -> BaseMessage:
    """The message a ``message_to_dict`` record holds.

    The record of a message of a common type is its complete field values (a dump of a valid
    message), so it is rebuilt without validating it again, at a sixth of the cost of
    ``messages_from_dict``; `to_stored` keeps only messages this rebuilds equal. Other types
    (chunks, custom classes) and records naming other fields go through ``messages_from_dict``.
    """
    known = _RECORD_TYPES.get(record["type"]) if isinstance(record, dict) else None
    data = record.get("data") if known is not None else None
    if (
        known is None
        or not isinstance(data, dict)
        or data.keys() != known[1]
        or data["type"] != record["type"]
    ):
        return messages_from_dict([record])[0]
    # A dict of its own: the message's fields never share the record's (it may be kept).
    return known[0](dict(data))


def _holds_bytes(block: dict[str, Any]) -> bool:
    _, found = _files(block)
    return bool(found)


def to_stored(message: BaseMessage) -> Message | None:
    """The canonical message storing ``message``; ``None``: its JSON would not read back equal."""
    record: Any = message_to_dict(message)
    try:
        rebuilt = message_of_record(record)
        if type(rebuilt) is not type(message) or rebuilt != message:
            return None
        native_data, files = _files(record)
        native = NativeRecord(format=NATIVE_FORMAT, data=native_data)
    except (ValidationError, ValueError, TypeError, KeyError):
        return None
    try:
        return _canonical(message, native, files)
    except (ValidationError, ConvstoreError):
        # Canonical parts are a view for rendering: the record alone still reads back exactly.
        return Message(role=_role(message), id=_message_id(message), native=native)


def _role(message: BaseMessage) -> Role:
    if isinstance(message, ChatMessage):
        return _CHAT_ROLES.get(message.role, Role.USER)
    return _ROLES.get(message.type, Role.USER)


def _message_id(message: BaseMessage) -> str | None:
    mid = message.id
    return mid if isinstance(mid, str) and 1 <= len(mid) <= 255 else None


def _canonical(message: BaseMessage, native: NativeRecord, files: list[InlineFile]) -> Message:
    role = _role(message)
    mid = _message_id(message)
    if isinstance(message, ToolMessage):
        content = _content_parts(message.content, files)
        output: ErrorOutput | ContentOutput | JsonOutput
        if message.status == "error":
            output = ErrorOutput(message=_text_of(message.content))
        elif any(isinstance(part, FilePart) for part in content):
            output = ContentOutput(parts=content)
        else:
            output = JsonOutput(value=_text_of(message.content))
        result = ToolResultPart(call_id=message.tool_call_id, output=output, name=message.name)
        return Message(role=Role.TOOL, id=mid, parts=[result], native=native)
    parts: list[Any] = list(_content_parts(message.content, files))
    if isinstance(message, AIMessage):
        parts.extend(
            ToolCallPart(id=call_id, name=call["name"], arguments=call["args"])
            for call in message.tool_calls
            if (call_id := call.get("id"))
        )
    return Message(role=role, id=mid, parts=parts, native=native)


async def from_stored(
    messages: Sequence[Message], fetch: Callable[[FilePart], Awaitable[bytes]]
) -> list[BaseMessage]:
    """The LangChain messages ``messages`` store, files fetched back into their records.

    A message without a ``langchain`` record (written by something else) comes back from its
    canonical parts: its role and text, a tool result as a ``ToolMessage``.
    """
    records: list[JsonValue] = [
        m.native.data if m.native is not None and m.native.format == NATIVE_FORMAT else None
        for m in messages
    ]
    restored = await from_records(records, fetch)
    return [
        message if message is not None else _from_parts(stored)
        for stored, message in zip(messages, restored, strict=True)
    ]


async def from_records(
    records: Sequence[JsonValue], fetch: Callable[[FilePart], Awaitable[bytes]]
) -> list[BaseMessage | None]:
    """The LangChain messages of ``langchain`` native records (``None`` stays ``None``)."""
    restored = await restore_records(records, fetch)
    return [None if record is None else message_of_record(record) for record in restored]


async def restore_records(
    records: Sequence[JsonValue], fetch: Callable[[FilePart], Awaitable[bytes]]
) -> list[JsonValue]:
    """``langchain`` native records with their files' bytes put back (`message_of_record`)."""
    return await restore(list(records), fetch, "standard")


def _from_parts(message: Message) -> BaseMessage:
    text = "".join(part.text for part in message.parts if isinstance(part, TextPart))
    match message.role:
        case Role.SYSTEM:
            return SystemMessage(content=text, id=message.id)
        case Role.ASSISTANT:
            calls = [
                {"id": p.id, "name": p.name, "args": p.arguments, "type": "tool_call"}
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            return AIMessage(content=text, id=message.id, tool_calls=calls)
        case Role.TOOL:
            result = next(p for p in message.parts if isinstance(p, ToolResultPart))
            output = result.output
            body = output.message if isinstance(output, ErrorOutput) else _output_text(output)
            status = "error" if isinstance(output, ErrorOutput) else "success"
            return ToolMessage(
                content=body, tool_call_id=result.call_id, id=message.id, status=status
            )
        case Role.USER:
            return HumanMessage(content=text, id=message.id)


def _output_text(output: JsonOutput | ContentOutput) -> str:
    if isinstance(output, JsonOutput):
        return output.value if isinstance(output.value, str) else str(output.value)
    return "".join(p.text for p in output.parts if isinstance(p, TextPart))


async def append_stored(
    store: ConversationStore,
    conversation_id: str,
    batch: list[Message],
    *,
    tenant: str | None,
    parent_seq: int | None = None,
    renamed: dict[str, str] | None = None,
) -> list[int]:
    """Append ``batch`` (from `to_stored`); the seqs it was stored at (see `resolving_repeats`)."""

    async def append(messages: list[Message]) -> list[int]:
        stored = await store.append(
            conversation_id,
            messages,
            tenant=tenant,
            parent_seq=parent_seq,
            on_conflict="keep-first",
        )
        return [m.seq for m in stored if m.seq is not None]

    return await resolving_repeats(append, batch, {} if renamed is None else renamed)


async def resolving_repeats(
    write: Callable[[list[Message]], Awaitable[_T]],
    batch: list[Message],
    renamed: dict[str, str],
) -> _T:
    """``write(batch)``, adjusted where the conversation already holds what the batch repeats.

    An edit kept beside its original, a message added twice, a fork from an older checkpoint
    repeating its calls:

    - a message id the conversation holds: the batch is written without ``Message.id``
      (records keep theirs);
    - a call id it holds: the batch's calls get ids of their own, ``<id>@<token>`` (the record
      keeps the LangChain id), noted in ``renamed`` so that results written later answer them.

    ``write`` appends with ``on_conflict="keep-first"``: a second, different result for a call
    is kept as history.
    """
    batch = [_answer_renamed(m, renamed) for m in batch]
    ids_cleared = calls_renamed = False
    while True:
        try:
            return await write(batch)
        except InvalidMessageError:
            if ids_cleared:
                raise
            ids_cleared = True
            batch = [m.model_copy(update={"id": None}) for m in batch]
        except ToolCallConflictError:
            if calls_renamed:
                raise
            calls_renamed = True
            batch = _rename_calls(batch, renamed)


def _answer_renamed(message: Message, renamed: Mapping[str, str]) -> Message:
    if not renamed or not any(isinstance(p, ToolResultPart) for p in message.parts):
        return message
    parts = [
        p.model_copy(update={"call_id": renamed[p.call_id]})
        if isinstance(p, ToolResultPart) and p.call_id in renamed
        else p
        for p in message.parts
    ]
    return message.model_copy(update={"parts": parts})


def _rename_calls(batch: list[Message], renamed: dict[str, str]) -> list[Message]:
    token = new_id()[:12]
    out: list[Message] = []
    for message in batch:
        parts: list[Any] = []
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                new = f"{part.id[:240]}@{token}"
                renamed[part.id] = new
                parts.append(part.model_copy(update={"id": new, "provider_id": part.id}))
            else:
                parts.append(part)
        out.append(_answer_renamed(message.model_copy(update={"parts": parts}), renamed))
    return out
