"""A load or window as one PostgreSQL statement: one round trip, run on the asyncpg connection.

The statement reads the header (``h``), the window of the active path (``w``: newest first by
``seq`` on an unbranched conversation, a walk up the parent pointers from the head on a
branched one, exactly as `convstore.db.statements` reads them), the tool calls the window
made or answered (``c``: for a whole load every call of the conversation; for a window the
calls whose ids its parts name, found by primary key), the messages holding the results of
those calls that lie after the window (``later``: a ``before_seq`` page), and the compactions.
It returns them as one row set, each row tagged with its kind and its values in typed slots
(`Slots`), ordered by kind and then by ``seq`` (compactions by id).

Invariants:

- One statement is one snapshot, so no transaction is opened (no ``BEGIN``/``COMMIT`` round
  trips): the rows are those the transactional path (`convstore.store.reads`) reads inside one
  ``REPEATABLE READ`` transaction.
- A conversation that does not exist (for the tenant, when one is given) returns no rows.
- The window's sizes are bound, never interpolated: one prepared statement serves every load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Final

from convstore.db.tx import Row

__all__ = ["NO_LIMIT", "SQL_KEYS", "SQL_ROWS", "LoadRows", "arguments", "split"]

NO_LIMIT: Final = 2**62
"""No bound on the window's size or on ``before_seq`` (bound as a ``bigint``)."""

HEADER, MESSAGE, CALL, COMPACTION, LATER = 0, 1, 2, 3, 4
"""Row kinds: the first column of every row."""

# Slots (after the kind): n1..n4 bigint, s1..s5 text, t1..t3 timestamptz, j1..j4 JSON as text
# (decoded by the caller, and only where needed: the driver would decode every value), b bool.
_NULLS: Final = {
    "n": "NULL::bigint",
    "s": "NULL::text",
    "t": "NULL::timestamptz",
    "j": "NULL::text",
    "b": "NULL::boolean",
}
_SLOTS: Final = (
    "n1", "n2", "n3", "n4", "s1", "s2", "s3", "s4", "s5", "t1", "t2", "t3",
    "j1", "j2", "j3", "j4", "b",
)  # fmt: skip


def _select(kind: int, values: dict[str, str], source: str) -> str:
    columns = ", ".join(values.get(slot, _NULLS[slot[0]]) for slot in _SLOTS)
    return f"SELECT {kind}, {columns} FROM {source}"  # noqa: S608 (schema names, no values)


def _message_values(alias: str) -> dict[str, str]:
    a = alias
    return {
        "n1": f"{a}.seq", "n2": f"{a}.parent_seq", "s1": f"{a}.role", "s2": f"{a}.provider",
        "s3": f"{a}.model", "t1": f"{a}.created_at", "j1": f"{a}.details::text",
        "s4": f"{a}.message_id", "j2": f"{a}.parts::text", "j3": f"{a}.native::text",
        "j4": f"{a}.usage::text",
    }  # fmt: skip


_HEADER_VALUES: Final = {
    "n1": "h.last_seq", "n2": "h.head_seq", "s1": "h.id", "s2": "h.tenant", "s3": "h.title",
    "s4": "h.revision", "t1": "h.created_at", "t2": "h.updated_at", "j1": "h.metadata::text",
    "j2": "h.state::text", "b": "h.branched",
}  # fmt: skip

_MADE_BEFORE: Final = "NOT $5::boolean AND c.seq < (SELECT min(seq) FROM w)"
"""Whether a call was made before the window: only then are its name and arguments sent."""

_CALL_VALUES: Final = {
    "n1": "c.seq", "n2": "c.idx", "n3": "c.result_seq", "n4": "c.result_idx", "s1": "c.id",
    "s2": "c.status", "s3": "c.result_kind", "t1": "c.created_at", "t2": "c.completed_at",
    "t3": "c.cancelled_at", "s4": f"CASE WHEN {_MADE_BEFORE} THEN c.name END",
    "s5": f"CASE WHEN {_MADE_BEFORE} THEN c.provider_id END",
    "j1": f"CASE WHEN {_MADE_BEFORE} THEN c.arguments::text END",
}  # fmt: skip

_COMPACTION_VALUES: Final = {
    "n1": "k.id", "n2": "k.through_seq", "s1": "k.summary", "t1": "k.created_at",
}  # fmt: skip

_CALL_COLUMNS: Final = (
    "t.id, t.seq, t.idx, t.status, t.result_kind, t.result_seq, t.result_idx, t.created_at,"
    " t.completed_at, t.cancelled_at, t.name, t.provider_id, t.arguments"
)

