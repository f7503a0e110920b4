"""An archive's rows checked as ``append`` checks what it writes, before a restore writes any.

An export archive (`convstore.store.transfer.archive_rows`) carries a conversation as its rows, so
that a restore is exact; an archive from a stranger carries whatever its author typed. Every
row is held here to what the store itself would have written, and a restore writes only rows
that passed (`convstore.store.transfer.restore`):

- **Nothing names another conversation, tenant or namespace.** Every row's
  ``conversation_id`` is the conversation being restored (rows naming another are refused),
  the tenant is the restoring one, blob references are derived from the messages' own parts
  (the archive's ``blob_refs`` rows are only compared with them) and live in the namespace the
  restoring store gives the tenant; metadata tags are rebuilt from the metadata.
- **Every value fits its column**, typed as the schema declares it, within the store's limits:
  ids and keys as `convstore.limits` bounds them, strings without NUL or lone surrogates, JSON
  values checked like metadata, integers within the column's range (a seq is 1 to 2**31 - 1),
  timestamps ISO 8601 with an offset, and no two rows with the same primary key.
- **Every message is one ``append`` accepts**: built and validated as a `Message` (roles, part
  kinds, per-role parts), checked by `convstore.message_checks.check_messages`, and decoded by
  the store's own loader to the same value, so whatever is restored loads again.
- **The tree and lifecycles are consistent**: parents exist and come before their children,
  the head is a stored message, ``last_seq`` is at least every seq (so no later append reuses
  one), message ids are unique; each ``tool_calls`` row is the call part at its ``(seq, idx)``
  with a known status and result kind, its result (if any) a result part answering it;
  compactions and idempotency keys point inside the conversation.

Every refusal is a `MalformedExportError` whose position names the archive member and the
table, row and column (or message field) at fault.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError
from sqlalchemy import JSON, BigInteger, Boolean, Integer, LargeBinary, String, Table, Text

from convstore.db import schema
from convstore.db.mapping import STATUSES, decode_parts
from convstore.db.types import UTCDateTime
from convstore.errors import ConvstoreError, MalformedExportError
from convstore.limits import (
    MAX_CONVERSATION_ID_LENGTH,
    check_json_object,
    check_text,
)
from convstore.message_checks import check_messages
from convstore.model import Message, ResultKind, ToolCallPart, ToolResultPart
from convstore.model._base import describe_validation_error
from convstore.store.transfer.archive_rows import TABLES, ArchiveRows

__all__ = ["INT32_MAX", "CheckedConversation", "check_conversation"]

INT32_MAX: Final = 2**31 - 1
"""Largest value of an ``Integer`` column (PostgreSQL's ``integer``): seqs, indexes, counts."""
_INT64: Final = 2**63 - 1

_RESULT_KINDS: Final = frozenset(k.value for k in ResultKind)
_DERIVED: Final = frozenset({schema.conversation_tags.name, schema.blob_refs.name})
"""Tables the restore derives itself: tags from the metadata, references from the parts."""
_OBJECT_COLUMNS: Final = {
    ("conversations", "metadata"),
    ("conversations", "state"),
    ("messages", "details"),
    ("messages", "native"),
    ("messages", "usage"),
    ("tool_calls", "arguments"),
    ("tool_calls", "details"),
    ("checkpoints", "channel_versions"),
    ("checkpoints", "metadata"),
}
"""JSON columns that hold an object (or NULL), never another JSON value."""


@dataclass(slots=True)
class CheckedConversation:
    """One conversation's archive rows, checked and made the restore's own."""

    cid: str
    tenant: str | None
    title: str | None
    metadata: dict[str, Any]
    messages: list[Message]
    """Every message (all branches), validated, in seq order."""
    rows: ArchiveRows
    """The rows to insert: conversation ids forced, derived tables left out."""
    references: list[tuple[int, str]]
    """(seq, digest) of every blob a message references: the ``blob_refs`` rows to write."""


class _Fault(Exception):  # noqa: N818 (internal, re-raised as MalformedExportError)
    """A refusal found below `check_conversation`, which adds the member to its position."""


def check_conversation(
    rows: ArchiveRows, *, tenant: str | None, where: str, max_attachment_size: int | None = None
) -> CheckedConversation:
    """``rows`` (from `read_archive`) checked; the tenant is ``tenant`` when given, else theirs.

    Raises `MalformedExportError` naming ``where`` (the archive member) and the field.
    """
    try:
        return _check(rows, tenant, max_attachment_size)
    except _Fault as fault:
        raise MalformedExportError(str(fault), position=where) from fault.__cause__
    except ConvstoreError as exc:
        raise MalformedExportError(str(exc), position=where) from exc


def _check(rows: ArchiveRows, tenant: str | None, max_size: int | None) -> CheckedConversation:
    (header,) = rows[schema.conversations.name]
    _check_columns(schema.conversations, 0, header)
    cid = header["id"]
    if not isinstance(cid, str) or not 1 <= len(cid) <= MAX_CONVERSATION_ID_LENGTH:
        raise _Fault("conversations[0].id must be a conversation id")
    owner = tenant if tenant is not None else header.get("tenant")
    out: ArchiveRows = {schema.conversations.name: [{**header, "tenant": owner}]}
    for table in TABLES:
        if table is schema.conversations:
            continue
        kept = []
        for index, row in enumerate(rows.get(table.name, [])):
            named = row.get("conversation_id", cid)
            if named != cid:
                raise _Fault(
                    f"{table.name}[{index}].conversation_id names conversation {named!r}, not "
                    f"the archive's own ({cid!r})"
                )
            _check_columns(table, index, row)
            kept.append({**row, "conversation_id": cid})
        _check_unique(table, kept)
        if kept and table.name not in _DERIVED:
            out[table.name] = kept
    messages = _messages(out.get(schema.messages.name, []), max_size)
    by_seq = {m.seq: m for m in messages}
    _check_tree(header, messages)
    _check_calls(out.get(schema.tool_calls.name, []), by_seq)
    last_seq = header.get("last_seq") or 0
    _check_pointers(out, last_seq)
    references = sorted(
        {(m.seq or 0, f.attachment.sha256) for m in messages for f in m.files if f.attachment}
    )
    _compare_references(rows.get(schema.blob_refs.name, []), references)
    metadata = header.get("metadata")
    return CheckedConversation(
        cid=cid,
        tenant=owner,
        title=header.get("title"),
        metadata=dict(metadata or {}),
        messages=messages,
        rows=out,
        references=references,
    )


# -- columns ----------------------------------------------------------------------------------


def _check_columns(table: Table, index: int, row: dict[str, Any]) -> None:
    for column in table.c:
        name = column.name
        at = f"{table.name}[{index}].{name}"
        if name not in row:
            if not column.nullable and column.server_default is None:
                raise _Fault(f"{at} is missing")
            continue
        value = row[name]
        if value is None:
            if not column.nullable:
                raise _Fault(f"{at} must not be null")
            continue
        _check_value(table.name, column.name, column.type, value, at)


def _check_value(table: str, column: str, kind: Any, value: Any, at: str) -> None:
    if isinstance(kind, Boolean):
        if not isinstance(value, bool):
            raise _Fault(f"{at} must be true or false, not {type(value).__name__}")
    elif isinstance(kind, Integer | BigInteger):
        top = _INT64 if isinstance(kind, BigInteger) else INT32_MAX
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Fault(f"{at} must be an integer, not {type(value).__name__}")
        if not -top - 1 <= value <= top:
            raise _Fault(f"{at} is outside the column's range (up to {top:,})")
    elif isinstance(kind, UTCDateTime):
        _check_time(value, at)
    elif isinstance(kind, LargeBinary):
        if not isinstance(value, str):
            raise _Fault(f"{at} must be base64 text")
        try:
            base64.b64decode(value, validate=True)
        except ValueError as exc:
            raise _Fault(f"{at} is not base64") from exc
    elif isinstance(kind, JSON):
        if (table, column) in _OBJECT_COLUMNS and not isinstance(value, dict):
            raise _Fault(f"{at} must be a JSON object, not {type(value).__name__}")
        _check_json(value, at)
    elif isinstance(kind, String | Text):
        length = getattr(kind, "length", None)
        if isinstance(value, str) and length is not None and len(value) > length:
            raise _Fault(f"{at} is longer than the column's {length} characters")
        try:
            check_text(value, at)
        except ConvstoreError as exc:
            raise _Fault(str(exc)) from exc


def _check_time(value: Any, at: str) -> None:
    if not isinstance(value, str) or len(value) > 64:
        raise _Fault(f"{at} must be an ISO 8601 timestamp")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise _Fault(f"{at} is not an ISO 8601 timestamp") from exc
    if parsed.tzinfo is None:
        raise _Fault(f"{at} has no UTC offset")


def _check_json(value: Any, at: str) -> None:
    try:
        check_json_object({"value": value}, at)
    except ConvstoreError as exc:
        raise _Fault(str(exc).replace(f"{at}.value", at)) from exc


def _check_unique(table: Table, rows: list[dict[str, Any]]) -> None:
    key = [c.name for c in table.primary_key.columns if c.name != "conversation_id"]
    if not key or table is schema.conversations:
        return
    seen: set[tuple[Any, ...]] = set()
    for index, row in enumerate(rows):
        value = tuple(_hashable(row.get(name)) for name in key)
        if value in seen:
            named = dict(zip(key, value, strict=True))
            raise _Fault(f"{table.name}[{index}] repeats the key {named}")
        seen.add(value)


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, dict | list) else value


