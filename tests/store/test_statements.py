"""Statement counts: a load is a fixed number of statements whatever the conversation's
length, and an append is one transaction (on PostgreSQL, one statement)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from convstore import ConversationStore, Message, ToolCallPart


@contextmanager
def recorded(store: ConversationStore) -> Iterator[list[str]]:
    statements: list[str] = []
    remove = store.backend.add_statement_listener(statements.append)
    try:
        yield statements
    finally:
        remove()


def _turn(n: int) -> list[Message]:
    return [
        Message.user(f"question {n}"),
        Message.assistant(ToolCallPart(id=f"c{n}", name="lookup", arguments={"n": n})),
        Message.tool_result(f"c{n}", {"answer": n}),
        Message.assistant(f"answer {n}"),
    ]


async def _conversation_of(store: ConversationStore, messages: int) -> str:
    conv = await store.create_conversation()
    batch: list[Message] = []
    for n in range(messages // 4):
        batch.extend(_turn(n))
    await store.append(conv.id, batch)
    return conv.id


def _queries(statements: list[str]) -> list[str]:
    """Statements that touch tables (not transaction control)."""
    control = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE")
    return [s for s in statements if not s.lstrip().upper().startswith(control)]


async def test_load_runs_the_same_statements_for_10_and_1000_messages(
    store: ConversationStore,
) -> None:
    small = await _conversation_of(store, 12)
    large = await _conversation_of(store, 1000)
    await store.backend.trace_all()
    with recorded(store) as for_small:
        assert len((await store.load(small)).messages) == 12
    with recorded(store) as for_large:
        assert len((await store.load(large)).messages) == 1000
    assert len(_queries(for_small)) == len(_queries(for_large)) == 4
    with recorded(store) as windowed:
        assert len((await store.load(large, last=50)).messages) == 50
    assert len(_queries(windowed)) == 4


async def test_append_is_one_transaction(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.backend.trace_all()
    with recorded(store) as statements:
        await store.append(conv.id, _turn(1) + _turn(2))
    if store.backend.dialect_name == "sqlite":
        control = [
            s.strip().upper()
            for s in statements
            if s.strip().upper() in ("BEGIN IMMEDIATE", "COMMIT")
        ]
        assert control == ["BEGIN IMMEDIATE", "COMMIT"]
    if store.backend.dialect_name == "postgresql":
        # One statement, one round trip: its CTEs insert into each table once.
        (statement,) = _queries(statements)
        assert statement.count("INSERT INTO messages") == statement.count("INSERT INTO tool_calls")
        assert statement.count("INSERT INTO") == 2
        return
    # Each table is written with one executemany, whatever the batch holds.
    inserts = [s for s in _queries(statements) if s.lstrip().upper().startswith("INSERT")]
    tables = [s.split()[2] for s in inserts]
    if store.backend.dialect_name == "sqlite":
        # sqlite3 reports each executemany row; count distinct statements in order instead.
        tables = list(dict.fromkeys(tables))
    assert tables == ["messages", "tool_calls"]
