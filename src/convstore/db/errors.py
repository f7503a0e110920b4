"""Translation of database driver errors into convstore errors, in one place.

Invariants:

- Driver exceptions (sqlite3, asyncpg, SQLAlchemy) never leave the ``db`` package: backends
  call `translate` and raise its result ``from`` the original.
- A uniqueness violation is reported as the conflict it means: a reused tool-call id is a
  `ToolCallConflictError`, a reused conversation id a `ConflictError`.
- `is_transient` names the errors worth retrying the whole transaction for (SQLite busy/locked,
  PostgreSQL serialization failures and deadlocks).
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa_exc

from convstore.errors import ConflictError, ConvstoreError, DatabaseError, ToolCallConflictError

__all__ = ["is_disconnect", "is_transient", "translate"]

# PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html).
_PG_UNIQUE_VIOLATION = "23505"
_PG_TRANSIENT = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
# admin_shutdown, crash_shutdown, cannot_connect_now: the server ended the session.
_PG_SESSION_ENDED = frozenset({"57P01", "57P02", "57P03"})


def _root(exc: BaseException) -> BaseException:
    """The driver's own exception under SQLAlchemy's wrapper, if any."""
    while isinstance(exc, sa_exc.DBAPIError) and exc.orig is not None:
        exc = exc.orig
    # SQLAlchemy's asyncpg adapter wraps asyncpg's exception once more.
    inner = exc.__cause__
    if inner is not None and type(inner).__module__.startswith("asyncpg"):
        return inner
    return exc


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state if isinstance(state, str) else None


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the whole transaction may succeed."""
    root = _root(exc)
    if isinstance(root, sqlite3.OperationalError):
        text = str(root).lower()
        return "locked" in text or "busy" in text
    return _sqlstate(root) in _PG_TRANSIENT


def is_disconnect(exc: BaseException) -> bool:
    """Whether the connection is gone (the server ended the session, or the socket closed)."""
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    state = _sqlstate(_root(exc))
    return state is not None and (state in _PG_SESSION_ENDED or state.startswith("08"))


def translate(exc: BaseException) -> ConvstoreError:
    """The convstore error standing for a driver error (raise it ``from`` the original)."""
    if isinstance(exc, ConvstoreError):
        return exc
    root = _root(exc)
    message = str(root).strip() or type(root).__name__
    unique = (
        isinstance(root, sqlite3.IntegrityError) and "UNIQUE constraint failed" in message
    ) or _sqlstate(root) == _PG_UNIQUE_VIOLATION
    if unique:
        constraint = getattr(root, "constraint_name", None) or message
        if "tool_calls" in constraint:
            return ToolCallConflictError(
                "a tool call with this id is already stored in the conversation "
                "(tool-call ids must be unique within a conversation)"
            )
        if "conversations" in constraint:
            return ConflictError("a conversation with this id already exists")
        return ConflictError(f"uniqueness violated: {message}")
    return DatabaseError(f"database error: {message}")
