"""Rows ⇄ canonical model: how each message, part and tool call is laid out in its table.

Invariants:

- Row tuples are in table column order (see `convstore.db.statements.column_names`).
- Both directions live here, side by side, so a field added to a part is added to its row and
  read back in one place. The round-trip property tests hold this module to that.
- A part row keeps in columns what queries or the lifecycle need (kind, text, call id, result
  kind, media type, blob hash) and the rest of the part in one JSON ``data`` object.
- A tool-call part's name and arguments live only in its ``tool_calls`` row; the part row
  just names the call. A `ContentOutput` result stores one child row per content part.
- Decoding builds models with `trusted`: these rows were validated when they were written.
- Inline bytes and pending streams never reach this module: the store swaps them for blob
  references first, and `encode_part` refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Final

from convstore.db.tx import Codec, Row
from convstore.errors import DatabaseError, InvalidMessageError
from convstore.model import (
    AttachmentRef,
    Compaction,
    ContentOutput,
    Conversation,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    ResultKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
)
from convstore.model._base import trusted

__all__ = [
    "THINKING_FIELDS",
    "CallRow",
    "decode_compactions",
    "decode_conversation_row",
    "decode_messages",
    "decode_result",
    "decode_tool_call",
    "encode_message",
    "encode_parts",
    "encode_tool_call",
    "text_column",
]

THINKING_FIELDS: Final = (
    "provider",
    "model",
    "signature",
    "redacted_data",
    "reasoning_id",
    "encrypted_content",
    "summary",
    "rides_on",
    "provider_details",
)
"""The `ThinkingPart` fields kept in a thinking row's ``data`` object."""

_new_attachmentref: Final = trusted(AttachmentRef)
_new_compaction: Final = trusted(Compaction)
_new_contentoutput: Final = trusted(ContentOutput)
_new_conversation: Final = trusted(Conversation)
_new_erroroutput: Final = trusted(ErrorOutput)
_new_filepart: Final = trusted(FilePart)
_new_jsonoutput: Final = trusted(JsonOutput)
_new_message: Final = trusted(Message)
_new_textpart: Final = trusted(TextPart)
_new_thinkingpart: Final = trusted(ThinkingPart)
_new_toolcall: Final = trusted(ToolCall)
_new_toolcallpart: Final = trusted(ToolCallPart)
_new_toolresultpart: Final = trusted(ToolResultPart)

_ROLES: Final = {r.value: r for r in Role}
_STATUSES: Final = {s.value: s for s in ToolCallStatus}
_RESULT_KINDS: Final = {k.value: k for k in ResultKind}

CallRow = list[Any]
"""A mutable ``tool_calls`` row: an append may complete a call it created in the same batch."""


# ---------------------------------------------------------------------------------------------
# model -> rows


def text_column(value: str | None) -> str | None:
    """``value`` for a text column; NUL characters are refused on every database.

    PostgreSQL cannot store NUL in text, so SQLite must not accept it either: a history
    behaves the same whichever database keeps it. (JSON columns escape NUL and are unaffected.)
    """
    if value is not None and "\x00" in value:
        raise InvalidMessageError("text cannot contain NUL characters (\\x00)")
    return value


def encode_message(cid: str, message: Message, seq: int, now: datetime, codec: Codec) -> Row:
    """The ``messages`` row."""
    return (
        cid,
        seq,
        message.role.value,
        text_column(message.provider),
        text_column(message.model),
        codec.dump_time(now),
        codec.dump_json(message.provider_details),
    )


def encode_parts(cid: str, seq: int, parts: Iterable[Any], codec: Codec) -> Iterator[Row]:
    """The ``parts`` rows of one message: the parts in order, then any content children."""
    parts = list(parts)
    next_child = len(parts)
    for idx, part in enumerate(parts):
        yield _encode_part(cid, seq, idx, None, part, codec)
        if isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
            for child in part.output.parts:
                yield _encode_part(cid, seq, next_child, idx, child, codec)
                next_child += 1


