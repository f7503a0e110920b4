"""Rows ⇄ canonical model: how messages, their parts and tool calls are laid out.

Invariants:

- Row tuples are in table column order (see `convstore.db.statements.column_names`).
- Both directions live here, side by side, so a field added to a model is added to its row and
  read back in one place. The round-trip property tests hold this module to that.
- A message's parts are one JSON array (``messages.parts``): each part is an object with its
  ``kind`` and every field whose value is not ``None``, nested models as nested objects (rows
  written as Python values, PostgreSQL's, also leave out ``synthetic`` when false). Decoding
  fills absent fields with their defaults, so a field added to a part later reads old rows
  unchanged.
- A tool call's name and arguments are also kept in its ``tool_calls`` row, which holds its
  lifecycle; the part in the JSON array is what rendering replays.
- Decoding builds models with `trusted`: these rows were validated when they were written.
- Inline bytes and pending streams never reach this module: the store swaps them for blob
  references first, and `encode_message` refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import to_json

from convstore._compat.collector import collector_paused
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
    NativeRecord,
    ResultKind,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
    Usage,
)
from convstore.model._base import trusted

__all__ = [
    "CALL_COMPLETED_AT",
    "CALL_RESULT_IDX",
    "CALL_RESULT_KIND",
    "CALL_RESULT_SEQ",
    "CALL_SEQ",
    "CALL_STATUS",
    "STATUSES",
    "CallRow",
    "ConversationRow",
    "decode_compactions",
    "decode_conversation",
    "decode_messages",
    "decode_parts",
    "decode_tool_calls",
    "encode_message",
    "encode_parts",
    "encode_tool_call",
    "holds_no_files",
    "new_tool_call",
    "text_column",
]

_ROLES: Final = {r.value: r for r in Role}
_TOOL: Final = Role.TOOL  # bound once: member lookups through the enum class are slow
STATUSES: Final = {s.value: s for s in ToolCallStatus}
"""Each `ToolCallStatus` by its stored value (a dict lookup is cheaper than the enum call)."""
_RESULT_KINDS: Final = {k.value: k for k in ResultKind}

_new_compaction: Final = trusted(Compaction)
_new_conversation: Final = trusted(Conversation)
_new_message: Final = trusted(Message)
_new_native: Final = trusted(NativeRecord)
_new_toolcall: Final = trusted(ToolCall)
_new_usage: Final = trusted(Usage)

CallRow = list[Any]
"""A mutable ``tool_calls`` row: an append may complete a call it created in the same batch."""

# Positions in a CallRow that a completion (or placing a planned batch) changes.
CALL_SEQ: Final = 2
CALL_STATUS: Final = 8
CALL_RESULT_KIND: Final = 9
CALL_RESULT_SEQ: Final = 10
CALL_RESULT_IDX: Final = 11
CALL_COMPLETED_AT: Final = 14


def text_column(value: str | None) -> str | None:
    """``value`` for a text column; NUL characters are refused on every database.

    PostgreSQL cannot store NUL in text, so SQLite must not accept it either: a history
    behaves the same whichever database keeps it. (JSON columns escape NUL and are unaffected.)
    """
    if value is not None and "\x00" in value:
        raise InvalidMessageError("text cannot contain NUL characters (\\x00)")
    return value


# ---------------------------------------------------------------------------------------------
# parts <-> JSON


class _Shape:
    """How one model class is written to and read from JSON."""

    def __init__(self, cls: type[BaseModel], nested: dict[str, Any] | None = None) -> None:
        self.build = trusted(cls)
        self.template: dict[str, Any] = {}
        """Every field, in declaration order, with its default (copied per object)."""
        factories = []
        for name, info in cls.model_fields.items():
            if info.default_factory is not None:
                self.template[name] = None
                factories.append((name, info.default_factory))  # called per object: fresh lists
            else:
                # Absent means default; for a required field (only `JsonOutput.value` can be
                # absent, when it was None) that is None.
                self.template[name] = None if info.is_required() else info.default
        self.factories: tuple[tuple[str, Any], ...] = tuple(factories)
        self.nested = tuple((nested or {}).items())
        """Field name -> how to decode it (a `_Shape`, or a dict of shapes by ``kind``)."""
        if not self.factories and not self.nested:
            self.decode = self._decode_flat  # type: ignore[method-assign]

    def _decode_flat(self, obj: dict[str, Any]) -> Any:
        # Text, thinking and most outputs: nothing to fill in or decode below.
        values = self.template.copy()
        values.update(obj)
        return self.build(values)

    def decode(self, obj: dict[str, Any]) -> Any:
        # The per-part cost of a load: a dict copy and an update in C; factories only for
        # the fields the stored object leaves out.
        values = self.template.copy()
        values.update(obj)
        for name, factory in self.factories:
            if name not in obj:
                values[name] = factory()
        for name, shape in self.nested:
            value = values[name]
            if value is not None:
                values[name] = _decode_nested(shape, value)
        return self.build(values)


def _decode_nested(shape: Any, value: Any) -> Any:
    if isinstance(shape, _Shape):
        return shape.decode(value)
    if isinstance(value, list):  # a list of parts tagged by kind
        return [_by_kind(shape, item) for item in value]
    return _by_kind(shape, value)


def _by_kind(shapes: dict[str, _Shape], obj: dict[str, Any]) -> Any:
    shape = shapes.get(obj.get("kind", ""))
    if shape is None:
        raise DatabaseError(f"unknown kind {obj.get('kind')!r} in stored parts")
    return shape.decode(obj)


_ATTACHMENT = _Shape(AttachmentRef)
_CONTENT: Final = {
    "text": _Shape(TextPart),
    "file": _Shape(FilePart, {"attachment": _ATTACHMENT}),
}
_OUTPUTS: Final = {
    "json": _Shape(JsonOutput),
    "error": _Shape(ErrorOutput),
    "content": _Shape(ContentOutput, {"parts": _CONTENT}),
}
_PARTS: Final = {
    **_CONTENT,
    "thinking": _Shape(ThinkingPart),
    "tool_call": _Shape(ToolCallPart),
    "tool_result": _Shape(ToolResultPart, {"output": _OUTPUTS}),
}


def _to_json(model: BaseModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in model.__dict__.items():
        if value is None or (name == "synthetic" and value is False):
            continue
        if isinstance(value, BaseModel):
            out[name] = _to_json(value)
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            out[name] = [_to_json(v) for v in value]
        else:
            out[name] = value
    return out


def encode_parts(parts: Sequence[Any], codec: Codec) -> Any:
    """A message's parts as the backend binds ``messages.parts`` (a JSON array)."""
    if not holds_no_files(parts):
        for part in parts:
            for file in _files_of(part):
                if file.data is not None or file.pending is not None:
                    raise InvalidMessageError("file bytes must be stored as a blob before the row")
    if codec.encodes_parts_from_models:
        return to_json(parts, exclude_none=True).decode()
    return codec.dump_json([_to_json(part) for part in parts])