# -- messages ---------------------------------------------------------------------------------


def _messages(rows: list[dict[str, Any]], max_size: int | None) -> list[Message]:
    """Each ``messages`` row as a validated `Message`, in seq order, checked like ``append``."""
    built: list[Message] = []
    for index, row in enumerate(rows):
        at = f"messages[{index}]"
        parts = row.get("parts", [])
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            raise _Fault(f"{at}.parts must be a list of part objects")
        fields = {
            "role": row.get("role"),
            "id": row.get("message_id"),
            "parts": parts,
            "provider": row.get("provider"),
            "model": row.get("model"),
            "seq": row.get("seq"),
            "provider_details": row.get("details"),
            "native": row.get("native"),
            "usage": row.get("usage"),
            "parent_seq": row.get("parent_seq"),
        }
        try:
            message = Message.model_validate(fields)
        except ValidationError as exc:
            raise _Fault(f"{at}: {describe_validation_error(exc)}") from exc
        except ConvstoreError as exc:
            raise _Fault(f"{at}: {exc}") from exc
        try:
            check_messages([message], max_attachment_size=max_size)
        except ConvstoreError as exc:
            raise _Fault(f"{at}: {exc}") from exc
        # The loader builds parts without validation (`decode_parts`): it must read these back
        # as exactly the parts just validated, or a load would differ from what was checked.
        try:
            decoded = decode_parts(parts)
        except Exception as exc:  # any failure means "no load can read this"
            raise _Fault(f"{at}.parts cannot be read back: {exc}") from exc
        if any(f.data is not None or f.pending is not None for f in message.files):
            raise _Fault(f"{at}.parts hold file bytes: a stored part references its blob")
        if decoded != message.parts:
            raise _Fault(f"{at}.parts hold fields the store does not write")
        built.append(message)
    built.sort(key=lambda m: m.seq or 0)
    return built