def _encode_part(cid: str, seq: int, idx: int, parent: int | None, part: Any, codec: Codec) -> Row:
    match part:
        case TextPart():
            data = {"provider_details": part.provider_details} if part.provider_details else None
            return (cid, seq, idx, parent, "text", text_column(part.text), None, None, None, None,
                    codec.dump_json(data))  # fmt: skip
        case ThinkingPart():
            data = {f: v for f in THINKING_FIELDS if (v := getattr(part, f)) is not None}
            text = text_column(part.text)
            return (cid, seq, idx, parent, "thinking", text, None, None, None, None,
                    codec.dump_json(data or None))  # fmt: skip
        case ToolCallPart():
            call_id = text_column(part.id)
            return (cid, seq, idx, parent, "tool_call", None, call_id, None, None, None, None)
        case ToolResultPart():
            return _encode_result(cid, seq, idx, parent, part, codec)
        case FilePart():
            if part.data is not None or part.pending is not None:
                raise InvalidMessageError("file bytes must be stored as a blob before the row")
            file_data: dict[str, Any] = {}
            if part.filename is not None:
                file_data["filename"] = part.filename
            if part.uri is not None:
                file_data["uri"] = part.uri
            if part.attachment is not None:
                file_data["size"] = part.attachment.size
            sha = part.attachment.sha256 if part.attachment else None
            media_type = text_column(part.media_type)
            return (cid, seq, idx, parent, "file", None, None, None, media_type, sha,
                    codec.dump_json(file_data or None))  # fmt: skip
    raise InvalidMessageError(f"not a message part: {type(part).__name__}")


def _encode_result(
    cid: str, seq: int, idx: int, parent: int | None, part: ToolResultPart, codec: Codec
) -> Row:
    data: dict[str, Any] = {}
    if part.name is not None:
        data["name"] = part.name
    if part.synthetic:
        data["synthetic"] = True
    text = None
    output = part.output
    match output:
        case JsonOutput():
            data["value"] = output.value
        case ErrorOutput():
            text = text_column(output.message)
            if output.details is not None:
                data["details"] = output.details
        case ContentOutput():
            pass  # the content parts are child rows
    call_id = text_column(part.call_id)
    return (cid, seq, idx, parent, "tool_result", text, call_id, output.kind, None, None,
            codec.dump_json(data or None))  # fmt: skip


def encode_tool_call(
    cid: str, seq: int, idx: int, part: ToolCallPart, now: datetime, codec: Codec
) -> CallRow:
    """A new ``tool_calls`` row, ``pending``."""
    return [
        cid,
        part.id,
        seq,
        idx,
        text_column(part.name),
        text_column(part.provider_id),
        codec.dump_json(part.arguments),
        text_column(part.raw_arguments),
        ToolCallStatus.PENDING.value,
        None,  # result_kind
        None,  # result_seq
        None,  # result_idx
        codec.dump_json(part.provider_details),
        codec.dump_time(now),
        None,  # completed_at
    ]


# Positions in a CallRow that a completion changes.
CALL_STATUS: Final = 8
CALL_RESULT_KIND: Final = 9
CALL_RESULT_SEQ: Final = 10
CALL_RESULT_IDX: Final = 11
CALL_COMPLETED_AT: Final = 14


# ---------------------------------------------------------------------------------------------
# rows -> model


def decode_conversation_row(
    row: Row,
    codec: Codec,
    messages: list[Message],
    tool_calls: list[ToolCall],
    compactions: list[Compaction],
) -> Conversation:
    """A `Conversation` from a ``select_conversation`` row and its loaded contents."""
    cid, tenant, title, metadata, _last_seq, created_at, updated_at = row
    return _new_conversation(
        {
            "id": cid,
            "title": title,
            "tenant": tenant,
            "metadata": codec.load_json(metadata) or {},
            "created_at": codec.load_time(created_at),
            "updated_at": codec.load_time(updated_at),
            "revision": "",
            "state": {},
            "head_seq": messages[-1].seq if messages else None,
            "messages": messages,
            "tool_calls": tool_calls,
            "compactions": compactions,
        },
    )


