"""The PostgreSQL floor: asyncpg alone writing the rows convstore writes, one statement a turn.

No store: a minimal copy of convstore's tables (conversations with a sequence counter,
messages with their parts as one JSON column, tool calls with their lifecycle, the pending-call
index) and, per turn, ONE prepared statement: bump the conversation's counter
(``UPDATE ... RETURNING``), insert the five messages and the two tool calls (already complete:
their results are in the same turn) from ``unnest`` arrays, and interrupt calls left pending
before the user message. Rows are planned in Python from the turn's plain data with the
standard ``json`` module; nothing is validated. Full load: the messages and the calls (two
statements), JSON decoded to dicts; last-50: the newest 50 messages. A pool of 10 connections.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, fresh_postgres_database, main, postgres_dsn
from bench.workload import turn_data

PEER = Peer(
    name="raw_asyncpg",
    label="raw asyncpg (PostgreSQL floor)",
    packages=("asyncpg",),
    unit="messages",
    records_per_turn=5,
    append_api="1 prepared statement (counter bump + unnest inserts + interrupt update)",
    load_api="2 x SELECT + json.loads",
    last_api="SELECT … ORDER BY seq DESC LIMIT 50",
    shape="convstore's rows: messages (parts JSON), tool calls",
    durability="the cluster's (fsync off, as the test suite runs it)",
    database="postgresql",
)

_SCHEMA = """
CREATE TABLE conversations (
    id text PRIMARY KEY, last_seq int NOT NULL DEFAULT 0, head_seq int,
    revision text NOT NULL DEFAULT '0', updated_at timestamptz NOT NULL);
CREATE TABLE messages (
    conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq int NOT NULL, role text NOT NULL, created_at timestamptz NOT NULL, parent_seq int,
    parts json NOT NULL, PRIMARY KEY (conversation_id, seq));
CREATE TABLE tool_calls (
    conversation_id text NOT NULL, id text NOT NULL, seq int NOT NULL, idx int NOT NULL,
    name text NOT NULL, arguments json NOT NULL, status text NOT NULL, result_seq int,
    result_idx int, created_at timestamptz NOT NULL, completed_at timestamptz,
    PRIMARY KEY (conversation_id, id),
    FOREIGN KEY (conversation_id, seq) REFERENCES messages ON DELETE CASCADE);
CREATE INDEX tool_calls_pending ON tool_calls (conversation_id, seq) WHERE status = 'pending';
"""

_APPEND = """
WITH upd AS (
    UPDATE conversations SET last_seq = last_seq + 5, head_seq = last_seq + 5,
        revision = $2, updated_at = $3
    WHERE id = $1 RETURNING last_seq - 5 AS base
), msg AS (
    INSERT INTO messages (conversation_id, seq, role, created_at, parent_seq, parts)
    SELECT $1, upd.base + m.off, m.role, $3, upd.base + m.off - 1, m.parts::json
    FROM upd, unnest($4::int[], $5::text[], $6::text[]) AS m(off, role, parts)
), calls AS (
    INSERT INTO tool_calls (conversation_id, id, seq, idx, name, arguments, status, result_seq,
                            result_idx, created_at, completed_at)
    SELECT $1, c.id, upd.base + 2, c.idx, c.name, c.arguments::json, 'complete',
           upd.base + c.result_off, 0, $3, $3
    FROM upd, unnest($7::text[], $8::int[], $9::text[], $10::text[], $11::int[])
        AS c(id, idx, name, arguments, result_off)
), interrupted AS (
    UPDATE tool_calls SET status = 'interrupted', completed_at = $3
    FROM upd WHERE conversation_id = $1 AND status = 'pending' AND seq < upd.base + 1
)
SELECT base FROM upd
"""


def _payload(turn: int) -> list[Any]:
    data = turn_data(turn)
    call_parts = [
        {"kind": "tool_call", "id": call_id, "name": name, "arguments": arguments}
        for call_id, name, arguments in data.calls
    ]
    parts = [
        [{"kind": "text", "text": data.user}],
        call_parts,
        *(
            [{"kind": "tool_result", "call_id": call_id, "output": {"kind": "json", "value": out}}]
            for call_id, out in data.results
        ),
        [{"kind": "text", "text": data.reply}],
    ]
    return [
        [1, 2, 3, 4, 5],
        ["user", "assistant", "tool", "tool", "assistant"],
        [json.dumps(p) for p in parts],
        [call_id for call_id, _, _ in data.calls],
        list(range(len(data.calls))),
        [name for _, name, _ in data.calls],
        [json.dumps(arguments) for _, _, arguments in data.calls],
        [3 + k for k in range(len(data.calls))],
    ]


class _Store:
    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._turns = 0

    def payload(self, turn: int) -> Any:
        return _payload(turn)

    async def new_conversation(self, key: str) -> str:
        await self._pool.execute(
            "INSERT INTO conversations (id, updated_at) VALUES ($1, $2)", key, datetime.now(UTC)
        )
        return key

    async def append_turn(self, conversation: str, payload: list[Any]) -> None:
        self._turns += 1
        base = await self._pool.fetchval(
            _APPEND, conversation, str(self._turns), datetime.now(UTC), *payload
        )
        if base is None:
            raise LookupError(conversation)

    async def load_all(self, conversation: str) -> int:
        async with self._pool.acquire() as conn:
            messages = await conn.fetch(
                "SELECT seq, parent_seq, role, created_at, parts::text FROM messages "
                "WHERE conversation_id = $1 ORDER BY seq",
                conversation,
            )
            calls = await conn.fetch(
                "SELECT id, seq, name, arguments::text, status, result_seq, created_at, "
                "completed_at FROM tool_calls WHERE conversation_id = $1 ORDER BY seq, idx",
                conversation,
            )
        decoded = [{**dict(row), "parts": json.loads(row[4])} for row in messages]
        [{**dict(row), "arguments": json.loads(row[3])} for row in calls]
        return len(decoded)

    async def load_last(self, conversation: str, n: int) -> int:
        rows = await self._pool.fetch(
            "SELECT seq, parent_seq, role, created_at, parts::text FROM messages "
            "WHERE conversation_id = $1 ORDER BY seq DESC LIMIT $2",
            conversation,
            n,
        )
        return len([{**dict(row), "parts": json.loads(row[4])} for row in reversed(rows)])


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """The tables on a fresh database, behind a pool of 10 connections."""
    import asyncpg

    name = await fresh_postgres_database("floor")
    pool = await asyncpg.create_pool(f"{postgres_dsn()}/{name}", min_size=1, max_size=10)
    try:
        await pool.execute(_SCHEMA)
        yield _Store(pool)
    finally:
        await pool.close()


if __name__ == "__main__":
    main(PEER, open_store)
