"""Column types shared by the schema, the migrations and the SQLite hot path.

Invariants:

- Timestamps are UTC. `UTCDateTime` refuses naive datetimes on the way in and returns aware
  UTC datetimes on the way out, on every dialect.
- On SQLite a timestamp is the text `SQLITE_DATETIME_FORMAT` produces; the raw-driver hot path
  formats and parses with `format_sqlite_datetime` / `parse_sqlite_datetime` so both paths
  agree byte for byte.
- JSON columns are plain JSON text on every dialect (``json``, not ``jsonb``, on PostgreSQL):
  nothing queries inside them, and replaying provider data wants key order kept as written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import DateTime, Dialect
from sqlalchemy.dialects import sqlite
from sqlalchemy.types import TypeDecorator, TypeEngine
from typing_extensions import override

__all__ = [
    "SQLITE_DATETIME_FORMAT",
    "UTCDateTime",
    "format_sqlite_datetime",
    "parse_sqlite_datetime",
]

SQLITE_DATETIME_FORMAT: Final = (
    "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d"
)
_STRFTIME: Final = "%Y-%m-%d %H:%M:%S.%f"


def format_sqlite_datetime(value: datetime) -> str:
    """The SQLite text for an aware datetime (as `UTCDateTime` stores it)."""
    utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    if utc.year < 1000:  # strftime leaves such years unpadded; keep its text exactly
        return utc.strftime(_STRFTIME)
    # What strftime gives, in a seventh of its time (every write stamps its rows).
    return "%04d-%02d-%02d %02d:%02d:%02d.%06d" % (  # noqa: UP031
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond
    )  # fmt: skip


def parse_sqlite_datetime(value: str) -> datetime:
    """An aware UTC datetime from `format_sqlite_datetime`'s text."""
    return datetime.fromisoformat(value).replace(tzinfo=UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp that refuses naive values."""

    impl = DateTime(timezone=True)
    cache_ok = True

    @override
    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            stored = sqlite.DATETIME(storage_format=SQLITE_DATETIME_FORMAT)  # type: ignore[no-untyped-call]
            return dialect.type_descriptor(stored)
        return dialect.type_descriptor(DateTime(timezone=True))

    @override
    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are refused: convstore stores UTC timestamps")
        value = value.astimezone(UTC)
        # SQLite's DATETIME type stores naive text; the value is already UTC.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    @override
    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
