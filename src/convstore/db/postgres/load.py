"""A load or window as one PostgreSQL statement: one round trip, run on the asyncpg connection.

The statement reads the header (``h``), where the path ends and how much of it is read (``e``:
the stored head or the one asked for; a path other than the stored one is read whole, since its
lifecycles are derived from all of it), the window of that path (``w``: newest first by ``seq``
on an unbranched conversation, a walk up the parent pointers on a branched one, exactly as
`convstore.db.statements` reads them), the tool calls (``c``: every call of the conversation
for a whole load or another path; for a window the calls made in it or answered in it, found
through ``ix_tool_calls_seq`` and ``ix_tool_calls_result_seq``), the messages holding the
results of the window's calls that lie after it (``later``: a ``before_seq`` page), and the
compactions. It returns them as one row set, each row tagged with its kind and its values in
typed slots (`_SLOTS`), ordered by kind and then by ``seq`` (compactions by id).

A reader that keeps decoded messages (`convstore.store.load.message_cache`) names the conversation
instance it last saw and the range of seqs it holds of it (``held``): rows in that range come
back as their ``seq`` alone (flag ``b``), the others whole. A row is immutable once written and
a seq never reused, so a message the reader holds is what the row says; one in the range it
does not hold (another branch, a page it skipped) it reads again, whole, without the range.

Invariants:

- One statement is one snapshot, so no transaction is opened (no ``BEGIN``/``COMMIT`` round
  trips): the rows are those the transactional path (`convstore.store.load.reads`) reads inside one
  ``REPEATABLE READ`` transaction.
- A conversation that does not exist (for the tenant, when one is given) returns no rows.
- Every value is bound, never interpolated, and the choices between the shapes of a load are
  made on values inside the statement: one prepared statement (and one cached generic plan,
  whose every step is an index range scan) serves every load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import itemgetter
from typing import Any, Final

from convstore.db.schema import tool_calls
from convstore.db.statements.conversations import CONVERSATION_COLUMNS
from convstore.db.statements.messages import MESSAGE_COLUMNS
from convstore.db.statements.tool_calls import LIFECYCLE_COLUMNS
from convstore.db.tx import Row

__all__ = ["NO_LIMIT", "SQL", "LoadRows", "arguments", "split"]

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


_HELD: Final = "((SELECT instance FROM e) AND m.seq BETWEEN $8::bigint AND $9::bigint)"
"""Whether the reader holds the message ``m`` (of the conversation instance it names)."""


def _columns(alias: str, slots: dict[str, str]) -> dict[str, str]:
    """Slot -> ``alias.column`` for each column -> slot of ``slots`` (JSON sent as text)."""
    return {
        slot: f"{alias}.{name}{'::text' if slot[0] == 'j' else ''}" for name, slot in slots.items()
    }


_MESSAGE_SLOTS: Final = {
    "seq": "n1", "parent_seq": "n2", "role": "s1", "provider": "s2", "model": "s3",
    "created_at": "t1", "details": "j1", "message_id": "s4", "parts": "j2", "native": "j3",
    "usage": "j4",
}  # fmt: skip
"""Where a message row's columns go (`MESSAGE_COLUMNS`)."""
_MESSAGE_VALUES: Final = {
    **{
        slot: value if slot == "n1" else f"CASE WHEN NOT {_HELD} THEN {value} END"
        for slot, value in _columns("m", _MESSAGE_SLOTS).items()
    },
    "b": _HELD,
}
"""A message row: whole, or its seq alone where the reader holds it (flag ``b``)."""

_HEADER_SLOTS: Final = {
    "id": "s1", "tenant": "s2", "title": "s3", "metadata": "j1", "last_seq": "n1",
    "created_at": "t1", "updated_at": "t2", "state": "j2", "head_seq": "n2", "revision": "s4",
    "branched": "b",
}  # fmt: skip
"""Where a header's columns go (`CONVERSATION_COLUMNS`)."""
_HEADER_VALUES: Final = _columns("h", _HEADER_SLOTS)

_EVERYTHING: Final = "(SELECT everything FROM e)"
_MADE_BEFORE: Final = f"NOT {_EVERYTHING} AND c.seq < (SELECT min(seq) FROM w)"  # noqa: S608
"""Whether a call was made before the window: only then are its name and arguments sent."""

_CALL_SLOTS: Final = {
    "id": "s1", "seq": "n1", "idx": "n2", "status": "s2", "result_kind": "s3",
    "result_seq": "n3", "result_idx": "n4", "created_at": "t1", "completed_at": "t2",
    "cancelled_at": "t3", "name": "s4", "provider_id": "s5", "arguments": "j1",
}  # fmt: skip
"""Where a call's columns go (`LIFECYCLE_COLUMNS`, then name, provider id, arguments)."""
_SENT_IF_MADE_BEFORE: Final = ("name", "provider_id", "arguments")
_MADE_BEFORE_COLUMNS: Final = tuple(tool_calls.c[name] for name in _SENT_IF_MADE_BEFORE)
_CALL_SLOTS_BY_SLOT: Final = {slot: name for name, slot in _CALL_SLOTS.items()}
_COMPACTION_READ: Final = ("through_seq", "summary", "created_at")
"""What a load reads of a compaction (`SELECT_COMPACTIONS`)."""
_CALL_VALUES: Final = {
    slot: f"CASE WHEN {_MADE_BEFORE} THEN {value} END"
    if _CALL_SLOTS_BY_SLOT[slot] in _SENT_IF_MADE_BEFORE
    else value
    for slot, value in _columns("c", _CALL_SLOTS).items()
}

