"""What the per-table statement modules share: tenant scoping, upserts, JSON lists, positions.

Invariants:

- Only the few constructs here depend on the dialect (``ON CONFLICT``, a JSON array's values);
  every other statement is one Core object shared by both databases.
- `positions` derives a row's named indexes from the column list that selects it, so a reader
  names a column (``row[HEADER.head_seq]``) and the order has one source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

from sqlalchemy import (
    JSON,
    Delete,
    Insert,
    Integer,
    Select,
    Table,
    Update,
    bindparam,
    cast,
    func,
    literal_column,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement

from convstore.db.schema import conversations

__all__ = [
    "PENDING",
    "Scoped",
    "by_conversation",
    "column_names",
    "json_list",
    "positions",
    "scoped",
    "upsert_ignore",
]

S = TypeVar("S", Select[Any], Update, Delete)


def column_names(table: Table) -> tuple[str, ...]:
    """Column names in table order: the tuple layout of that table's rows."""
    return tuple(c.name for c in table.columns)


def positions(columns: Iterable[Any]) -> dict[str, int]:
    """Each column's index in a row selected by ``columns``, by the column's name."""
    return {column.name: index for index, column in enumerate(columns)}


@dataclass(frozen=True, slots=True)
class Scoped(Generic[S]):
    """One statement in two forms: for any tenant, and restricted to ``:for_tenant``."""

    any_tenant: S
    one_tenant: S

    def pick(self, tenant: str | None) -> S:
        """The form to run when the caller passed ``tenant``."""
        return self.any_tenant if tenant is None else self.one_tenant


def scoped(build: Callable[[bool], S]) -> Scoped[S]:
    """Both forms of the statement ``build(tenant_scoped)`` builds."""
    return Scoped(any_tenant=build(False), one_tenant=build(True))


def by_conversation(tenant_scoped: bool) -> ColumnElement[bool]:
    """The conversation ``:cid`` (of tenant ``:for_tenant`` when ``tenant_scoped``)."""
    where = conversations.c.id == bindparam("cid")
    if tenant_scoped:
        where = where & (conversations.c.tenant == bindparam("for_tenant"))
    return where


def upsert_ignore(dialect_name: str, table: Table) -> Insert:
    """An insert into ``table`` that ignores a row whose key exists (``ON CONFLICT DO NOTHING``)."""
    match dialect_name:
        case "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        case "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing()
        case _:
            raise NotImplementedError(f"no upsert for dialect {dialect_name!r}")


@cache
def json_list(dialect_name: str, name: str, *, integers: bool = False) -> Select[Any]:
    """The values of a JSON array of strings or integers bound as ``:name``, as a subquery.

    One parameter however long the list, so the statement compiles once (an expanding ``IN``
    would compile per length on the raw SQLite path).
    """
    match dialect_name:
        case "sqlite":
            return select(literal_column("value")).select_from(func.json_each(bindparam(name)))
        case "postgresql":
            values = func.json_array_elements_text(cast(bindparam(name, type_=JSON), JSON))
            return select(cast(values, Integer) if integers else values)
        case _:
            raise NotImplementedError(f"no JSON arrays for dialect {dialect_name!r}")


PENDING: Any = literal_column("'pending'")
"""Written into the SQL rather than bound: SQLite matches a query to the partial index on
pending calls by this value, and a bound value makes it re-prepare the statement on every
execution (a twentieth of an append)."""
