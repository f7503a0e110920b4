"""A conversation's rows as portable JSON, and back: what makes an export restore exactly.

The ``show --json`` document (`convstore.store.transfer.documents`) is a conversation's active path
as people and the public API see it; it cannot carry what only the store sets (other branches,
seq numbers with gaps, the head, the revision, timestamps, tool-call lifecycle rows,
LangGraph checkpoints). An archive document carries those as the rows themselves::

    {"format": "convstore.archive", "version": 1,
     "tables": {"<table>": {"columns": [...], "rows": [[...], ...]}, ...}}

Invariants:

- Every table that holds per-conversation data is included: ``conversations`` (by ``id``) and
  each table of `convstore.db.schema` with a ``conversation_id`` column, found from the schema
  itself, so a table added later is carried without touching this module. ``attachments``
  (shared by every conversation) is carried by the export's blob list instead.
- Values are JSON: JSON columns as their value, timestamps as ISO 8601 with their offset,
  binary columns as base64, booleans as booleans. Reading back gives the values that were
  dumped, on SQLite and PostgreSQL alike, so an archive moves between the two.
- Columns are named per table: an archive written before a column existed restores with that
  column's default; a table or column this schema does not know is refused (the archive is
  from a newer convstore), before anything is written.
- Rows are restored in the schema's dependency order (a conversation before its messages,
  messages before their blob references) inside the caller's transaction.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from sqlalchemy import JSON, Boolean, LargeBinary, Table

from convstore.db import schema
from convstore.db.statements.maintenance import archive_insert, archive_select
from convstore.db.tx import Codec, Tx
from convstore.db.types import UTCDateTime
from convstore.errors import InvalidInputError, MalformedExportError

__all__ = ["ARCHIVE_FORMAT", "ARCHIVE_VERSION", "TABLES", "dump_rows", "restore_rows"]

ARCHIVE_FORMAT: Final = "convstore.archive"
ARCHIVE_VERSION: Final = 1


def _conversation_tables() -> tuple[Table, ...]:
    return tuple(
        t
        for t in schema.metadata.sorted_tables
        if t is schema.conversations or "conversation_id" in t.c
    )


TABLES: Final = _conversation_tables()
"""The per-conversation tables, parents first."""

_BY_NAME: Final = {t.name: t for t in TABLES}


_Convert = Callable[[Any], Any]


def _converters(table: Table, codec: Codec) -> list[tuple[_Convert, _Convert]]:
    """Per column: (stored value -> JSON value, JSON value -> value to bind)."""

    def plain(value: Any) -> Any:
        return value

    out: list[tuple[_Convert, _Convert]] = []
    for column in table.c:
        kind = column.type
        if isinstance(kind, UTCDateTime):
            out.append((_time_out(codec), _time_in(codec)))
        elif isinstance(kind, JSON):
            out.append((codec.load_json, codec.dump_json))
        elif isinstance(kind, LargeBinary):
            out.append((_bytes_out, _bytes_in))
        elif isinstance(kind, Boolean):
            out.append((_bool, _bool))
        else:
            out.append((plain, plain))
    return out


def _time_out(codec: Codec) -> _Convert:
    def dump(raw: Any) -> Any:
        return None if raw is None else codec.load_time(raw).isoformat()

    return dump


def _time_in(codec: Codec) -> _Convert:
    def load(value: Any) -> Any:
        if value is None:
            return None
        try:
            parsed = datetime.fromisoformat(value)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{value!r} is not an ISO 8601 timestamp") from exc
        if parsed.tzinfo is None:
            raise InvalidInputError(f"timestamp {value!r} has no UTC offset")
        return codec.dump_time(parsed)

    return load


def _bytes_out(raw: Any) -> Any:
    return None if raw is None else base64.b64encode(bytes(raw)).decode("ascii")


def _bytes_in(value: Any) -> Any:
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("a binary column is not base64") from exc


def _bool(value: Any) -> Any:
    return None if value is None else bool(value)


def dump_rows(tx: Tx, cid: str) -> dict[str, Any]:
    """Every row of conversation ``cid`` as an archive document (empty tables left out)."""
    tables: dict[str, Any] = {}
    for table in TABLES:
        rows = tx.fetch(archive_select(table), {"cid": cid})
        if not rows:
            continue
        out = [dump for dump, _ in _converters(table, tx.codec)]
        tables[table.name] = {
            "columns": [c.name for c in table.c],
            "rows": [[f(v) for f, v in zip(out, row, strict=True)] for row in rows],
        }
    return {"format": ARCHIVE_FORMAT, "version": ARCHIVE_VERSION, "tables": tables}


ArchiveRows = dict[str, list[dict[str, Any]]]
"""Rows by table name, each a dict of column -> JSON value (validated, not yet converted)."""


def read_archive(document: Any, where: str) -> ArchiveRows:
    """The rows of an archive document, checked against this schema; `InvalidInputError`."""
    if not isinstance(document, dict) or document.get("format") != ARCHIVE_FORMAT:
        raise MalformedExportError(f"not a {ARCHIVE_FORMAT} document", position=where)
    if document.get("version") != ARCHIVE_VERSION:
        raise MalformedExportError(
            f"{ARCHIVE_FORMAT} version {document.get('version')!r} is not supported", position=where
        )
    tables = document.get("tables")
    if not isinstance(tables, dict):
        raise MalformedExportError("'tables' must be an object", position=where)
    out: ArchiveRows = {}
    for name, body in tables.items():
        table = _BY_NAME.get(name)
        if table is None:
            raise MalformedExportError(
                f"table {name!r} is unknown to this convstore", position=where
            )
        columns = body.get("columns") if isinstance(body, dict) else None
        rows = body.get("rows") if isinstance(body, dict) else None
        if not isinstance(columns, list) or not isinstance(rows, list):
            raise MalformedExportError(
                f"table {name!r} needs 'columns' and 'rows' lists", position=where
            )
        unknown = [c for c in columns if not isinstance(c, str) or c not in table.c]
        if unknown:
            raise MalformedExportError(
                f"{name}.{unknown[0]} is unknown to this convstore", position=where
            )
        for row in rows:
            if not isinstance(row, list) or len(row) != len(columns):
                raise MalformedExportError(
                    f"a {name} row does not match its columns", position=where
                )
        out[name] = [dict(zip(columns, row, strict=True)) for row in rows]
    conversation = out.get(schema.conversations.name, [])
    if len(conversation) != 1:
        raise MalformedExportError("an archive holds exactly one conversations row", position=where)
    return out


def restore_rows(tx: Tx, rows: ArchiveRows) -> dict[str, int]:
    """Insert ``rows`` (from `read_archive`); how many rows went into each table."""
    counts: dict[str, int] = {}
    for table in TABLES:
        wanted = rows.get(table.name)
        if not wanted:
            continue
        into = {
            c.name: load for c, (_, load) in zip(table.c, _converters(table, tx.codec), strict=True)
        }
        columns = tuple(wanted[0])
        params = [{name: into[name](row.get(name)) for name in columns} for row in wanted]
        tx.execute_many(archive_insert(table, columns), params)
        counts[table.name] = len(params)
    return counts