_FILELESS: Final = frozenset({TextPart, ThinkingPart, ToolCallPart})
"""Part classes that never hold a file."""
_FILELESS_OUTPUTS: Final = frozenset({JsonOutput, ErrorOutput})
"""Tool output classes that never hold a file."""


def holds_no_files(parts: Sequence[Any]) -> bool:
    """Whether none of these parts is or holds a file (by class: no ``isinstance`` walk)."""
    for part in parts:
        kind = type(part)
        if kind not in _FILELESS and (
            kind is not ToolResultPart or type(part.output) not in _FILELESS_OUTPUTS
        ):
            return False
    return True


def _files_of(part: Any) -> list[FilePart]:
    if isinstance(part, FilePart):
        return [part]
    if isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
        return part.output.files
    return []


def decode_parts(raw: list[dict[str, Any]]) -> list[Any]:
    """The parts of a stored ``messages.parts`` array."""
    try:
        return [_PARTS[obj["kind"]].decode(obj) for obj in raw]
    except (KeyError, TypeError):
        return [_by_kind(_PARTS, obj) for obj in raw]  # names what is wrong


# ---------------------------------------------------------------------------------------------
# messages and tool calls -> rows


def encode_message(
    cid: str,
    message: Message,
    seq: int,
    parent_seq: int | None,
    now: datetime,
    codec: Codec,
) -> Row:
    """The ``messages`` row."""
    # Fields read from the instance dict: a model's attribute lookup goes through pydantic's
    # __getattr__ hook, ten times the cost of a dict's, and an append encodes every message.
    fields = message.__dict__
    native, usage, details = fields["native"], fields["usage"], fields["provider_details"]
    return (
        cid,
        seq,
        fields["role"].value,
        text_column(fields["provider"]),
        text_column(fields["model"]),
        codec.dump_time(now),
        None if details is None else codec.dump_json(details),
        parent_seq,
        text_column(fields["id"]),
        encode_parts(fields["parts"], codec),
        None if native is None else codec.dump_json({"format": native.format, "data": native.data}),
        None if usage is None else codec.dump_json(usage.__dict__),
    )


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
        None,  # cancelled_at
    ]


# ---------------------------------------------------------------------------------------------
# rows -> model

ConversationRow = tuple[Any, ...]
"""A ``select_conversation`` row (`convstore.db.statements.conversations.HeaderAt`)."""


