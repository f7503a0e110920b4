"""openai-agents session items to and from stored messages (used by `openai_agents`).

No ``agents`` import here: items are plain JSON dicts, as the SDK hands them to sessions.

Invariants:

- `to_message` keeps the item as the message's `NativeRecord` (format ``openai-agents``) and
  maps it onto canonical parts; every inline ``data:`` URL (or bare base64 ``file_data``) at a
  place that becomes a canonical file is replaced in the record by a blob placeholder
  (`convstore.integrations._native_blobs`, as every integration's records), its bytes carried
  by the `FilePart` (so ``append`` stores them as a blob), and the record marked ``"blobs"``.
  Only base64 that re-encodes to the same text is replaced, so reading puts back exactly the
  same string.
- `read_items` and `pop_newest` read items straight from the native records, putting the
  placeholders' bytes back by hash; `to_items` / `item_of` do the same from typed messages,
  and give a message written through the store API instead, without a record, the
  equivalent item. A record written before placeholders (bytes cut out by JSON path, listed
  under ``"files"``) is read through its typed message, whose files hold the bytes.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import JsonValue

from convstore.errors import (
    ConversationNotFoundError,
    InvalidInputError,
    MediaTypeMismatchError,
    RevisionConflictError,
)
from convstore.integrations._native_blobs import placeholder
from convstore.integrations._native_record import restore_from
from convstore.json_input import Json, parse_data_url
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    Role,
    TextPart,
    ToolCallPart,
    ToolOutput,
)
from convstore.store import ConversationStore

__all__ = [
    "NATIVE_FORMAT",
    "Item",
    "first_calls_only",
    "item_of",
    "plain_item",
    "pop_newest",
    "read_items",
    "to_items",
    "to_message",
]

NATIVE_FORMAT: Final = "openai-agents"
"""`NativeRecord.format` of the items a ``ConvstoreSession`` stores."""

Item = dict[str, Any]
"""A session item: one Responses-API input item as JSON."""

_OCTET_STREAM: Final = "application/octet-stream"
_BLOBS: Final = "blobs"
"""A record key: ``True`` when the item holds blob placeholders for bytes taken out."""
_CUT_BY_PATH: Final = "files"
"""A record key of records written before placeholders: bytes cut out, listed by JSON path
(``{"path", "prefix", "file"}``, the file an index into the message's files)."""


# -- items -> messages ----------------------------------------------------------------------------


class _Builder:
    """Collects the files an item's canonical parts take out of its record."""

    def __init__(self) -> None:
        self.cuts: list[tuple[list[str | int], dict[str, JsonValue]]] = []
        """(JSON path, blob placeholder) of each data URL taken out of the record."""

    def file(
        self, url: Any, path: list[str | int], media_type: str | None, *, bare: bool = False
    ) -> FilePart | None:
        """The canonical file for an image/file URL at ``path`` (cut out when inline).

        ``bare``: the field may also hold plain base64 (``input_file.file_data``).
        """
        if not isinstance(url, str):
            return None
        inline = _data_url(url)
        if inline is None and bare:
            inline = _bare_base64(url)
        if inline is None:
            if url.startswith(("http://", "https://", "gs://", "s3://")):
                return FilePart.from_uri(url, media_type=media_type)
            return None
        prefix, declared, data = inline
        try:
            part = FilePart.from_bytes(data, media_type=declared or media_type)
        except MediaTypeMismatchError:
            # The label is the item's business: the record restores it exactly either way.
            part = FilePart.from_bytes(data, media_type=_OCTET_STREAM)
        self.cuts.append((path, placeholder(data, part.media_type, prefix)))
        return part


def _bare_base64(text: str) -> tuple[str, str | None, bytes] | None:
    """("", None, bytes) of plain canonical base64 text (re-encodes to the same text)."""
    if len(text) < 8 or len(text) % 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ("", None, data) if base64.b64encode(data).decode("ascii") == text else None


def _data_url(url: str) -> tuple[str, str | None, bytes] | None:
    """(prefix, media type, bytes) of a base64 data URL that re-encodes to the same text."""
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",")
    if comma < 0 or not url[:comma].lower().endswith(";base64"):
        return None
    try:
        parsed = parse_data_url(url, Json(url, NATIVE_FORMAT))
    except InvalidInputError:
        return None
    if parsed is None:
        return None
    declared, data = parsed
    try:
        exact = base64.b64encode(data).decode("ascii") == url[comma + 1 :]
    except (binascii.Error, ValueError):
        exact = False
    return (url[: comma + 1], declared, data) if exact else None