def decode_compactions(rows: Iterable[Row], codec: Codec) -> list[Compaction]:
    """`Compaction` records from ``select_compactions`` rows."""
    return [
        _new_compaction(
            {"through_seq": through, "summary": summary, "created_at": codec.load_time(created)},
        )
        for through, summary, created in rows
    ]


def decode_messages(
    message_part_rows: Iterable[Row], call_rows: Iterable[Row], codec: Codec
) -> tuple[list[Message], list[ToolCall]]:
    """Messages and tool calls from ``select_message_parts`` and ``select_tool_calls`` rows.

    This is the load hot path (thousands of rows per conversation; see PERFORMANCE-NOTES.md):
    rows are consumed as they are read, each message is built when its last part has been
    seen, and the codec's functions are bound to locals.
    """
    load_json = codec.load_json
    load_time = codec.load_time
    call_rows = list(call_rows)
    arguments: dict[str, dict[str, Any]] = {}
    call_parts: dict[str, ToolCallPart] = {}
    for call_id, _seq, name, provider_id, args, raw_arguments, *_, details, _c, _d in call_rows:
        decoded = arguments[call_id] = load_json(args)
        call_parts[call_id] = _new_toolcallpart(
            {
                "kind": "tool_call",
                "id": call_id,
                "name": name,
                "arguments": decoded,
                "raw_arguments": raw_arguments,
                "provider_id": provider_id,
                "provider_details": None if details is None else load_json(details),
            }
        )
    outputs: dict[tuple[int, int], ToolOutput] = {}
    messages: list[Message] = []
    head: Row | None = None  # the current message's columns
    parts: list[Any] = []
    pending: _PendingContent | None = None  # content results waiting for their child rows
    last_time_text: Any = None
    created_at: datetime | None = None
    for row in message_part_rows:
        seq = row[0]
        if head is None or seq != head[0]:
            if head is not None:
                messages.append(_message(head, parts, created_at, pending, outputs, load_json))
            head, parts, pending = row, [], None
            if row[4] != last_time_text:  # an append writes all its rows with one timestamp
                last_time_text, created_at = row[4], load_time(row[4])
        kind = row[8]
        if kind is None:
            continue  # a message without parts
        if row[7] is not None:  # a child of a ContentOutput result
            if pending is None:
                pending = _PendingContent()
            pending.add_child(row[7], _decode_content_part(row, load_json))
            continue
        data = row[14]
        extra = None if data is None else load_json(data)
        if kind == "text":
            details = None if extra is None else extra.get("provider_details")
            parts.append(
                _new_textpart({"kind": "text", "text": row[9], "provider_details": details})
            )
        elif kind == "tool_call":
            part = call_parts.get(row[10])
            if part is None:
                raise DatabaseError(f"tool-call part {row[10]!r} has no tool_calls row")
            parts.append(part)
        elif kind == "tool_result":
            if row[11] == "content":
                if pending is None:
                    pending = _PendingContent()
                pending.add_result(len(parts), row, extra or {})
                parts.append(None)  # filled in once its child rows are read
                continue
            result = _decode_result(row[10], row[11], row[9], extra or {}, [])
            outputs[(seq, row[6])] = result.output
            parts.append(result)
        elif kind == "file":
            parts.append(_decode_content_part(row, load_json))
        elif kind == "thinking":
            fields = dict.fromkeys(THINKING_FIELDS)
            fields.update(extra or {})
            fields["kind"] = "thinking"
            fields["text"] = row[9] or ""
            parts.append(_new_thinkingpart(fields))
        else:
            raise DatabaseError(f"unknown part kind {kind!r} in conversation rows")
    if head is not None:
        messages.append(_message(head, parts, created_at, pending, outputs, load_json))
    tool_calls = [decode_tool_call(row, arguments[row[0]], outputs, codec) for row in call_rows]
    return messages, tool_calls


class _PendingContent:
    """`ContentOutput` results of one message, completed once their child rows are read."""

    def __init__(self) -> None:
        self.results: list[tuple[int, Row, dict[str, Any]]] = []
        self.children: dict[int, list[TextPart | FilePart]] = {}

    def add_result(self, position: int, row: Row, extra: dict[str, Any]) -> None:
        self.results.append((position, row, extra))

    def add_child(self, parent_idx: int, part: TextPart | FilePart) -> None:
        self.children.setdefault(parent_idx, []).append(part)