def decode_conversation(
    row: ConversationRow,
    codec: Codec,
    messages: list[Message],
    tool_calls: list[ToolCall],
    compactions: list[Compaction],
) -> Conversation:
    """A `Conversation` from a ``select_conversation`` row and its loaded contents."""
    (cid, tenant, title, metadata, _last_seq, created_at, updated_at, state, head_seq, revision,
     _branched) = row  # fmt: skip
    return _new_conversation(
        {
            "id": cid,
            "title": title,
            "tenant": tenant,
            "metadata": codec.load_json(metadata) or {},
            "created_at": codec.load_time(created_at),
            "updated_at": codec.load_time(updated_at),
            "revision": revision,
            "state": codec.load_json(state) or {},
            "head_seq": head_seq,
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


def decode_messages(cid: str, rows: Iterable[Row], codec: Codec) -> list[Message]:
    """Messages from ``select_messages`` rows, in the order given.

    This is the load hot path (thousands of rows per conversation; see docs/performance.md):
    the codec's functions are bound to locals, each distinct timestamp is parsed once, and the
    cyclic GC is held off (`collector_paused`) once the rows are fetched.
    """
    fetched = rows if isinstance(rows, list) else list(rows)
    with collector_paused:
        return _decode_messages(cid, fetched, codec)


def _decode_messages(cid: str, rows: Iterable[Row], codec: Codec) -> list[Message]:
    load_json = codec.load_json
    load_time = codec.load_time
    messages = []
    last_time_text: Any = None
    created_at: datetime | None = None
    for seq, parent_seq, role, provider, model, time_text, details, message_id, parts, native, \
            usage in rows:  # fmt: skip
        if time_text != last_time_text:  # an append writes all its rows with one timestamp
            last_time_text, created_at = time_text, load_time(time_text)
        native_obj = None if native is None else load_json(native)
        usage_obj = None if usage is None else load_json(usage)
        messages.append(
            _new_message(
                {
                    "role": _ROLES[role],
                    "id": message_id,
                    "parts": decode_parts(load_json(parts)),
                    "provider": provider,
                    "model": model,
                    "seq": seq,
                    "created_at": created_at,
                    "provider_details": None if details is None else load_json(details),
                    "native": None if native_obj is None else _new_native(native_obj),
                    "usage": None if usage_obj is None else _new_usage(usage_obj),
                    "parent_seq": parent_seq,
                    "conversation_id": cid,
                }
            )
        )
    return messages


def outputs_of(messages: Iterable[Message]) -> dict[tuple[int, int], ToolOutput]:
    """Every tool result's output in ``messages``, by (seq, part index)."""
    found: dict[tuple[int, int], ToolOutput] = {}
    for message in messages:
        if message.role is _TOOL:
            for idx, part in enumerate(message.parts):
                if isinstance(part, ToolResultPart):
                    found[(message.seq or 0, idx)] = part.output
    return found


def new_tool_call(
    part: ToolCallPart | tuple[str, str, dict[str, Any], str | None],
    *,
    seq: int,
    status: str,
    result_kind: str | None,
    output: ToolOutput | None,
    result_seq: int | None,
    created_at: datetime,
    completed_at: datetime | None,
) -> ToolCall:
    """A `ToolCall` built from the part that made it and its lifecycle (trusted values).

    The part holds the call's name and arguments exactly as its ``tool_calls`` row does (both
    are written from it), so a load need not read and parse them twice. Without the part,
    ``part`` is (id, name, arguments, provider_id) from the row.
    """
    if isinstance(part, ToolCallPart):
        call_id, name, arguments, provider_id = part.id, part.name, part.arguments, part.provider_id
    else:
        call_id, name, arguments, provider_id = part
    return _new_toolcall(
        {
            "id": call_id,
            "name": name,
            "arguments": arguments,
            "status": STATUSES[status],
            "result_kind": None if result_kind is None else _RESULT_KINDS[result_kind],
            "output": output,
            "provider_id": provider_id,
            "seq": seq,
            "result_seq": result_seq,
            "created_at": created_at,
            "completed_at": completed_at,
        }
    )


def decode_tool_calls(
    rows: Iterable[Row], outputs: dict[tuple[int, int], ToolOutput], codec: Codec
) -> list[ToolCall]:
    """`ToolCall`s from ``select_tool_calls`` rows; outputs from the decoded results."""
    fetched = rows if isinstance(rows, list) else list(rows)
    with collector_paused:
        return _decode_tool_calls(fetched, outputs, codec)


def _decode_tool_calls(
    rows: Iterable[Row], outputs: dict[tuple[int, int], ToolOutput], codec: Codec
) -> list[ToolCall]:
    calls = []
    for (call_id, seq, name, provider_id, args, _raw, status, result_kind, result_seq,
         result_idx, _details, created_at, completed_at) in rows:  # fmt: skip
        calls.append(
            _new_toolcall(
                {
                    "id": call_id,
                    "name": name,
                    "arguments": codec.load_json(args),
                    "status": STATUSES[status],
                    "result_kind": None if result_kind is None else _RESULT_KINDS[result_kind],
                    "output": None if result_seq is None else outputs.get((result_seq, result_idx)),
                    "provider_id": provider_id,
                    "seq": seq,
                    "result_seq": result_seq,
                    "created_at": codec.load_time(created_at),
                    "completed_at": None if completed_at is None else codec.load_time(completed_at),
                }
            )
        )
    return calls
