"""``ConvstoreSession(session_id, url=...)``: the drop-in for ``SQLiteSession(session_id, path)``.

The same items and calls as ``convstore_session``, but every session is made the way an
application replacing ``SQLiteSession`` makes it: with the database URL, not with a store it
opened itself. Sessions on one URL share one store in the process (a blocking store on its own
loop thread, leased per URL), so the 20 concurrent sessions are one store, not twenty; each
call crosses from the caller's loop to the store's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers import convstore_session
from bench.peers.runner import main

PEER = dataclasses.replace(
    convstore_session.PEER,
    name="convstore_session_url",
    label="convstore ConvstoreSession(url=) (openai-agents)",
)


class _Store(convstore_session.Store):
    def __init__(self, url: str) -> None:
        super().__init__(None)
        self._url = url
        self._sessions: list[Any] = []

    async def new_conversation(self, key: str) -> Any:
        from convstore.integrations.openai_agents import ConvstoreSession

        session = ConvstoreSession(key, url=self._url)
        self._sessions.append(session)
        return session

    def close(self) -> None:
        for session in self._sessions:
            session.close()


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """Sessions on ``sqlite+aiosqlite:///path``, closed on exit (the last closes the store)."""
    from convstore.integrations.openai_agents import ConvstoreSession  # noqa: F401 (fail early)

    store = _Store(f"sqlite+aiosqlite:///{path}")
    try:
        yield store
    finally:
        store.close()


if __name__ == "__main__":
    main(PEER, open_store)
