"""The message cache (``ConversationStore(message_cache=N)``): loads equal with it on and off.

Decoded messages are kept per (conversation, seq); a load asks the database which messages its
path holds and decodes only those it has not seen. These tests write through one store and
read through others on the same database, so every load of a caching store has to notice
what someone else changed: appends, pops, branch switches, deletions and a conversation
deleted and created again under the same id. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule, run_state_machine_as_test

from convstore import (
    Conversation,
    ConversationStore,
    InvalidInputError,
    Message,
    ToolCallPart,
)
from convstore.db.postgres import load as pg_load
from tests.store.test_state_machine import StoreMachine


@asynccontextmanager
async def _store(db_url: str, message_cache: int = 10_000) -> AsyncIterator[ConversationStore]:
    blobs = f"memory://message-cache-{uuid.uuid4().hex}"
    async with ConversationStore(db_url, blobs=blobs, message_cache=message_cache) as store:
        yield store


@contextmanager
def _decoding(store: ConversationStore) -> Iterator[list[str]]:
    """The statements that read whole message rows (what a load decodes), while active.

    On PostgreSQL a load is one statement (`convstore.db.postgres.load`) whose message rows come
    whole or, where the store's cache holds them, as their seq alone: it counts when any row
    came whole.
    """
    seen: list[str] = []
    backend = store.backend
    if backend.dialect_name == "postgresql":
        fetch = backend.fetch_statement

        async def fetch_statement(sql: str, arguments: Sequence[Any]) -> list[Any]:
            records = await fetch(sql, arguments)
            rows = pg_load.split(records)
            if any(row[0] not in rows.held for row in rows.messages + rows.later):
                seen.append(sql)
            return records

        backend.fetch_statement = fetch_statement  # type: ignore[method-assign]
        try:
            yield seen
        finally:
            del backend.fetch_statement
        return

    def listener(sql: str) -> None:
        if "messages.parts" in sql and sql.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append(sql)

    remove = backend.add_statement_listener(listener)
    try:
        yield seen
    finally:
        remove()


def _turn(n: int) -> list[Message]:
    return [
        Message.user(f"question {n}"),
        Message.assistant(ToolCallPart(id=f"call-{n}", name="lookup", arguments={"n": n})),
        Message.tool_result(f"call-{n}", {"answer": n}),
        Message.assistant(f"answer {n}"),
    ]


async def _views(store: ConversationStore, cid: str) -> list[Conversation]:
    """Whole, two windows, and every branch by head_seq."""
    views = [
        await store.load(cid),
        await store.load(cid, last=3),
        await store.load(cid, last=2, before_seq=(await store.load(cid)).head_seq),
    ]
    for branch in await store.branches(cid):
        views.append(await store.load(cid, head_seq=branch.head_seq))
    return views


async def test_a_caching_store_sees_what_another_store_writes(db_url: str) -> None:
    async with (
        _store(db_url) as writer,
        _store(db_url) as cached,
        _store(db_url, message_cache=0) as uncached,
    ):
        conv = await writer.create_conversation(id=f"shared-{uuid.uuid4().hex}")
        cid = conv.id
        await writer.append(cid, _turn(0) + _turn(1))

        async def agree() -> None:
            assert await _views(cached, cid) == await _views(uncached, cid)

        await agree()
        await writer.append(cid, _turn(2))  # appended elsewhere
        await agree()
        await writer.pop(cid)
        await writer.pop(cid)  # the result: its call is open again
        await agree()
        assert (await cached.load(cid)).get_tool_call("call-2").status == "pending"
        await writer.append(cid, [Message.user("edited")], parent_seq=5)  # a branch
        await agree()
        await writer.switch_branch(cid, head_seq=10)
        await agree()
        await writer.complete_tool_call(cid, "call-2", {"late": True})
        await agree()
        await writer.cancel_tool_calls(cid)
        await agree()
        before = await cached.load(cid)
        await writer.delete_conversation(cid)
        # The same id again, with other messages at the same seqs.
        await writer.create_conversation(id=cid)
        await writer.append(cid, [Message.user("a new start"), Message.assistant("hello")])
        again = await cached.load(cid)
        assert again == await uncached.load(cid)
        assert [m.text for m in again.messages] == ["a new start", "hello"]
        assert again.messages[0] != before.messages[0]
        await agree()


async def test_a_reload_decodes_only_new_messages(db_url: str) -> None:
    async with _store(db_url) as writer, _store(db_url) as cached:
        conv = await writer.create_conversation()
        await writer.append(conv.id, _turn(0) + _turn(1))
        await cached.backend.trace_all()
        with _decoding(cached) as first:
            whole = await cached.load(conv.id)
        assert len(first) == 1
        with _decoding(cached) as again:
            assert await cached.load(conv.id) == whole
            assert await cached.load(conv.id, last=3) == await writer.load(conv.id, last=3)
        assert again == []  # every message was decoded already
        await writer.append(conv.id, _turn(2))
        with _decoding(cached) as after_append:
            reloaded = await cached.load(conv.id)
        assert len(after_append) == 1 and reloaded == await writer.load(conv.id)
        # The writer kept what it appended: its own reload decodes nothing.
        await writer.backend.trace_all()
        with _decoding(writer) as own:
            await writer.load(conv.id)
        assert own == []


async def test_the_cache_is_bounded_and_can_be_off(db_url: str) -> None:
    async with (
        _store(db_url, message_cache=5) as small,
        _store(db_url, message_cache=0) as off,
    ):
        conv = await small.create_conversation()
        await small.append(conv.id, _turn(0) + _turn(1) + _turn(2))  # 12 messages
        await small.backend.trace_all()
        await off.backend.trace_all()
        with _decoding(small) as first:
            loaded = await small.load(conv.id)
        # More messages than it keeps: the oldest were evicted and are decoded again.
        assert len(first) == 1
        with _decoding(small) as second:
            assert await small.load(conv.id) == loaded
        assert len(second) == 1
        with _decoding(small) as window:
            assert await small.load(conv.id, last=5) == await off.load(conv.id, last=5)
        assert window == []  # the newest five are kept
        with _decoding(off) as uncached:
            assert await off.load(conv.id) == loaded
            assert await off.load(conv.id) == loaded
        assert len(uncached) == 2
    with pytest.raises(InvalidInputError, match="message_cache"):
        ConversationStore(db_url, message_cache=-1)


# -- any sequence of operations ----------------------------------------------------------------


class CacheMachine(StoreMachine):
    """The v2 state machine, plus readers on the same database: one caching store that keeps
    only a few messages (so entries are evicted and decoded again), one that keeps none. After
    every step their loads equal each other's and the writer's; conversations are also deleted
    and created again under the same id."""

    def __init__(self) -> None:
        super().__init__()
        self.cached = self._reader(message_cache=6)
        self.uncached = self._reader(message_cache=0)

    def _reader(self, message_cache: int) -> ConversationStore:
        store = ConversationStore(
            self.db_url,
            blobs=f"memory://cache-machine-{uuid.uuid4().hex}",
            message_cache=message_cache,
        )
        self.runner.run(store.open())
        return store

    def teardown(self) -> None:
        try:
            self.runner.run(self.cached.close())
            self.runner.run(self.uncached.close())
        finally:
            super().teardown()

    @rule(data=st.data())
    def delete_and_recreate(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        self.runner.run(self.store.delete_conversation(cid))
        del self.ref.conversations[cid]
        self.revision_of.pop(cid, None)
        recreated = self.runner.run(self.store.get_or_create_conversation(cid))
        self.ref.get_or_create(cid)
        self._see_revision(cid, recreated.revision)
        self.chat_turn_in(cid, data)

    def chat_turn_in(self, cid: str, data: st.DataObject) -> None:
        reply = self._draw_message(data, [], kind="calls")
        batch = [Message.user("after a re-creation"), reply]
        self._run(
            "chat_turn_in",
            lambda: self.store.append(cid, batch),
            lambda stored: self.ref.append(cid, batch, first_seq=stored[0].seq if stored else None),
        )

    @invariant()
    def caching_and_uncached_readers_agree(self) -> None:
        for cid in self.ref.conversations:
            uncached = self.runner.run(_views(self.uncached, cid))
            assert self.runner.run(_views(self.cached, cid)) == uncached, cid
            assert self.runner.run(_views(self.store, cid)) == uncached, cid


CACHE_SETTINGS = settings(
    max_examples=12,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_loads_agree_with_the_cache_on_and_off(db_url: str) -> None:
    machine = type("CacheMachineOnDb", (CacheMachine,), {"db_url": db_url})
    run_state_machine_as_test(machine, settings=CACHE_SETTINGS)


class _NoFreshLifecycles(ConversationStore):
    """Broken on purpose: caches whole loads, lifecycles and head included."""

    _kept: ClassVar[dict[str, Conversation]] = {}

    async def load(self, conversation_id: str, **kwargs: object) -> Conversation:  # type: ignore[override]
        key = f"{conversation_id}{sorted(kwargs.items())}"
        if key not in self._kept:
            self._kept[key] = await super().load(conversation_id, **kwargs)  # type: ignore[arg-type]
        return self._kept[key]


def test_the_harness_catches_a_cache_that_keeps_lifecycles(tmp_path: Path) -> None:
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'broken.db'}"

    class Broken(CacheMachine):
        def _reader(self, message_cache: int) -> ConversationStore:
            if message_cache == 0:
                return super()._reader(message_cache)
            store = _NoFreshLifecycles(
                self.db_url, blobs=f"memory://broken-{uuid.uuid4().hex}", message_cache=6
            )
            self.runner.run(store.open())
            return store

    _NoFreshLifecycles._kept.clear()
    machine = type("BrokenOnDb", (Broken,), {"db_url": db_url})
    quick = settings(CACHE_SETTINGS, phases=[Phase.generate], print_blob=False)
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=quick)
