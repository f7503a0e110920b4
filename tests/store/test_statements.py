"""Statement counts: a load is a fixed number of statements whatever the conversation's
length, an append is one transaction (on PostgreSQL, one statement), and moving the head
(pop, truncate, switch, a new branch) costs the same at any length."""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from convstore import ConversationStore, Message, ToolCallPart
from convstore.db.schema import metadata
from convstore.store.load.reads import load_conversation
from tests.support.round_trips import round_trips


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
    """Statements the store runs that touch tables (not transaction control).

    SQLite also reports the statements it runs itself, prefixed ``--``: trigger bodies and the
    full-text index's own upkeep (whose segment merges depend on what the index holds, not on
    the store's statements); those are left out.
    """
    control = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE", "--")
    return [s for s in statements if not s.lstrip().upper().startswith(control)]


def quiet(store: ConversationStore) -> ConversationStore:
    """``store`` with no idle-time search catch-up: it runs its own statements on the store's
    backend, and these tests count only the operation's."""
    store.search_index.background = False
    return store


async def test_load_runs_the_same_statements_for_10_and_1000_messages(
    store: ConversationStore,
) -> None:
    quiet(store)
    small = await _conversation_of(store, 12)
    large = await _conversation_of(store, 1000)
    await store.backend.trace_all()
    with recorded(store) as for_small:
        assert len((await store.load(small)).messages) == 12
    with recorded(store) as for_large:
        assert len((await store.load(large)).messages) == 1000
    # PostgreSQL reads it all in one statement (`convstore.db.postgres.load`).
    statements = 1 if store.backend.dialect_name == "postgresql" else 4
    assert len(_queries(for_small)) == len(_queries(for_large)) == statements
    with recorded(store) as windowed:
        assert len((await store.load(large, last=50)).messages) == 50
    assert len(_queries(windowed)) == statements


@pytest.mark.postgres
async def test_a_postgresql_load_or_window_is_one_round_trip(pg_store_url: str) -> None:
    """Whole, ``last=N``, ``before_seq`` pages, on a chain and on a branched conversation, with
    the message cache on and off: one round trip to the server each, and no transaction."""
    for message_cache in (10_000, 0):
        blobs = f"memory://round-trips-{uuid.uuid4().hex}"
        async with ConversationStore(
            pg_store_url, blobs=blobs, message_cache=message_cache
        ) as store:
            quiet(store)
            chain = await _conversation_of(store, 40)
            branched = await _conversation_of(store, 40)
            await store.append(branched, Message.user("edited"), parent_seq=30)
            windows: list[dict[str, int]] = [{}, {"last": 5}, {"last": 6, "before_seq": 20}]
            windows.append({"before_seq": 3})
            for cid in (chain, branched):
                for window in windows:
                    expected = await store.load(cid, **window)  # fills the cache
                    await store.load(cid, **window)  # statements are prepared once per connection
                    with round_trips(store) as sent:
                        assert await store.load(cid, **window) == expected
                    assert sent == ["bind_execute"], (window, sent)


def _executed(sent: list[str]) -> list[str]:
    """Round trips but preparing: a statement is prepared once per pooled connection, and
    which connection a load gets depends on what else holds one (search's catch-up)."""
    return [request for request in sent if request != "prepare"]


@pytest.mark.postgres
async def test_a_postgresql_load_of_another_path_is_one_round_trip(pg_store_url: str) -> None:
    """``head_seq=``: the stored head, another branch's tip, a message inside a path, with
    and without a window: one round trip each, and what the transactional path reads."""
    for message_cache in (10_000, 0):
        blobs = f"memory://other-path-{uuid.uuid4().hex}"
        async with ConversationStore(
            pg_store_url, blobs=blobs, message_cache=message_cache
        ) as store:
            quiet(store)
            cid = await _conversation_of(store, 40)
            await store.append(cid, _turn(99), parent_seq=30)  # a branch: 41..44, head 44
            for head in (44, 40, 17, 30):
                for window in ({}, {"last": 3}, {"last": 2, "before_seq": 10}):
                    expected = await store.backend.read(
                        lambda tx, h=head, w=window, c=cid: load_conversation(
                            tx, c, None, w.get("last"), w.get("before_seq"), head_seq=h
                        )
                    )
                    assert await store.load(cid, head_seq=head, **window) == expected
                    with round_trips(store) as sent:
                        assert await store.load(cid, head_seq=head, **window) == expected
                    assert _executed(sent) == ["bind_execute"], (head, window, sent)
            # No stored head (the active path truncated away; 31..40 stay, on the other branch).
            await store.truncate(cid, after_seq=0)
            for head in (40, 35):
                expected = await store.backend.read(
                    lambda tx, h=head, c=cid: load_conversation(tx, c, None, 2, None, head_seq=h)
                )
                assert await store.load(cid, head_seq=head, last=2) == expected


