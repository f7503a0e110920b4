"""The common append as one PostgreSQL statement: one round trip, run on the asyncpg connection.

The statement is a chain of CTEs: read the conversation's header (``h``), lock and advance it
(``g``, the guard), insert the messages (queuing them for the search index:
`convstore.db.search_queue`) and the new tool calls from ``unnest`` arrays, complete
the earlier calls the batch answers, interrupt the pending ones a user message leaves behind,
and return where the batch landed. Every insert and update joins the guard, so when the guard
matches no row nothing at all is written.

Invariants:

- Sequence numbers are sent relative to the conversation's ``last_seq`` (the first message is
  1) and made absolute inside the statement; the first message's parent is the head.
- The guard matches only a conversation that exists (for the tenant, when one is given), is
  unbranched, is at ``expected_revision`` (when given), has no earlier call the batch answers
  in a terminal state, and is still at the revision the statement's snapshot read. The last
  condition is what makes one statement safe under ``READ COMMITTED``: the other CTEs read the
  snapshot taken when the statement began, and the guard's row lock may be granted only after
  another writer committed; every write to a conversation stores a new revision, so a row
  changed since the snapshot fails the guard (PostgreSQL re-checks it on the newest version)
  instead of being written against stale reads.
- It yields no row when the guard matched nothing, and is declined when the server refuses it
  with one of `DECLINES` (a uniqueness violation: a tool-call or message id already stored;
  a serialization failure, a deadlock or a lock timeout under concurrent writers): the
  statement then wrote nothing, and the caller takes the general path, which decides and
  reports exactly as it always does. Any other refusal is an error, raised: a statement the
  schema no longer accepts must fail loudly rather than send every append the slow way. A
  connection that fails mid-statement is not retried (whether it committed is unknown): that
  is a `DatabaseError`, as on the general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import JSON

from convstore.db.schema import messages, tool_calls
from convstore.db.statements import column_names
from convstore.db.tx import Row

__all__ = ["DECLINES", "QUEUE_CTE", "SQL", "OneStatementAppend"]

DECLINES: Final = frozenset({"23505", "40001", "40P01", "55P03"})
"""SQLSTATEs the statement is designed to meet (unique violation, serialization failure,
deadlock, lock not available; PostgreSQL's appendix A): the general path takes the append."""

_MESSAGE_ARRAYS: Final = (
    ("role", "text"),
    ("provider", "text"),
    ("model", "text"),
    ("details", "text"),
    ("message_id", "text"),
    ("parts", "text"),
    ("native", "text"),
    ("usage", "text"),
)
"""The per-message columns sent as arrays (JSON columns as text, cast inside)."""

_CALL_ARRAYS: Final = (
    ("id", "text"),
    ("seq", "int"),
    ("idx", "int"),
    ("name", "text"),
    ("provider_id", "text"),
    ("arguments", "text"),
    ("raw_arguments", "text"),
    ("status", "text"),
    ("result_kind", "text"),
    ("result_seq", "int"),
    ("result_idx", "int"),
    ("details", "text"),
    ("completed_at", "timestamptz"),
)

_JSON_COLUMNS: Final = frozenset(
    c.name for t in (messages, tool_calls) for c in t.columns if isinstance(c.type, JSON)
)


def _unnest(columns: Sequence[tuple[str, str]], first: int) -> str:
    arrays = ", ".join(f"${first + n}::{kind}[]" for n, (_, kind) in enumerate(columns))
    return f"unnest({arrays})"


def _value(name: str) -> str:
    return f"u.{name}::json" if name in _JSON_COLUMNS else f"u.{name}"


_M0: Final = 7
_C0: Final = _M0 + len(_MESSAGE_ARRAYS)
_D0: Final = _C0 + len(_CALL_ARRAYS)
_INTERRUPT: Final = _D0 + 5

QUEUE_CTE: Final = """q AS (
    INSERT INTO search_queue (conversation_id, seq, last_seq)
    SELECT $1::varchar, g.base + 1, g.base + $4::int FROM g
), """
"""The statement's queuing of its messages for the search index (`convstore.db.search_queue`)."""

SQL: Final = f"""
WITH h AS (
    SELECT id, last_seq, head_seq, revision FROM conversations
    WHERE id = $1::varchar AND ($2::varchar IS NULL OR tenant = $2::varchar)
), g AS (
    UPDATE conversations c
    SET last_seq = h.last_seq + $4::int, head_seq = h.last_seq + $4::int,
        revision = $5::varchar, updated_at = $6::timestamptz
    FROM h
    WHERE c.id = h.id AND c.revision = h.revision AND NOT c.branched
      AND ($3::varchar IS NULL OR c.revision = $3::varchar)
      AND NOT EXISTS (
          SELECT 1 FROM tool_calls t
          WHERE t.conversation_id = $1::varchar AND t.id = ANY(${_D0}::text[])
            AND t.status NOT IN ('pending', 'interrupted'))
    RETURNING h.last_seq AS base, h.head_seq AS head
), m AS (
    INSERT INTO messages ({", ".join(column_names(messages))})
    SELECT $1::varchar, g.base + u.n, u.role, u.provider, u.model, $6::timestamptz,
           {_value("details")}, CASE WHEN u.n = 1 THEN g.head ELSE g.base + u.n - 1 END,
           u.message_id, {_value("parts")}, {_value("native")}, {_value("usage")}
    FROM g, {_unnest(_MESSAGE_ARRAYS, _M0)}
         WITH ORDINALITY AS u({", ".join(n for n, _ in _MESSAGE_ARRAYS)}, n)
), {QUEUE_CTE}c AS (
    INSERT INTO tool_calls ({", ".join(column_names(tool_calls))})
    SELECT $1::varchar, u.id, g.base + u.seq, u.idx, u.name, u.provider_id,
           {_value("arguments")}, u.raw_arguments, u.status, u.result_kind,
           g.base + u.result_seq, u.result_idx, {_value("details")}, $6::timestamptz,
           u.completed_at, NULL
    FROM g, {_unnest(_CALL_ARRAYS, _C0)} AS u({", ".join(n for n, _ in _CALL_ARRAYS)})
), d AS (
    UPDATE tool_calls t
    SET status = u.status, result_kind = u.result_kind, result_seq = g.base + u.result_seq,
        result_idx = u.result_idx, completed_at = $6::timestamptz
    FROM g, unnest(${_D0}::text[], ${_D0 + 1}::text[], ${_D0 + 2}::text[], ${_D0 + 3}::int[],
                   ${_D0 + 4}::int[]) AS u(id, status, result_kind, result_seq, result_idx)
    WHERE t.conversation_id = $1::varchar AND t.id = u.id
), i AS (
    UPDATE tool_calls t SET status = 'interrupted', completed_at = $6::timestamptz
    FROM g
    WHERE t.conversation_id = $1::varchar AND t.status = 'pending'
      AND t.seq < g.base + ${_INTERRUPT}::int AND t.id <> ALL(${_D0}::text[])
)
SELECT base, head FROM g
"""  # noqa: S608 (names come from the schema; every value is bound)
"""The statement; its parameters come from `OneStatementAppend.arguments`."""

_MESSAGE_INDEX: Final = {name: column_names(messages).index(name) for name, _ in _MESSAGE_ARRAYS}
_CALL_INDEX: Final = {name: column_names(tool_calls).index(name) for name, _ in _CALL_ARRAYS}


@dataclass(frozen=True, slots=True)
class OneStatementAppend:
    """One planned append, with sequence numbers relative to the conversation's ``last_seq``."""

    cid: str
    tenant: str | None
    expected_revision: str | None
    revision: str
    """The revision the append stores."""
    now: datetime
    message_rows: Sequence[Row]
    """``messages`` rows in table column order (``seq``, ``parent_seq`` are replaced)."""
    call_rows: Sequence[Row]
    """New ``tool_calls`` rows in table column order, seqs relative."""
    completions: Sequence[dict[str, Any]]
    """Earlier calls the batch answers (``set_lifecycle`` parameters, seqs relative); each
    must be pending or interrupted (or not exist) for the statement to write anything."""
    interrupt_before: int | None
    """Pending earlier calls below this relative seq become interrupted."""

    def arguments(self) -> list[Any]:
        """The statement's parameters, in order."""
        args: list[Any] = [
            self.cid,
            self.tenant,
            self.expected_revision,
            len(self.message_rows),
            self.revision,
            self.now,
        ]
        args += [[row[_MESSAGE_INDEX[n]] for row in self.message_rows] for n, _ in _MESSAGE_ARRAYS]
        args += [[row[_CALL_INDEX[n]] for row in self.call_rows] for n, _ in _CALL_ARRAYS]
        args += [
            [c[key] for c in self.completions]
            for key in ("call_id", "status", "result_kind", "result_seq", "result_idx")
        ]
        args.append(self.interrupt_before)
        return args
