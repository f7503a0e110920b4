"""Planning an append before any statement runs, for the paths that write it in one go.

`convstore.store.append._one_statement` (PostgreSQL) and `convstore.store.append._lean_append`
(SQLite) plan a batch with the general path's own walker
(`convstore.store.append.writes.plan_batch`) outside any transaction, then write the planned rows.
This module holds what both need for that.

Invariant: planning reads and writes nothing; a `PlanningTx` refuses every statement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Insert
from typing_extensions import override

from convstore.db.statements import Statements
from convstore.db.tx import Codec, Row, Statement, Tx
from convstore.model import Message, ToolCallPart, ToolResultPart

__all__ = ["PlanningTx", "planning_cannot_decide"]


class PlanningTx(Tx):
    """What `writes.plan_batch` needs of a transaction: statements and a codec; it runs none."""

    statements: Statements
    codec: Codec

    def __init__(self, statements: Statements, codec: Codec) -> None:
        self.statements = statements
        self.codec = codec

    @override
    def fetch(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> list[Row]:
        raise AssertionError("planning reads nothing")

    @override
    def stream(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> Iterable[Row]:
        raise AssertionError("planning reads nothing")

    @override
    def execute(self, stmt: Statement, params: Mapping[str, Any] | None = None) -> int:
        raise AssertionError("planning writes nothing")

    @override
    def execute_many(self, stmt: Statement, params: Sequence[Mapping[str, Any]]) -> None:
        raise AssertionError("planning writes nothing")

    @override
    def insert_rows(self, stmt: Insert, rows: Sequence[Row]) -> None:
        raise AssertionError("planning writes nothing")


def planning_cannot_decide(batch: list[Message]) -> bool:
    """Whether a result's outcome depends on calls planning cannot see.

    Two results for one call the batch did not make (before them): the second one's outcome
    depends on whether that call exists. A result before the call it names, in one batch:
    the general path takes it for a result without its call, planning for an earlier call.
    """
    made: set[str] = set()
    answered: set[str] = set()
    for message in batch:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                if part.id in answered:
                    return True
                made.add(part.id)
            elif isinstance(part, ToolResultPart) and part.call_id not in made:
                if part.call_id in answered:
                    return True
                answered.add(part.call_id)
    return False
