"""aiosqlite's private call queue and the ``sqlite3`` adapter for ``None``.

Assumptions (``tests/test_compat.py`` checks each; ``aiosqlite<0.23`` in ``pyproject.toml``):

- ``aiosqlite.Connection._execute(fn, *args)`` runs ``fn(*args)`` in the connection's own
  thread and returns its result, and ``Connection._conn`` is the ``sqlite3.Connection`` that
  thread owns. SQLAlchemy's aiosqlite dialect relies on the same queue; aiosqlite has no public
  way to run a whole function there.
- The connection's thread runs what ``_execute`` queues in order, handing each result to the
  caller's event loop; ``_execute`` raises ``ValueError`` once the connection is closed. A
  function still running when its loop closes fails in that thread as it hands its result
  back (``Event loop is closed``): `finish_queued` waits for such a function.
- ``sqlite3`` looks an adapter up for every parameter that is not exactly an int, float, str
  or bytearray; for ``None`` the lookup fails slowly (CPython 3.11 formats, then discards, an
  AttributeError for each of ``__adapt__`` and ``__conform__``). Rows are mostly NULL columns,
  so that was a sixth of an append's instructions. An identity adapter for ``None`` is found at
  the first step and binds exactly what ``None`` binds without it: NULL.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any, Final

import aiosqlite

__all__ = ["adapt_none_quickly", "finish_queued", "run_in_connection_thread"]


def run_in_connection_thread(conn: aiosqlite.Connection, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(raw, *args)`` in ``conn``'s thread, ``raw`` its ``sqlite3.Connection``: one hop."""
    return conn._execute(fn, conn._conn, *args)  # type: ignore[no-untyped-call]


async def finish_queued(conn: aiosqlite.Connection) -> None:
    """Wait until ``conn``'s thread has finished what was queued so far, results handed back.

    For a caller cancelled while its function still runs there: the cancel ends the wait for
    the result, not the function, and a loop closed before the function ends makes the thread
    fail as it hands the result back. A no-op queued behind that work returns after it.
    """
    with contextlib.suppress(ValueError):  # closed: nothing runs in its thread any more
        await conn._execute(_no_op)  # type: ignore[no-untyped-call]


def _no_op() -> None:
    return None


_NOTHING: Final[dict[None, None]] = {}
_null: Final = _NOTHING.get
"""``None`` for ``None``: a built-in method, since it runs for every NULL bound (as a Python
function it was 1.5 % of an append's instructions)."""


def adapt_none_quickly() -> None:
    """Register the ``None`` adapter (process-wide), unless the application registered one.

    Called when a SQLite store opens, not at import. The registration is visible to every
    ``sqlite3`` user in the process; it changes no result, since it binds NULL as before.
    """
    if (type(None), sqlite3.PrepareProtocol) not in sqlite3.adapters:
        sqlite3.register_adapter(type(None), _null)
