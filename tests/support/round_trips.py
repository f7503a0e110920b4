"""Round trips between a PostgreSQL store and its server, counted at the asyncpg connection.

Every request method of asyncpg's protocol (a simple query such as ``BEGIN``, preparing a
statement, binding and executing one, closing one) sends its messages and then waits for the
server's ``ReadyForQuery``: one call is one round trip. `round_trips` counts those calls on
every connection the store checks out of its pool while it is active, by putting a counting
stand-in in front of each connection's protocol object (asyncpg's Python layer reaches the
protocol only through that attribute).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from convstore import ConversationStore

__all__ = ["round_trips"]

_REQUESTS = frozenset(
    {
        "query",
        "prepare",
        "bind_execute",
        "bind_execute_many",
        "bind",
        "execute",
        "close_statement",
        "copy_in",
        "copy_out",
    }
)
"""asyncpg ``Protocol`` methods that each wait for the server once."""


class _CountingProtocol:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sink: list[str] | None = None

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in _REQUESTS:
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.sink is not None:
                self.sink.append(name)
            return value(*args, **kwargs)

        return counted


@contextmanager
def round_trips(store: ConversationStore) -> Iterator[list[str]]:
    """The protocol requests (one per round trip) the store makes while active, by name."""
    seen: list[str] = []
    wrapped: list[_CountingProtocol] = []
    pool = store.backend.engine.sync_engine.pool  # type: ignore[attr-defined]

    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        driver = dbapi_connection.driver_connection
        protocol = driver._protocol
        if not isinstance(protocol, _CountingProtocol):
            protocol = _CountingProtocol(protocol)
            driver._protocol = protocol
        protocol.sink = seen
        wrapped.append(protocol)

    listener: Callable[..., None] = on_checkout
    event.listen(pool, "checkout", listener)
    try:
        yield seen
    finally:
        event.remove(pool, "checkout", listener)
        for protocol in wrapped:
            protocol.sink = None