_COMPACTION_SLOTS: Final = {"id": "n1", "through_seq": "n2", "summary": "s1", "created_at": "t1"}
_COMPACTION_VALUES: Final = _columns("k", _COMPACTION_SLOTS)

_CALL_COLUMNS: Final = (
    "t.id, t.seq, t.idx, t.status, t.result_kind, t.result_seq, t.result_idx, t.created_at,"
    " t.completed_at, t.cancelled_at, t.name, t.provider_id, t.arguments"
)

_SEQS: Final = "(SELECT seqs FROM ws)::int[]"
"""The window's seqs, as one array."""
_LATER_SEQS: Final = "(SELECT seqs FROM later)::int[]"
"""The seqs of the messages after the window holding results of its calls."""

_CONTENTS: Final = f"""
WITH RECURSIVE h AS (
    SELECT * FROM conversations
    WHERE id = $1::varchar AND ($2::varchar IS NULL OR tenant = $2::varchar)
), e AS (
    SELECT h.branched, other, COALESCE($5::bigint, h.head_seq) AS head,
           CASE WHEN other THEN {NO_LIMIT} ELSE $3::bigint END AS n,
           CASE WHEN other THEN {NO_LIMIT} ELSE $4::bigint END AS before,
           $6::boolean OR other AS everything,
           h.created_at = $7::timestamptz AS instance
    FROM h, LATERAL (
        SELECT $5::bigint IS NOT NULL AND $5::bigint IS DISTINCT FROM h.head_seq AS other
    ) o
), walk(seq, parent_seq, taken) AS (
    SELECT m.seq, m.parent_seq, CASE WHEN m.seq < e.before THEN 1 ELSE 0 END
    FROM e JOIN messages m ON m.conversation_id = $1::varchar AND m.seq = e.head
    WHERE e.branched
    UNION ALL
    SELECT s.seq, s.parent_seq, p.taken + CASE WHEN s.seq < e.before THEN 1 ELSE 0 END
    FROM walk p JOIN messages s ON s.conversation_id = $1::varchar AND s.seq = p.parent_seq, e
    WHERE p.taken < e.n
), w AS MATERIALIZED (
    (SELECT m.seq FROM messages m
     WHERE m.conversation_id = $1::varchar AND m.seq <= (SELECT head FROM e)
       AND m.seq < (SELECT before FROM e) AND (SELECT NOT branched FROM e)
     ORDER BY m.seq DESC LIMIT (SELECT n FROM e))
    UNION ALL
    (SELECT seq FROM walk WHERE seq < (SELECT before FROM e)
     ORDER BY seq DESC LIMIT (SELECT n FROM e))
), ws AS (
    SELECT COALESCE(array_agg(seq), '{{}}') AS seqs FROM w
), c AS (
    SELECT {_CALL_COLUMNS} FROM tool_calls t
    WHERE {_EVERYTHING} AND t.conversation_id = $1::varchar
    UNION ALL
    SELECT {_CALL_COLUMNS} FROM tool_calls t
    WHERE NOT {_EVERYTHING} AND t.conversation_id = $1::varchar
      AND t.seq = ANY({_SEQS})
    UNION ALL
    SELECT {_CALL_COLUMNS} FROM tool_calls t
    WHERE NOT {_EVERYTHING} AND t.conversation_id = $1::varchar
      AND t.result_seq = ANY({_SEQS}) AND t.seq <> ALL({_SEQS})
), later AS (
    SELECT COALESCE(array_agg(DISTINCT c.result_seq), '{{}}') AS seqs FROM c
    WHERE NOT {_EVERYTHING} AND c.result_seq <> ALL({_SEQS})
)
"""  # noqa: S608 (schema names, no values)
"""The CTEs of the statement: header, path end, window, calls, and the seqs of later results."""


_CHAIN: Final = f"""messages m
WHERE m.conversation_id = $1::varchar AND (SELECT NOT branched FROM e)
  AND m.seq <= (SELECT head FROM e) AND m.seq < (SELECT before FROM e)
  AND m.seq >= CASE WHEN (SELECT n FROM e) < {NO_LIMIT} THEN (SELECT min(seq) FROM w) ELSE 0 END"""  # noqa: S608
"""The window of an unbranched conversation as one range of the primary key (what ``w`` holds)."""

