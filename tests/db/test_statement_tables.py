"""The statement modules by table: every statement builds and compiles on both databases, and
each row's named positions are exactly its column list's."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from convstore.db import schema
from convstore.db.statements import Scoped, Statements, column_names
from convstore.db.statements.checkpoints import CHECKPOINT_COLUMNS, CheckpointAt
from convstore.db.statements.conversations import (
    CONVERSATION_COLUMNS,
    PRUNE_COLUMNS,
    HeaderAt,
    PruneAt,
    RowAt,
)
from convstore.db.statements.messages import MESSAGE_COLUMNS, MessageAt, MessageRowAt
from convstore.db.statements.tool_calls import (
    CANCEL_PENDING,
    LIFECYCLE_COLUMNS,
    TOOL_CALL_COLUMNS,
    CancelledAt,
    LifecycleAt,
    ToolCallAt,
)

DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}


def _named(positions: type) -> dict[str, int]:
    return {k: v for k, v in vars(positions).items() if not k.startswith("_")}


@pytest.mark.parametrize(
    ("positions", "columns"),
    [
        (HeaderAt, [*(c.name for c in CONVERSATION_COLUMNS), "message_count"]),
        (MessageAt, [c.name for c in MESSAGE_COLUMNS]),
        (LifecycleAt, [*(c.name for c in LIFECYCLE_COLUMNS), "name", "provider_id", "arguments"]),
        (ToolCallAt, [c.name for c in TOOL_CALL_COLUMNS]),
        (CheckpointAt, [c.name for c in CHECKPOINT_COLUMNS]),
        (PruneAt, [c.name for c in PRUNE_COLUMNS]),
    ],
)
def test_positions_name_every_column_where_it_is(positions: type, columns: list[str]) -> None:
    assert _named(positions) == {name: i for i, name in enumerate(columns)}


@pytest.mark.parametrize(
    ("positions", "table"), [(RowAt, schema.conversations), (MessageRowAt, schema.messages)]
)
def test_whole_row_positions_follow_the_table(positions: type, table: Any) -> None:
    names = column_names(table)
    assert {k: names[v] for k, v in _named(positions).items()} == {k: k for k in _named(positions)}


def test_cancelled_positions_name_what_cancel_pending_returns() -> None:
    returned = [c["name"] for c in CANCEL_PENDING.returning_column_descriptions]
    assert _named(CancelledAt) == {name: i for i, name in enumerate(returned)}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_statement_compiles(dialect: str) -> None:
    statements = Statements.for_dialect(dialect)
    compiled = 0
    for field in dataclasses.fields(statements):
        value: Any = getattr(statements, field.name)
        if value is None:  # a statement this dialect does without (SQLite's search queue)
            assert (dialect, field.name) == ("sqlite", "queue_for_search")
            continue
        forms = [value.any_tenant, value.one_tenant] if isinstance(value, Scoped) else [value]
        for stmt in forms:
            assert str(stmt.compile(dialect=DIALECTS[dialect])).strip(), field.name
            compiled += 1
    assert compiled > 70


def test_a_dialect_neutral_statement_is_one_object_for_both_databases() -> None:
    lite, pg = Statements.for_dialect("sqlite"), Statements.for_dialect("postgresql")
    assert lite.select_messages is pg.select_messages
    assert lite.select_messages_in is not pg.select_messages_in  # a JSON array per dialect
    assert Statements.for_dialect("sqlite").select_messages_in is lite.select_messages_in