@pytest.mark.postgres
async def test_a_warm_postgresql_reload_after_another_store_wrote_is_one_round_trip(
    pg_store_url: str,
) -> None:
    """A store whose cache holds a conversation reloads it in one round trip after another
    store appended, popped and branched it: only the new rows come whole, and the result is
    what a store with nothing cached reads."""
    blobs = f"memory://warm-{uuid.uuid4().hex}"
    async with (
        ConversationStore(pg_store_url, blobs=blobs) as reader,
        ConversationStore(pg_store_url, blobs=blobs) as writer,
        ConversationStore(pg_store_url, blobs=blobs, message_cache=0) as fresh,
    ):
        quiet(reader)
        quiet(writer)
        cid = await _conversation_of(reader, 40)
        writes = [
            lambda: writer.append(cid, _turn(50)),
            lambda: writer.pop(cid),
            lambda: writer.append(cid, _turn(51), parent_seq=20),
            lambda: writer.append(cid, Message.user("on the branch")),
        ]
        for window in ({}, {"last": 5}):
            await reader.load(cid, **window)
            await reader.load(cid, **window)  # prepared on this connection
        for write in writes:
            await write()
            for window in ({}, {"last": 5}):
                with round_trips(reader) as sent:
                    loaded = await reader.load(cid, **window)
                assert _executed(sent) == ["bind_execute"], (window, sent)
                assert loaded == await fresh.load(cid, **window)


async def test_append_is_one_transaction(store: ConversationStore) -> None:
    quiet(store)
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
        # One statement, one round trip: its CTEs insert into each table once (the search
        # queue's row included: revision 0017).
        (statement,) = _queries(statements)
        assert statement.count("INSERT INTO messages") == statement.count("INSERT INTO tool_calls")
        assert statement.count("INSERT INTO search_queue") == 1
        assert statement.count("INSERT INTO") == 3
        return
    # Each table is written with one executemany, whatever the batch holds.
    inserts = [s for s in _queries(statements) if s.lstrip().upper().startswith("INSERT")]
    tables = [s.split()[2] for s in inserts]
    if store.backend.dialect_name == "sqlite":
        # sqlite3 reports each executemany row; count distinct statements in order instead.
        tables = list(dict.fromkeys(tables))
    assert tables == ["messages", "tool_calls"]


async def _moves(store: ConversationStore, cid: str) -> list[list[str]]:
    """pop, a new branch, switch_branch and truncate at the end of ``cid``: each one's queries."""
    tip = (await store.load(cid, last=1)).head_seq
    assert tip is not None
    done = []
    moves = [
        lambda: store.pop(cid),  # the assistant's answer
        lambda: store.pop(cid),  # a result: its call reopens
        lambda: store.append(cid, Message.user("rephrased"), parent_seq=tip - 3),
        lambda: store.switch_branch(cid, head_seq=tip - 2),
        lambda: store.pop(cid),  # the calling message, which the new branch keeps
        lambda: store.truncate(cid, after_seq=tip - 8),
    ]
    for move in moves:
        with recorded(store) as statements:
            await move()
        done.append(_queries(statements))
    return done


async def test_moving_the_head_costs_the_same_on_40_and_2000_messages(tmp_path: Path) -> None:
    """`pop`, `truncate`, `switch_branch` and a new branch run the same statements however long
    the conversation, and on SQLite each statement finds its rows by index: no plan scans a
    table (so `pop` finds children, and deletes a message's calls, without a scan)."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'moves.db'}"
    async with ConversationStore(url, blobs=f"memory://moves-{uuid.uuid4().hex}") as store:
        quiet(store)  # an idle-time catch-up on a loaded machine would be counted as a move's
        runs = []
        for messages in (40, 2000):
            cid = await _conversation_of(store, messages)
            # A branch near the start: the path runs through a fork, then on to its end.
            await store.append(cid, Message.user("edited"), parent_seq=2)
            await store.switch_branch(cid, head_seq=messages)
            await store.backend.trace_all()
            runs.append(await _moves(store, cid))
    small, large = runs
    assert [len(s) for s in small] == [len(s) for s in large]
    tables = {t.name for t in metadata.sorted_tables} | {"step"}  # step: the walks' alias
    raw = sqlite3.connect(tmp_path / "moves.db")
    try:
        for statement in (s for move in large for s in move):
            plan = [row[3] for row in raw.execute(f"EXPLAIN QUERY PLAN {statement}")]
            assert not [d for d in plan if _reads_a_whole_conversation(d, tables)], (
                statement,
                plan,
            )
    finally:
        raw.close()


def _reads_a_whole_conversation(detail: str, tables: set[str]) -> bool:
    """Whether a query-plan line reads a table whole, or a conversation's rows in it whole
    (or from a ``seq`` on: the older part of a long one)."""
    scan = re.match(r"SCAN (\w+)", detail)
    if scan:
        return scan.group(1) in tables
    return bool(
        re.search(r"\(conversation_id=\?\)$", detail)
        or re.search(r"sqlite_autoindex_\w+ \(conversation_id=\? AND \w+[<>]", detail)
    )
