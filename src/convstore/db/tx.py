"""The transaction interface store operations are written against, and value codecs.

Every store operation is one synchronous function ``fn(tx) -> T``. A backend runs it inside
one database transaction: on SQLite in the driver's own thread (one hop for the whole
operation), on PostgreSQL through SQLAlchemy's ``run_sync`` bridge. So each operation is
written once, and the number of event-loop round trips per operation is fixed by the backend,
not by how many statements the operation needs.

Invariants:

- `Tx` methods take Core statements from `convstore.db.statements`; never SQL text.
- Values cross the boundary through the backend's `Codec`: the raw SQLite path binds JSON text
  and timestamp text itself, while SQLAlchemy's column types do that on PostgreSQL, so the
  codec there passes values through untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic_core import from_json, to_json
from sqlalchemy import Delete, Insert, Select, TextClause, Update
from typing_extensions import override

from convstore.db.statements import Statements
from convstore.db.types import format_sqlite_datetime, parse_sqlite_datetime

__all__ = ["Codec", "PassthroughCodec", "Row", "SqliteCodec", "Statement", "Tx"]

Row = tuple[Any, ...]
Statement = Select[Any] | Insert | Update | Delete | TextClause
"""A Core statement from `convstore.db.statements`, or a textual one (SQLite's FTS5 upkeep,
PostgreSQL's search catch-up: SQL that Core has no constructs for)."""


class Codec(Protocol):
    """Converts values between Python and what the backend binds and returns."""

    encodes_parts_from_models: bool = False
    """Whether a message's parts are encoded straight from the models by pydantic-core (a
    third cheaper; keeps ``"synthetic": false``, which reads back the same). SQLite's codec
    does, for both of its append paths; codecs that bind Python values, or whose rows must
    equal such rows, do not."""

    def dump_json(self, value: Any) -> Any:
        """A JSON value (``None`` stays ``None``: SQL NULL) as the backend binds it."""
        ...

    def load_json(self, raw: Any) -> Any:
        """A JSON column as read back, as a Python value."""
        ...

    def dump_time(self, value: datetime) -> Any:
        """An aware datetime as the backend binds it."""
        ...

    def load_time(self, raw: Any) -> datetime:
        """A timestamp column as read back, as an aware UTC datetime."""
        ...


class Tx(Protocol):
    """One open transaction."""

    statements: Statements
    codec: Codec

    def fetch(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run a statement that returns rows (``SELECT``, ``... RETURNING``)."""
        ...

    def stream(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> Iterable[Row]:
        """Run a statement that returns rows, yielding them one at a time (large reads)."""
        ...

    def execute(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    def execute_many(self, stmt: Statement, params: Sequence[Mapping[str, Any]]) -> None:
        """Run a statement once per parameter set."""
        ...

    def insert_rows(self, stmt: Insert, rows: Sequence[Row]) -> None:
        """Insert rows given as tuples in the table's column order."""
        ...


_PARSED_TIMES: dict[str, datetime] = {}


class SqliteCodec(Codec):
    """JSON as compact text, timestamps as `UTCDateTime`'s SQLite text."""

    encodes_parts_from_models = True

    def __init__(self) -> None:
        # One append writes many rows with the same timestamp, and a load reads them back:
        # parsing each distinct text once keeps timestamp decoding off the load profile. Kept
        # across transactions (a reload meets the same texts again); a dict's get and set are
        # atomic, so the driver threads may share it.
        self._times = _PARSED_TIMES
        # And an append stamps a dozen rows with one `datetime`: format it once. One pair,
        # replaced whole, read once per call: threads sharing the codec see a pair or another.
        self._last_dumped: tuple[datetime, str] | None = None

    @override
    def dump_json(self, value: Any) -> Any:
        return None if value is None else to_json(value).decode()

    @override
    def load_json(self, raw: Any) -> Any:
        return None if raw is None else from_json(raw)

    @override
    def dump_time(self, value: datetime) -> Any:
        last = self._last_dumped
        if last is not None and last[0] is value:
            return last[1]
        text = format_sqlite_datetime(value)
        self._last_dumped = (value, text)
        return text

    @override
    def load_time(self, raw: Any) -> datetime:
        parsed = self._times.get(raw)
        if parsed is None:
            if len(self._times) > 32_768:
                self._times.clear()
            parsed = self._times[raw] = parse_sqlite_datetime(raw)
        return parsed


class PassthroughCodec(Codec):
    """For backends whose column types already convert (SQLAlchemy's JSON and `UTCDateTime`)."""

    @override
    def dump_json(self, value: Any) -> Any:
        return value

    @override
    def load_json(self, raw: Any) -> Any:
        return raw

    @override
    def dump_time(self, value: datetime) -> Any:
        return value

    @override
    def load_time(self, raw: Any) -> datetime:
        result: datetime = raw
        return result
