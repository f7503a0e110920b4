"""One thread hop per store call on SQLite.

Every statement of a call runs in one hand-off to its connection's thread
(`convstore.db.sqlite.backend.SqliteBackend.hops` counts them): a hop is a context switch and a
wait on a busy machine, which no instruction count shows. Each operation is measured after a
warm-up of the same kind (the reader connections are open, statements prepared).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, JsonOutput, Message, TextPart, ToolCallPart, ToolResultPart
from convstore.db.sqlite.backend import SqliteBackend


def _turn(n: int) -> list[Message]:
    calls = [
        ToolCallPart(id=f"call_{n}_{k}", name="read_file", arguments={"path": f"/d/{n}/{k}.txt"})
        for k in range(2)
    ]
    return [
        Message(role="user", parts=[TextPart(text=f"question {n} " * 20)]),
        Message(role="assistant", parts=calls),
        *(
            Message(
                role="tool",
                parts=[ToolResultPart(call_id=c.id, output=JsonOutput(value="x" * 1000))],
            )
            for c in calls
        ),
        Message(role="assistant", parts=[TextPart(text=f"answer {n} " * 50)]),
    ]


async def _hops(backend: SqliteBackend, call: Callable[[], Awaitable[Any]]) -> int:
    await call()  # warm-up: connections opened, statements prepared
    before = backend.hops
    await call()
    return backend.hops - before


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    async with ConversationStore(
        f"sqlite+aiosqlite:///{tmp_path / 'hops.db'}", blobs="memory://hops"
    ) as store:
        yield store


async def test_each_operation_is_one_hop(store: ConversationStore) -> None:
    backend = store.backend
    assert isinstance(backend, SqliteBackend)
    cid = (await store.create_conversation(title="hops")).id
    turns = iter(range(1_000))
    for _ in range(30):
        await store.append(cid, _turn(next(turns)))
    keys = iter(range(1_000))

    async def complete() -> None:
        n = next(turns)
        await store.append(cid, _turn(n)[:2])  # a call left pending
        before = backend.hops
        await store.complete_tool_call(cid, f"call_{n}_0", {"found": True})
        completions.append(backend.hops - before)

    completions: list[int] = []

    operations: dict[str, Callable[[], Awaitable[Any]]] = {
        "append": lambda: store.append(cid, _turn(next(turns))),
        "append (idempotency key)": lambda: store.append(
            cid, _turn(next(turns)), idempotency_key=f"k{next(keys)}"
        ),
        "load": lambda: store.load(cid),
        "load(last=50)": lambda: store.load(cid, last=50),
        "load_native": lambda: store.load_native(cid, format="x"),
        "load_native(last=50)": lambda: store.load_native(cid, format="x", last=50),
        "pop": lambda: store.pop(cid),
        "get_conversation": lambda: store.get_conversation(cid),
        "get_messages": lambda: store.get_messages(cid, [1, 2]),
    }
    hops = {name: await _hops(backend, call) for name, call in operations.items()}
    assert hops == dict.fromkeys(operations, 1)
    await complete()
    await complete()
    assert completions == [1, 1]