_CONTENTS: Final = f"""
WITH RECURSIVE h AS (
    SELECT * FROM conversations
    WHERE id = $1::varchar AND ($2::varchar IS NULL OR tenant = $2::varchar)
), walk(seq, parent_seq, taken) AS (
    SELECT m.seq, m.parent_seq, CASE WHEN m.seq < $4::bigint THEN 1 ELSE 0 END
    FROM h JOIN messages m ON m.conversation_id = $1::varchar AND m.seq = h.head_seq
    WHERE h.branched
    UNION ALL
    SELECT s.seq, s.parent_seq, p.taken + CASE WHEN s.seq < $4::bigint THEN 1 ELSE 0 END
    FROM walk p JOIN messages s ON s.conversation_id = $1::varchar AND s.seq = p.parent_seq
    WHERE p.taken < $3::bigint
), w AS (
    (SELECT m.seq, m.role, CASE WHEN NOT $5::boolean THEN m.parts END AS parts FROM messages m
     WHERE m.conversation_id = $1::varchar AND m.seq < $4::bigint
       AND EXISTS (SELECT 1 FROM h WHERE NOT h.branched AND h.head_seq IS NOT NULL)
     ORDER BY m.seq DESC LIMIT $3::bigint)
    UNION ALL
    (SELECT m.seq, m.role, CASE WHEN NOT $5::boolean THEN m.parts END AS parts FROM messages m
     WHERE m.conversation_id = $1::varchar
       AND m.seq IN (SELECT seq FROM walk WHERE seq < $4::bigint)
     ORDER BY m.seq DESC LIMIT $3::bigint)
), ids AS (
    SELECT DISTINCT CASE w.role WHEN 'assistant' THEN p->>'id' ELSE p->>'call_id' END AS id
    FROM w, json_array_elements(w.parts) p
    WHERE NOT $5::boolean
      AND ((w.role = 'assistant' AND p->>'kind' = 'tool_call')
           OR (w.role = 'tool' AND p->>'kind' = 'tool_result'))
), c AS (
    SELECT {_CALL_COLUMNS} FROM tool_calls t
    WHERE $5::boolean AND t.conversation_id = $1::varchar AND EXISTS (SELECT 1 FROM h)
    UNION ALL
    SELECT {_CALL_COLUMNS} FROM tool_calls t
    WHERE NOT $5::boolean AND t.conversation_id = $1::varchar AND t.id IN (SELECT id FROM ids)
), later AS (
    SELECT DISTINCT c.result_seq AS seq FROM c
    WHERE NOT $5::boolean AND c.result_seq IS NOT NULL
      AND c.result_seq NOT IN (SELECT seq FROM w)
)
"""  # noqa: S608 (schema names, no values)
"""The CTEs both statements share: header, window, calls, and the seqs of later results.

The window carries its parts only where the calls are found from them (not for a whole load,
which takes every call of the conversation)."""


def _statement(*, rows: bool) -> str:
    """The load statement: with whole message rows, or (``rows=False``) with their seqs only."""
    if rows:
        by_seq = "JOIN messages ON messages.conversation_id = $1::varchar AND messages.seq = {}.seq"
        window = _select(MESSAGE, _message_values("messages"), f"w {by_seq.format('w')}")
        later = _select(LATER, _message_values("messages"), f"later {by_seq.format('later')}")
    else:
        window = _select(MESSAGE, {"n1": "w.seq"}, "w")
        later = _select(LATER, {"n1": "later.seq"}, "later")
    compactions = "compactions k WHERE k.conversation_id = $1::varchar AND EXISTS (SELECT 1 FROM h)"
    parts = (
        _select(HEADER, _HEADER_VALUES, "h"),
        window,
        _select(CALL, _CALL_VALUES, "c"),
        _select(COMPACTION, _COMPACTION_VALUES, compactions),
        later,
    )
    return _CONTENTS + "\nUNION ALL\n".join(parts) + "\nORDER BY 1, 2\n"


SQL_ROWS: Final = _statement(rows=True)
"""The statement returning whole message rows; its parameters come from `arguments`."""
SQL_KEYS: Final = _statement(rows=False)
"""The same statement returning only the messages' seqs (for a reader that holds them decoded
already: `convstore.store.message_cache`); the same parameters."""


def arguments(cid: str, tenant: str | None, last: int | None, before_seq: int | None) -> list[Any]:
    """The statement's parameters for a load (``last`` and ``before_seq`` both ``None``: whole)."""
    whole = last is None and before_seq is None
    return [
        cid,
        tenant,
        NO_LIMIT if last is None else last,
        NO_LIMIT if before_seq is None else before_seq,
        whole,
    ]


@dataclass(slots=True)
class LoadRows:
    """The statement's rows, in the shapes `convstore.db.statements` gives the same reads.

    JSON values are the server's text, times are ``datetime`` s (see
    `convstore.store.one_statement_load`'s codec).
    """

    header: Row | None = None
    """``CONVERSATION_COLUMNS``; ``None``: no such conversation (for the tenant)."""
    messages: list[Row] = field(default_factory=list)
    """``MESSAGE_COLUMNS`` of the window, oldest first."""
    calls: list[Row] = field(default_factory=list)
    """``LIFECYCLE_COLUMNS``, then name, provider id and arguments of calls made before the
    window (``None`` otherwise)."""
    compactions: list[Row] = field(default_factory=list)
    """(through_seq, summary, created_at), by id."""
    later: list[Row] = field(default_factory=list)
    """``MESSAGE_COLUMNS`` of the messages after the window holding results of its calls."""


_MESSAGE_ROW: Final = itemgetter(1, 2, 5, 6, 7, 10, 13, 8, 14, 15, 16)
_CALL_ROW: Final = itemgetter(5, 1, 2, 6, 7, 3, 4, 10, 11, 12, 8, 9, 13)
_HEADER_ROW: Final = itemgetter(5, 6, 7, 13, 1, 10, 11, 14, 2, 8, 17)
_COMPACTION_ROW: Final = itemgetter(2, 5, 10)


def split(records: Sequence[Sequence[Any]]) -> LoadRows:
    """The statement's rows sorted out by kind (each kind's rows kept in the order sent)."""
    out = LoadRows()
    by_kind: dict[int, list[Any]] = {
        MESSAGE: out.messages, CALL: out.calls, COMPACTION: out.compactions, LATER: out.later
    }  # fmt: skip
    shape = {MESSAGE: _MESSAGE_ROW, CALL: _CALL_ROW, COMPACTION: _COMPACTION_ROW,
             LATER: _MESSAGE_ROW}  # fmt: skip
    for record in records:
        kind = record[0]
        if kind == HEADER:
            out.header = _HEADER_ROW(record)
        else:
            by_kind[kind].append(shape[kind](record))
    return out