_BY_SEQ: Final = """{0}, LATERAL (
    SELECT seq, parent_seq, role, provider, model, created_at, details, message_id, parts,
           native, usage
    FROM messages WHERE conversation_id = $1::varchar AND seq = s.seq OFFSET 0
) m{1}"""
"""The messages whose seqs ``s`` (from ``{0}``) yields, each found by primary key (``OFFSET 0``
keeps it a lookup per seq, whatever the planner guesses of their count)."""


def _statement() -> str:
    compactions = "compactions k WHERE k.conversation_id = $1::varchar AND EXISTS (SELECT 1 FROM h)"
    parts = (
        _select(HEADER, _HEADER_VALUES, "h"),
        _select(MESSAGE, _MESSAGE_VALUES, _CHAIN),
        _select(MESSAGE, _MESSAGE_VALUES, _BY_SEQ.format("w s", " WHERE (SELECT branched FROM e)")),
        _select(CALL, _CALL_VALUES, "c"),
        _select(COMPACTION, _COMPACTION_VALUES, compactions),
        _select(LATER, _MESSAGE_VALUES, _BY_SEQ.format(f"unnest({_LATER_SEQS}) AS s(seq)", "")),
    )
    return _CONTENTS + "\nUNION ALL\n".join(parts) + "\nORDER BY 1, 2\n"


SQL: Final = _statement()
"""The load statement; its parameters come from `arguments`."""


def arguments(
    cid: str,
    tenant: str | None,
    last: int | None,
    before_seq: int | None,
    head_seq: int | None,
    held: tuple[datetime, int, int] | None,
) -> list[Any]:
    """The statement's parameters for a load (``last`` and ``before_seq`` both ``None``: whole).

    ``held``: the reader's conversation instance (its header's ``created_at``) and the lowest
    and highest seq it holds of it; rows in that range are sent as their seq alone.
    """
    created, lowest, highest = held if held is not None else (None, 0, -1)
    return [
        cid,
        tenant,
        NO_LIMIT if last is None else last,
        NO_LIMIT if before_seq is None else before_seq,
        head_seq,
        last is None and before_seq is None,
        created,
        lowest,
        highest,
    ]


@dataclass(slots=True)
class LoadRows:
    """The statement's rows, in the shapes `convstore.db.statements` gives the same reads.

    JSON values are the server's text, times are ``datetime`` s (see
    `convstore.store.load.one_statement`'s codec).
    """

    header: Row | None = None
    """``CONVERSATION_COLUMNS``; ``None``: no such conversation (for the tenant)."""
    messages: list[Row] = field(default_factory=list)
    """``MESSAGE_COLUMNS`` of the window, oldest first (``seq`` alone for those `held`)."""
    calls: list[Row] = field(default_factory=list)
    """``LIFECYCLE_COLUMNS``, then name, provider id and arguments of calls made before the
    window (``None`` otherwise)."""
    compactions: list[Row] = field(default_factory=list)
    """(through_seq, summary, created_at), by id."""
    later: list[Row] = field(default_factory=list)
    """``MESSAGE_COLUMNS`` of the messages after the window holding results of its calls."""
    held: set[int] = field(default_factory=set)
    """Seqs of `messages` and `later` sent as their seq alone: the reader said it holds them."""


_AT: Final = {slot: index for index, slot in enumerate(("kind", *_SLOTS))}
"""Each slot's position in a returned record (the kind first)."""


def _taking(slots: dict[str, str], columns: Sequence[Any]) -> Any:
    """An itemgetter of ``columns`` (by name) from a record of the kind ``slots`` lays out."""
    return itemgetter(*(_AT[slots[column.name]] for column in columns))


_MESSAGE_ROW: Final = _taking(_MESSAGE_SLOTS, MESSAGE_COLUMNS)
_CALL_ROW: Final = _taking(_CALL_SLOTS, (*LIFECYCLE_COLUMNS, *_MADE_BEFORE_COLUMNS))
_HEADER_ROW: Final = _taking(_HEADER_SLOTS, CONVERSATION_COLUMNS)
_COMPACTION_ROW: Final = itemgetter(*(_AT[_COMPACTION_SLOTS[c]] for c in _COMPACTION_READ))
_KIND, _SEQ, _HELD_FLAG = _AT["kind"], _AT[_MESSAGE_SLOTS["seq"]], _AT["b"]


def split(records: Sequence[Sequence[Any]]) -> LoadRows:
    """The statement's rows sorted out by kind (each kind's rows kept in the order sent)."""
    out = LoadRows()
    held = out.held
    for record in records:
        kind = record[_KIND]
        if kind in (MESSAGE, LATER):
            (out.messages if kind == MESSAGE else out.later).append(_MESSAGE_ROW(record))
            if record[_HELD_FLAG]:
                held.add(record[_SEQ])
        elif kind == CALL:
            out.calls.append(_CALL_ROW(record))
        elif kind == HEADER:
            out.header = _HEADER_ROW(record)
        else:
            out.compactions.append(_COMPACTION_ROW(record))
    return out
