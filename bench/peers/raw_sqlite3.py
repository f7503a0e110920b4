"""The floor: the standard library's sqlite3, one JSON row per item, one transaction per turn.

No store at all: a table ``items(id, conversation, data)`` with an index on
``(conversation, id)``; a turn is one ``executemany`` of the six Responses items of
`bench.peers.shapes.responses_items` (the same bytes the openai-agents sessions write) in one
transaction; connections set ``journal_mode=WAL``, ``synchronous=FULL`` and a 5 s busy
timeout. Full load selects and decodes every row; last-50 the newest 50. Calls are synchronous:
direct on the event loop's thread for one conversation, one connection per worker thread in
the concurrent phase. Nothing a real store needs (validation, ids, a conversation table,
ordering guarantees beyond the row id) is done, so no store can be faster by design.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.peers.shapes import responses_items

PEER = Peer(
    name="raw_sqlite3",
    label="raw sqlite3 (floor)",
    packages=(),
    unit="items",
    records_per_turn=6,
    append_api="1 x executemany (6 rows), 1 transaction",
    load_api="SELECT + json.loads",
    last_api="SELECT … ORDER BY id DESC LIMIT 50",
    shape="Responses-API input items, one JSON text row each",
    durability="WAL + synchronous=FULL (set explicitly), busy_timeout 5 s",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    conversation TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS items_conversation ON items (conversation, id);
"""


class Store:
    """The floor behind the runner's `Store` protocol (shared with the to_thread floor)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._connection().executescript(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, timeout=5.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def payload(self, turn: int) -> Any:
        return responses_items(turn)

    def new_conversation(self, key: str) -> str:
        return key

    def append_turn(self, conversation: str, payload: list[dict[str, Any]]) -> None:
        conn = self._connection()
        with conn:  # one transaction: BEGIN before the first INSERT, COMMIT on exit
            conn.executemany(
                "INSERT INTO items (conversation, data) VALUES (?, ?)",
                [(conversation, json.dumps(item)) for item in payload],
            )

    def load_all(self, conversation: str) -> int:
        rows = (
            self._connection()
            .execute("SELECT data FROM items WHERE conversation = ? ORDER BY id", (conversation,))
            .fetchall()
        )
        return len([json.loads(data) for (data,) in rows])

    def load_last(self, conversation: str, n: int) -> int:
        rows = (
            self._connection()
            .execute(
                "SELECT data FROM items WHERE conversation = ? ORDER BY id DESC LIMIT ?",
                (conversation, n),
            )
            .fetchall()
        )
        return len([json.loads(data) for (data,) in reversed(rows)])

    def close(self) -> None:
        for conn in self._connections:
            conn.close()


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[Store]:
    """The table on ``path``; every connection closed on exit."""
    store = Store(path)
    try:
        yield store
    finally:
        store.close()


if __name__ == "__main__":
    main(PEER, open_store)
