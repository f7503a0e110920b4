"""openai-agents session items to stored messages (used by `openai_agents`).

No ``agents`` import here: items are plain JSON dicts, as the SDK hands them to sessions.

Invariants:

- `to_message` keeps the item as the message's `NativeRecord` (format ``openai-agents``) and
  maps it onto canonical parts; every inline ``data:`` URL (or bare base64 ``file_data``) at a
  place that becomes a canonical file is replaced in the record by a blob placeholder
  (`convstore.integrations._core.native_blobs`, as every integration's records), its bytes carried
  by the `FilePart` (so ``append`` stores them as a blob), and the record marked ``"blobs"``.
  Only base64 that re-encodes to the same text is replaced, so reading puts back exactly the
  same string.
- Reading them back is `convstore.integrations.openai_agents._reads`.
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
    InvalidInputError,
    MediaTypeMismatchError,
)
from convstore.integrations._core.native_blobs import placeholder
from convstore.json_input import Json, parse_data_url
from convstore.model import (
    FilePart,
    Message,
    Role,
    ToolCallPart,
)

__all__ = [
    "BLOBS_KEY",
    "CUT_BY_PATH_KEY",
    "NATIVE_FORMAT",
    "Item",
    "first_calls_only",
    "set_at",
    "to_message",
]

NATIVE_FORMAT: Final = "openai-agents"
"""`NativeRecord.format` of the items a ``ConvstoreSession`` stores."""

Item = dict[str, Any]
"""A session item: one Responses-API input item as JSON."""

_OCTET_STREAM: Final = "application/octet-stream"
BLOBS_KEY: Final = "blobs"
"""A record key: ``True`` when the item holds blob placeholders for bytes taken out."""
CUT_BY_PATH_KEY: Final = "files"
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
            set_at(stripped, path, blob)
        record = {"item": stripped, BLOBS_KEY: True}
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


def set_at(node: Any, path: Sequence[str | int], value: JsonValue) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
