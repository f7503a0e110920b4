"""Statements on tool calls: their rows, lifecycles, cancellation and the calls a delete drops.

Invariants:

- A load reads a call's lifecycle only (`LIFECYCLE_COLUMNS`, positions in `LifecycleAt`): the
  part that made the call holds its name and arguments. Whole calls (`TOOL_CALL_COLUMNS`,
  `ToolCallAt`) are read where no part is at hand.
- ``pending`` is written into the SQL of the statements that look for it (`PENDING`).
- The insert of an append's call rows and the interrupt of calls left pending by a new turn
  are with the append's statements (`convstore.db.statements`).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from sqlalchemy import (
    Delete,
    Insert,
    Select,
    Update,
    bindparam,
    case,
    delete,
    insert,
    select,
    update,
)

from convstore.db.schema import tool_calls
from convstore.db.statements._common import PENDING, json_list, positions

__all__ = [
    "CANCEL_CALL",
    "CANCEL_PENDING",
    "INSERT_TOOL_CALL",
    "INTERRUPT_PENDING",
    "LIFECYCLE_COLUMNS",
    "SELECT_CALL_STATES",
    "SELECT_PENDING",
    "SELECT_TOOL_CALL",
    "SELECT_TOOL_CALLS",
    "SET_LIFECYCLE",
    "TOOL_CALL_COLUMNS",
    "CancelledAt",
    "LifecycleAt",
    "ToolCallAt",
    "copy_tool_calls",
    "delete_calls_of",
    "select_call_states_in",
    "select_call_states_reaching_back",
    "select_lifecycles_in",
    "select_tool_calls_in",
]

_CALL = tool_calls.c
_CID: Any = bindparam("cid")

LIFECYCLE_COLUMNS = (
    _CALL.id,
    _CALL.seq,
    _CALL.idx,
    _CALL.status,
    _CALL.result_kind,
    _CALL.result_seq,
    _CALL.result_idx,
    _CALL.created_at,
    _CALL.completed_at,
    _CALL.cancelled_at,
)
"""A call's lifecycle without what its part already says (name, arguments): what a load reads
of the calls its messages made, which it builds from their parts."""

_MADE_BEFORE_COLUMNS = (_CALL.name, _CALL.provider_id, _CALL.arguments)
"""What `select_call_states_reaching_back` adds after `LIFECYCLE_COLUMNS`."""

_LC: Final = positions((*LIFECYCLE_COLUMNS, *_MADE_BEFORE_COLUMNS))


class LifecycleAt:
    """Where each column is in a `LIFECYCLE_COLUMNS` row (the last three: reaching back)."""

    id: Final = _LC["id"]
    seq: Final = _LC["seq"]
    idx: Final = _LC["idx"]
    status: Final = _LC["status"]
    result_kind: Final = _LC["result_kind"]
    result_seq: Final = _LC["result_seq"]
    result_idx: Final = _LC["result_idx"]
    created_at: Final = _LC["created_at"]
    completed_at: Final = _LC["completed_at"]
    cancelled_at: Final = _LC["cancelled_at"]
    name: Final = _LC["name"]
    provider_id: Final = _LC["provider_id"]
    arguments: Final = _LC["arguments"]


TOOL_CALL_COLUMNS = (
    _CALL.id,
    _CALL.seq,
    _CALL.name,
    _CALL.provider_id,
    _CALL.arguments,
    _CALL.raw_arguments,
    _CALL.status,
    _CALL.result_kind,
    _CALL.result_seq,
    _CALL.result_idx,
    _CALL.details,
    _CALL.created_at,
    _CALL.completed_at,
)
"""The columns a `ToolCall` is built from, in the order `convstore.db.mapping` reads them."""

_TC: Final = positions(TOOL_CALL_COLUMNS)


class ToolCallAt:
    """Where each column is in a `TOOL_CALL_COLUMNS` row."""

    id: Final = _TC["id"]
    seq: Final = _TC["seq"]
    name: Final = _TC["name"]
    provider_id: Final = _TC["provider_id"]
    arguments: Final = _TC["arguments"]
    raw_arguments: Final = _TC["raw_arguments"]
    status: Final = _TC["status"]
    result_kind: Final = _TC["result_kind"]
    result_seq: Final = _TC["result_seq"]
    result_idx: Final = _TC["result_idx"]
    details: Final = _TC["details"]
    created_at: Final = _TC["created_at"]
    completed_at: Final = _TC["completed_at"]


INSERT_TOOL_CALL: Final[Insert] = insert(tool_calls)
"""A whole row, every column in table order: an append's calls."""


SELECT_TOOL_CALL: Final = (
    select(*TOOL_CALL_COLUMNS)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.id == bindparam("call_id"))
)