def _check_tree(header: dict[str, Any], messages: Sequence[Message]) -> None:
    seqs: set[int] = set()
    ids: set[str] = set()
    for m in messages:
        assert m.seq is not None  # the column check requires it
        if m.parent_seq is not None and m.parent_seq not in seqs:
            raise _Fault(
                f"message {m.seq}: parent_seq {m.parent_seq} is not an earlier message of the "
                "conversation"
            )
        if m.id is not None:
            if m.id in ids:
                raise _Fault(f"message {m.seq}: message id {m.id!r} is used twice")
            ids.add(m.id)
        seqs.add(m.seq)
    last_seq = header.get("last_seq") or 0
    if seqs and last_seq < max(seqs):
        raise _Fault(f"conversations.last_seq {last_seq} is below message seq {max(seqs)}")
    head = header.get("head_seq")
    if head is not None and head not in seqs:
        raise _Fault(f"conversations.head_seq {head} is not a message of the conversation")


def _check_calls(rows: list[dict[str, Any]], by_seq: dict[int | None, Message]) -> None:
    for index, row in enumerate(rows):
        at = f"tool_calls[{index}]"
        message = by_seq.get(row["seq"])
        idx = row["idx"]
        part = message.parts[idx] if message is not None and 0 <= idx < len(message.parts) else None
        if not isinstance(part, ToolCallPart) or part.id != row["id"]:
            raise _Fault(f"{at}: no call part {row['id']!r} at seq {row['seq']}, index {idx}")
        if part.name != row["name"] or part.arguments != row["arguments"]:
            raise _Fault(f"{at}: its name or arguments differ from the call part's")
        if row["status"] not in STATUSES:
            raise _Fault(f"{at}.status {row['status']!r} is not a tool-call status")
        kind = row.get("result_kind")
        if kind is not None and kind not in _RESULT_KINDS:
            raise _Fault(f"{at}.result_kind {kind!r} is not a result kind")
        result_seq, result_idx = row.get("result_seq"), row.get("result_idx")
        if result_seq is None:
            continue
        answer = by_seq.get(result_seq)
        found = (
            answer.parts[result_idx]
            if answer is not None
            and isinstance(result_idx, int)
            and 0 <= result_idx < len(answer.parts)
            else None
        )
        if not isinstance(found, ToolResultPart) or found.call_id != row["id"]:
            raise _Fault(f"{at}: no result of {row['id']!r} at seq {result_seq}")


def _check_pointers(rows: ArchiveRows, last_seq: int) -> None:
    for index, row in enumerate(rows.get(schema.compactions.name, [])):
        if not 1 <= row["through_seq"] <= max(last_seq, 0):
            raise _Fault(f"compactions[{index}].through_seq is not a seq of the conversation")
        if row["id"] < 1:
            raise _Fault(f"compactions[{index}].id must be at least 1")
    for index, row in enumerate(rows.get(schema.append_keys.name, [])):
        first, count = row["first_seq"], row["count"]
        if first < 1 or count < 1 or first + count - 1 > last_seq:
            raise _Fault(f"append_keys[{index}] names seqs outside the conversation")


def _compare_references(given: list[dict[str, Any]], derived: list[tuple[int, str]]) -> None:
    """The archive's ``blob_refs`` must be what its parts reference (they are rewritten anyway)."""
    listed = sorted({(r.get("seq"), r.get("sha256")) for r in given}, key=repr)
    if listed != sorted(derived, key=repr):
        raise _Fault("blob_refs rows differ from the attachments the messages reference")
