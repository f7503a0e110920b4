"""aiosqlite's private call queue and the ``sqlite3`` adapter for ``None``.

Assumptions (``tests/test_compat.py`` checks each; ``aiosqlite<0.23`` in ``pyproject.toml``):

- ``aiosqlite.Connection._tx`` is the queue of ``(future, function)`` pairs the connection's
  own thread runs in order, calling ``function()`` and handing its result or exception to
  ``future``. ``Connection._conn`` is the ``sqlite3.Connection`` that thread owns, and
  ``_running`` and ``_connection`` say whether it still takes work.
  SQLAlchemy's aiosqlite dialect uses the same queue (through ``_execute``); aiosqlite has no
  public way to run a whole function there.
- aiosqlite's worker thread (``aiosqlite.core._connection_worker_thread(tx)``, the target of
  ``Connection._thread``, started when the connection is first awaited) runs the queue until
  a function returns ``_STOP_RUNNING_SENTINEL``. Its hand-back fails in the thread when the
  caller's loop closed while the function ran (``Event loop is closed``, an unhandled
  exception in that thread, charged by pytest to whatever test runs then): a caller cancelled
  at shutdown while connecting, closing or running a statement. `guard_worker` gives a new
  connection's thread the same loop with a hand-back that drops a result nobody can receive
  any more (every connection convstore opens has it: `convstore.db.sqlite.connections`);
  `finish_queued` still lets a cancelled caller wait for its function to end.
- ``sqlite3`` looks an adapter up for every parameter that is not exactly an int, float, str
  or bytearray; for ``None`` the lookup fails slowly (CPython 3.11 formats, then discards, an
  AttributeError for each of ``__adapt__`` and ``__conform__``). Rows are mostly NULL columns,
  so that was a sixth of an append's instructions. An identity adapter for ``None`` is found at
  the first step and binds exactly what ``None`` binds without it: NULL.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any, Final

import aiosqlite

__all__ = ["adapt_none_quickly", "finish_queued", "guard_worker", "run_in_connection_thread"]


def guard_worker(conn: aiosqlite.Connection) -> None:
    """Run ``conn``'s thread (not started yet) with `_worker`: aiosqlite's loop, safe hand-back."""
    thread: Any = conn._thread  # `Thread._target`: what `run` calls, read when it starts
    if thread.is_alive() or thread._target is not aiosqlite.core._connection_worker_thread:
        raise RuntimeError("aiosqlite's connection thread is not what convstore expects")
    thread._target = _worker


def _worker(tx: Any) -> None:
    """The loop of aiosqlite's worker, with a hand-back that drops a result for a closed loop."""
    stop = aiosqlite.core._STOP_RUNNING_SENTINEL
    while True:
        future, function = tx.get()
        try:
            result = function()
        except BaseException as exc:  # handed to the caller, whatever it is
            if future is not None:
                _hand_back(future.get_loop(), _set_exception, future, exc)
            continue
        if future is not None:
            _hand_back(future.get_loop(), _set_result, future, result)
        if result is stop:
            break


def run_in_connection_thread(
    conn: aiosqlite.Connection, fn: Callable[..., Any], *args: Any
) -> asyncio.Future[Any]:
    """``fn(raw, *args)`` in ``conn``'s thread, ``raw`` its ``sqlite3.Connection``: one hop.

    Raises ``ValueError`` when ``conn`` is closed, as aiosqlite's own calls do. The future is
    returned bare (no coroutine around it, as ``_execute`` has): a hop is on every operation's
    path. Its result reaches it through the thread's hand-back (`guard_worker`).
    """
    if not conn._running or conn._connection is None:
        raise ValueError("Connection closed")
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    conn._tx.put_nowait((future, partial(fn, conn._conn, *args)))
    return future


def _hand_back(
    loop: asyncio.AbstractEventLoop,
    setter: Callable[[asyncio.Future[Any], Any], None],
    future: asyncio.Future[Any],
    value: Any,
) -> None:
    """In the connection's thread: give ``value`` to ``future`` on its loop, if it still runs."""
    try:
        loop.call_soon_threadsafe(setter, future, value)
    except RuntimeError:
        if not loop.is_closed():
            raise
        # The loop closed while the function ran (a caller cancelled at shutdown): nobody
        # can receive the result any more.


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # a cancelled caller's future is done already
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


async def finish_queued(conn: aiosqlite.Connection) -> None:
    """Wait until ``conn``'s thread has finished what was queued so far, results handed back.

    For a caller cancelled while its function still runs there: the cancel ends the wait for
    the result, not the function, and a loop closed before the function ends makes the thread
    fail as it hands the result back. A no-op queued behind that work returns after it.
    """
    with contextlib.suppress(ValueError):  # closed: nothing runs in its thread any more
        await run_in_connection_thread(conn, _no_op)


def _no_op(_raw: sqlite3.Connection) -> None:
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
