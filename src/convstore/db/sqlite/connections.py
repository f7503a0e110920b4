"""Opening, configuring and closing the SQLite backend's aiosqlite connections.

Also the two helpers its lock-contention retries share: the jittered `backoff` between
attempts and `translated`, a driver error turned into the store's own, chained to it.
Invariant: a connection's worker thread is a daemon (see `daemon_connection`), and closing a
connection that is already closed or broken is not an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from collections.abc import Callable, Sequence

import aiosqlite

from convstore._compat.sqlite_driver import guard_worker
from convstore.db.errors import translate

__all__ = [
    "backoff",
    "close_quietly",
    "configure",
    "daemon_connection",
    "install_trace",
    "translated",
]


def translated(exc: sqlite3.Error) -> Exception:
    """``translate(exc)``, chained to ``exc`` as ``raise ... from exc`` would."""
    error = translate(exc)
    error.__cause__ = exc
    return error


async def backoff(attempt: int) -> None:
    """Jittered exponential wait before retrying after lock contention."""
    await asyncio.sleep(random.uniform(0, 0.01 * 2**attempt))  # noqa: S311


async def daemon_connection(target: str) -> aiosqlite.Connection:
    """An aiosqlite connection whose worker thread does not keep the process alive.

    aiosqlite's worker is an ordinary thread that runs until its connection is closed, and the
    interpreter waits for ordinary threads before it exits: a script that forgot to close its
    store (or kept it referenced while an exception unwound) never ended. As a daemon the
    thread ends with the process; nothing is lost, since a write is acknowledged only after its
    ``COMMIT`` (WAL), and an unfinished transaction is rolled back when the file is next opened.
    Its thread hands nothing to a loop that has closed (`guard_worker`).
    """
    pending = aiosqlite.connect(target, isolation_level=None)
    pending._thread.daemon = True  # started when awaited (aiosqlite >= 0.20)
    guard_worker(pending)
    return await pending


async def close_quietly(conn: aiosqlite.Connection) -> None:
    """Close ``conn``, ignoring that it is already closed or broken."""
    with contextlib.suppress(sqlite3.Error, ValueError):  # closed or broken: nothing to release
        await conn.close()


def configure(
    raw: sqlite3.Connection, pragmas: Sequence[str], trace: Callable[[str], None] | None
) -> None:
    """Run ``pragmas`` on a new connection and, if given, install the ``trace`` callback."""
    for pragma in pragmas:
        raw.execute(pragma)
    if trace is not None:
        raw.set_trace_callback(trace)


def install_trace(raw: sqlite3.Connection, callback: Callable[[str], None]) -> None:
    """Report every statement ``raw`` runs to ``callback``."""
    raw.set_trace_callback(callback)