def _message(
    head: Row,
    parts: list[Any],
    created_at: datetime | None,
    pending: _PendingContent | None,
    outputs: dict[tuple[int, int], ToolOutput],
    load_json: Callable[[Any], Any],
) -> Message:
    seq, role, provider, model, _time, details = head[:6]
    if pending is not None:
        for position, row, extra in pending.results:
            children = pending.children.get(row[6], [])
            result = _decode_result(row[10], "content", row[9], extra, children)
            outputs[(seq, row[6])] = result.output
            parts[position] = result
    return _new_message(
        {
            "role": _ROLES[role],
            "parts": parts,
            "provider": provider,
            "model": model,
            "seq": seq,
            "created_at": created_at,
            "provider_details": None if details is None else load_json(details),
            "id": None,
            "native": None,
            "usage": None,
            "parent_seq": None,
            "conversation_id": None,
        }
    )


def decode_result(message_part_rows: Iterable[Row], idx: int, codec: Codec) -> ToolResultPart:
    """The tool result at ``idx`` of the one message ``message_part_rows`` hold."""
    messages, _ = decode_messages(message_part_rows, [], codec)
    for message in messages:
        part = message.parts[idx] if idx < len(message.parts) else None
        if isinstance(part, ToolResultPart):
            return part
    raise DatabaseError(f"no stored tool result at part {idx}")


def decode_tool_call(
    row: Row,
    arguments: dict[str, Any],
    outputs: dict[tuple[int, int], ToolOutput],
    codec: Codec,
) -> ToolCall:
    """A `ToolCall` from a ``select_tool_calls`` row; its output from the decoded results."""
    (call_id, seq, name, provider_id, _args, _raw, status, result_kind, result_seq,
     result_idx, _details, created_at, completed_at) = row  # fmt: skip
    return _new_toolcall(
        {
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "status": _STATUSES[status],
            "result_kind": None if result_kind is None else _RESULT_KINDS[result_kind],
            "output": None if result_seq is None else outputs.get((result_seq, result_idx)),
            "provider_id": provider_id,
            "seq": seq,
            "result_seq": result_seq,
            "created_at": codec.load_time(created_at),
            "completed_at": None if completed_at is None else codec.load_time(completed_at),
        }
    )


def _decode_content_part(row: Row, load_json: Callable[[Any], Any]) -> TextPart | FilePart:
    kind, text, media_type, sha, data = row[8], row[9], row[12], row[13], row[14]
    extra = (None if data is None else load_json(data)) or {}
    if kind == "text":
        return _new_textpart(
            {"kind": "text", "text": text, "provider_details": extra.get("provider_details")},
        )
    if kind == "file":
        attachment = _new_attachmentref({"sha256": sha, "size": extra["size"]}) if sha else None
        return _new_filepart(
            {
                "kind": "file",
                "media_type": media_type,
                "filename": extra.get("filename"),
                "data": None,
                "attachment": attachment,
                "uri": extra.get("uri"),
            },
        )
    raise DatabaseError(f"a content part row has kind {kind!r}")


def _decode_result(
    call_id: str,
    result_kind: str,
    text: str | None,
    extra: dict[str, Any],
    children: list[TextPart | FilePart],
) -> ToolResultPart:
    output: ToolOutput
    if result_kind == "json":
        output = _new_jsonoutput({"kind": "json", "value": extra.get("value")})
    elif result_kind == "error":
        output = _new_erroroutput(
            {"kind": "error", "message": text or "", "details": extra.get("details")}
        )
    elif result_kind == "content":
        output = _new_contentoutput({"kind": "content", "parts": children})
    else:
        raise DatabaseError(f"unknown result kind {result_kind!r} in conversation rows")
    return _new_toolresultpart(
        {
            "kind": "tool_result",
            "call_id": call_id,
            "output": output,
            "name": extra.get("name"),
            "synthetic": bool(extra.get("synthetic", False)),
        }
    )