def to_message(item: Any) -> Message:
    """The stored form of one session item: canonical parts plus the item as native record."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a session item is a JSON object, got {type(item).__name__}")
    item = dict(item)
    builder = _Builder()
    role, parts = _canonical(item, builder)
    record: Item = {"item": item}
    if builder.cuts:
        stripped = copy.deepcopy(item)
        for path, blob in builder.cuts:
            _set(stripped, path, blob)
        record = {"item": stripped, _BLOBS: True}
    # One validation for the message, its parts and its record: the parts are given as their
    # JSON shape (files, already built, pass through), so pydantic-core checks everything in
    # one call instead of one Python round trip per object (half the cost of an add_items).
    return Message.model_validate(
        {"role": role, "parts": parts, "native": {"format": NATIVE_FORMAT, "data": record}}
    )


def first_calls_only(messages: list[Message], seen: set[str]) -> list[Message]:
    """The messages with every call whose id is in ``seen`` (or repeats one) left to the record.

    Call ids are unique per conversation; the SDK may still hand the same call item twice
    (a replayed turn). The repeat is stored with its record and no canonical call.
    """
    out = []
    for message in messages:
        parts = [p for p in message.parts if not (isinstance(p, ToolCallPart) and p.id in seen)]
        seen.update(p.id for p in parts if isinstance(p, ToolCallPart))
        out.append(
            message
            if len(parts) == len(message.parts)
            else message.model_copy(update={"parts": parts})
        )
    return out


_PartInput = dict[str, Any] | FilePart
"""A part in its JSON shape (validated with its message), or a file part already built."""


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _is_text(part: Any) -> bool:
    return isinstance(part, dict) and part.get("kind") == "text"


def _canonical(item: Item, builder: _Builder) -> tuple[Role, list[_PartInput]]:
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return _message_parts(item, builder)
    match kind:
        case "function_call" | "custom_tool_call" | "computer_call":
            call = _call(item, kind)
            return Role.ASSISTANT, ([] if call is None else [call])
        case "function_call_output" | "custom_tool_call_output" | "computer_call_output":
            result = _result(item, builder)
            if result is not None:
                return Role.TOOL, [result]
        case "reasoning":
            return Role.ASSISTANT, [_reasoning(item)]
        case _:
            pass
    return Role.ASSISTANT, []  # hosted tools, compaction, references: the record alone


def _message_parts(item: Item, builder: _Builder) -> tuple[Role, list[_PartInput]]:
    role = item.get("role")
    content = item.get("content")
    parts: list[_PartInput] = []
    if isinstance(content, str):
        parts.append(_text(content))
    elif isinstance(content, list):
        for index, entry in enumerate(content):
            if not isinstance(entry, Mapping):
                continue
            part = _content(entry, ["content", index], builder)
            if part is not None:
                parts.append(part)
    if role == "user":
        return Role.USER, parts
    if role in ("system", "developer"):
        return Role.SYSTEM, [p for p in parts if _is_text(p)]
    return Role.ASSISTANT, parts


def _content(
    entry: Mapping[str, Any], path: list[str | int], builder: _Builder
) -> _PartInput | None:
    kind = entry.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(entry.get("text"), str):
        return _text(entry["text"])
    if kind == "refusal" and isinstance(entry.get("refusal"), str):
        return _text(entry["refusal"])
    if kind == "input_image":
        return builder.file(entry.get("image_url"), [*path, "image_url"], None)
    if kind == "input_file":
        part = builder.file(entry.get("file_data"), [*path, "file_data"], None, bare=True)
        if part is None:
            part = builder.file(entry.get("file_url"), [*path, "file_url"], None)
        filename = entry.get("filename")
        if part is not None and isinstance(filename, str):
            part = part.model_copy(update={"filename": filename})
        return part
    return None


def _call(item: Item, kind: str) -> dict[str, Any] | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not 0 < len(call_id) <= 255:
        return None
    name: Any
    arguments: dict[str, Any]
    raw: Any
    if kind == "computer_call":
        name, arguments, raw = "computer", {"action": item.get("action")}, None
    elif kind == "custom_tool_call":
        name, arguments, raw = item.get("name"), {"input": item.get("input")}, None
    else:
        name, arguments, raw = item.get("name"), {}, item.get("arguments")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            arguments, raw = parsed, None
    if not isinstance(name, str) or not 0 < len(name) <= 255:
        return None
    return {
        "kind": "tool_call",
        "id": call_id,
        "name": name,
        "arguments": arguments,
        "raw_arguments": raw if isinstance(raw, str) else None,
    }


def _result(item: Item, builder: _Builder) -> dict[str, Any] | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not 0 < len(call_id) <= 255:
        return None
    output = item.get("output")
    value: dict[str, Any]
    if item.get("type") == "computer_call_output" and isinstance(output, Mapping):
        shot = builder.file(output.get("image_url"), ["output", "image_url"], None)
        value = {"kind": "content", "parts": [shot]} if shot is not None else _json(None)
    elif isinstance(output, list):
        parts = [_content(e, ["output", i], builder) if isinstance(e, Mapping) else None
                 for i, e in enumerate(output)]  # fmt: skip
        kept = [p for p in parts if isinstance(p, FilePart) or _is_text(p)]
        value = {"kind": "content", "parts": kept}
    elif isinstance(output, str):
        value = _json(output)
    elif output is None:
        value = {"kind": "error", "message": "no output"}
    else:
        value = _json(output)
    return {"kind": "tool_result", "call_id": call_id, "output": value}


def _json(value: Any) -> dict[str, Any]:
    return {"kind": "json", "value": value}


def _reasoning(item: Item) -> dict[str, Any]:
    summary = [
        entry["text"]
        for entry in item.get("summary") or []
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str)
    ]
    item_id = item.get("id")
    encrypted = item.get("encrypted_content")
    return {
        "kind": "thinking",
        "text": "\n\n".join(summary),
        "provider": "openai",
        "reasoning_id": item_id if isinstance(item_id, str) else None,
        "encrypted_content": encrypted if isinstance(encrypted, str) else None,
        "summary": summary or None,
    }


def _set(node: Any, path: Sequence[str | int], value: JsonValue) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


# -- messages -> items ----------------------------------------------------------------------------


def plain_item(data: JsonValue) -> Item | None:
    """The item a native record's data holds, as stored (placeholders for its bytes); or None.

    ``data`` is the `NativeRecord.data` of a stored item (a ``load_native`` entry's data, as
    read: the caller owns it). None for a record whose bytes were cut out by JSON path (they
    are found through the typed message) or for data that is not such a record.
    """
    if not isinstance(data, dict) or _CUT_BY_PATH in data:
        return None
    item = data.get("item")
    return item if isinstance(item, dict) else None


def _has_blobs(data: JsonValue) -> bool:
    return isinstance(data, dict) and data.get(_BLOBS) is True


async def _with_bytes(store: ConversationStore, items: list[Item], blobbed: list[int]) -> None:
    """Put the bytes back into the items at ``blobbed`` (their placeholders), in place."""
    if not blobbed:
        return
    restored = await restore_from(store, [items[i] for i in blobbed], "standard")
    for index, item in zip(blobbed, restored, strict=True):
        assert isinstance(item, dict)
        items[index] = item


async def read_items(
    store: ConversationStore, session_id: str, tenant: str | None, last: int | None
) -> list[Item]:
    """The session's items (the newest ``last``), oldest first; ``[]`` for no conversation.

    The stored records themselves (`ConversationStore.load_native`), as far as they are plain;
    from the first message whose record is missing or had bytes cut out on, the typed path
    (`to_items`), which finds those files. Both halves are read at one revision.
    """
    while True:
        try:
            path = await store.load_native(
                session_id, format=NATIVE_FORMAT, tenant=tenant, last=last
            )
        except ConversationNotFoundError:
            return []
        items: list[Item] = []
        blobbed: list[int] = []
        for _seq, _id, data in path:
            item = plain_item(data)
            if item is None:
                break
            if _has_blobs(data):
                blobbed.append(len(items))
            items.append(item)
        else:
            await _with_bytes(store, items, blobbed)
            return items
        tail = await store.load(session_id, tenant=tenant, last=len(path) - len(items))
        if tail.revision == path.revision:
            await _with_bytes(store, items, blobbed)
            return items + await to_items(store, tail.messages)
        # Written in between: read again, so that the two halves are of one history.


async def pop_newest(store: ConversationStore, session_id: str, tenant: str | None) -> Item | None:
    """Remove the newest item and return it; ``None`` when there is none.

    The item is read before it is removed (once its row is gone, so are the references that
    lead ``read_attachment`` to its bytes), and removed only if nothing was written since it
    was read (``expected_revision``); a write in between means looking again.
    """
    while True:
        try:
            newest = await store.load_native(
                session_id, format=NATIVE_FORMAT, tenant=tenant, last=1
            )
        except ConversationNotFoundError:
            return None
        if not newest:
            return None
        data = newest[-1][2]
        item, revision = plain_item(data), newest.revision
        if item is not None and _has_blobs(data):
            items = [item]
            await _with_bytes(store, items, [0])
            item = items[0]
        if item is None:  # bytes cut out by path, or no record: the typed path
            head = await store.load(session_id, tenant=tenant, last=1)
            if not head.messages:
                return None
            item, revision = await item_of(store, head.messages[-1]), head.revision
        try:
            await store.pop(session_id, tenant=tenant, expected_revision=revision)
        except RevisionConflictError:
            continue
        return item


async def to_items(store: ConversationStore, messages: list[Message]) -> list[Item]:
    """The session items stored messages stand for, data URLs restored, oldest first."""
    return [await item_of(store, message) for message in messages]


async def item_of(store: ConversationStore, message: Message) -> Item:
    """The session item a stored message stands for, data URLs restored.

    A copy: a loaded message may be shared (kept by the store for the next load).
    """
    native = message.native
    if native is None or native.format != NATIVE_FORMAT or not isinstance(native.data, dict):
        return await _foreign_item(store, message)
    record = native.data
    item = copy.deepcopy(record["item"])
    assert isinstance(item, dict)
    if _has_blobs(record):
        items = [item]
        await _with_bytes(store, items, [0])
        return items[0]
    cuts = record.get(_CUT_BY_PATH)
    if isinstance(cuts, list):
        files = message.files
        for cut in cuts:
            assert isinstance(cut, dict)
            # tenant=None: the caller already loaded the message under its tenant.
            data = await store.read_attachment(files[cut["file"]])  # type: ignore[index]
            text = str(cut["prefix"]) + base64.b64encode(data).decode("ascii")
            _set(item, cut["path"], text)  # type: ignore[arg-type]
    return item


async def _foreign_item(store: ConversationStore, message: Message) -> Item:
    """A message written through the store API (no item of its own) in the SDK's item shape."""
    if message.role is Role.TOOL:
        (result, *_) = message.tool_results
        return {
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": await _output_item(store, result.output),
        }
    if message.role is Role.ASSISTANT and message.tool_calls:
        call = message.tool_calls[0]
        return {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.raw_arguments or json.dumps(call.arguments),
        }
    role = {"system": "system", "user": "user"}.get(message.role.value, "assistant")
    if role == "assistant":
        return {"role": "assistant", "content": message.text}
    content = [await _input_content(store, p) for p in message.parts]
    return {"role": role, "content": [c for c in content if c is not None]}


async def _output_item(store: ConversationStore, output: ToolOutput) -> Any:
    match output:
        case JsonOutput(value=str() as text):
            return text
        case JsonOutput():
            return json.dumps(output.value)
        case ErrorOutput():
            return output.message
        case ContentOutput():
            return [c for p in output.parts if (c := await _input_content(store, p)) is not None]


async def _input_content(store: ConversationStore, part: Part) -> Item | None:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if not isinstance(part, FilePart):
        return None
    if part.uri is not None:
        url = part.uri
    else:
        data = await store.read_attachment(part)
        url = f"data:{part.media_type};base64,{base64.b64encode(data).decode('ascii')}"
    if part.media_type.startswith("image/"):
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    entry: Item = {"type": "input_file", "file_data": url}
    if part.filename is not None:
        entry["filename"] = part.filename
    return entry