SELECT_TOOL_CALLS: Final = (
    select(*TOOL_CALL_COLUMNS).where(_CALL.conversation_id == _CID).order_by(_CALL.seq, _CALL.idx)
)
"""Every call of a conversation."""


def _ids(dialect_name: str) -> Any:
    return _CALL.id.in_(json_list(dialect_name, "ids"))


@cache
def select_tool_calls_in(dialect_name: str) -> Select[Any]:
    """The calls whose ids are in the JSON array ``:ids``."""
    return (
        select(*TOOL_CALL_COLUMNS)
        .where(_CALL.conversation_id == _CID)
        .where(_ids(dialect_name))
        .order_by(_CALL.seq, _CALL.idx)
    )


# No ORDER BY: a load orders calls by the messages and parts that made them.
SELECT_CALL_STATES: Final = select(*LIFECYCLE_COLUMNS).where(_CALL.conversation_id == _CID)
"""`LIFECYCLE_COLUMNS` of every call of a conversation."""


@cache
def select_call_states_in(dialect_name: str) -> Select[Any]:
    """`LIFECYCLE_COLUMNS` of the calls whose ids are in the JSON array ``:ids``."""
    return select(*LIFECYCLE_COLUMNS).where(_CALL.conversation_id == _CID).where(_ids(dialect_name))


@cache
def select_call_states_reaching_back(dialect_name: str) -> Select[Any]:
    """`select_call_states_in`, then name, provider id and arguments of calls made earlier.

    Those three only for calls made before ``:first``: a window answering calls it did not
    make has no part of them.
    """
    made_before = (case((_CALL.seq < bindparam("first"), c)) for c in _MADE_BEFORE_COLUMNS)
    return (
        select(*LIFECYCLE_COLUMNS, *made_before)
        .where(_CALL.conversation_id == _CID)
        .where(_ids(dialect_name))
    )


@cache
def select_lifecycles_in(dialect_name: str) -> Select[Any]:
    """(id, seq, status, result_kind, result_seq, result_idx, cancelled_at) of ``:ids``."""
    return (
        select(
            _CALL.id,
            _CALL.seq,
            _CALL.status,
            _CALL.result_kind,
            _CALL.result_seq,
            _CALL.result_idx,
            _CALL.cancelled_at,
        )
        .where(_CALL.conversation_id == _CID)
        .where(_ids(dialect_name))
    )


@cache
def copy_tool_calls(dialect_name: str) -> Select[Any]:
    """Whole call rows (every column) whose ids are in ``:ids``, for a fork."""
    return select(tool_calls).where(_CALL.conversation_id == _CID).where(_ids(dialect_name))


@cache
def delete_calls_of(dialect_name: str) -> Delete:
    """The calls message ``:seq`` made (ids in ``:ids``).

    Nothing cascades from a message to its calls (see `convstore.db.schema.tool_calls`).
    """
    return (
        delete(tool_calls)
        .where(_CALL.conversation_id == _CID)
        .where(_ids(dialect_name))
        .where(_CALL.seq == bindparam("seq"))
    )


SET_LIFECYCLE: Final[Update] = (
    update(tool_calls)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.id == bindparam("call_id"))
    .values(
        status=bindparam("status"),
        result_kind=bindparam("result_kind"),
        result_seq=bindparam("result_seq"),
        result_idx=bindparam("result_idx"),
        completed_at=bindparam("completed_at"),
    )
)
"""Sets a call's status, result and completion time (a result stored, a path switched, a result
popped)."""

SELECT_PENDING: Final = (
    select(_CALL.id, _CALL.seq)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.status == PENDING)
    .order_by(_CALL.seq, _CALL.idx)
)

INTERRUPT_PENDING: Final[Update] = (
    update(tool_calls)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.status == PENDING)
    .where(_CALL.seq < bindparam("before_seq"))
    .values(status="interrupted", completed_at=bindparam("now"))
)
"""The calls a new user turn leaves pending before ``:before_seq``, interrupted."""

_CANCELLED_COLUMNS = (_CALL.id, _CALL.seq, _CALL.idx)
_CANCELLED: Final = positions(_CANCELLED_COLUMNS)


class CancelledAt:
    """Where each column is in a `CANCEL_PENDING` row."""

    id: Final = _CANCELLED["id"]
    seq: Final = _CANCELLED["seq"]
    idx: Final = _CANCELLED["idx"]


CANCEL_PENDING: Final[Update] = (
    update(tool_calls)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.status == PENDING)
    .values(status="cancelled", completed_at=bindparam("now"), cancelled_at=bindparam("now"))
    .returning(*_CANCELLED_COLUMNS)
)

CANCEL_CALL: Final[Update] = (
    update(tool_calls)
    .where(_CALL.conversation_id == _CID)
    .where(_CALL.id == bindparam("call_id"))
    .values(status="cancelled", completed_at=bindparam("now"), cancelled_at=bindparam("now"))
)
