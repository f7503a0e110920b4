"""Each assumption `convstore._compat` makes about another library, checked on its own.

An upgrade that breaks one fails here by name, instead of slowing or breaking a load or an
append somewhere else. Importing convstore has no process-wide side effect.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import aiosqlite
import pytest
from pydantic import BaseModel

from convstore import Message, TextPart
from convstore._compat.collector import collector_paused
from convstore._compat.pydantic_internals import trusted_constructor
from convstore._compat.sqlite_driver import (
    adapt_none_quickly,
    finish_queued,
    run_in_connection_thread,
)
from convstore.db.mapping import decode_messages, decode_tool_calls
from convstore.db.sqlite.connections import daemon_connection
from convstore.db.tx import SqliteCodec
from convstore.model import Conversation


@pytest.fixture(autouse=True)
def _gc_enabled() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


# -- pydantic -----------------------------------------------------------------------------------


def test_basemodel_declares_the_four_slots_trusted_construction_sets() -> None:
    for slot in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    ):
        assert hasattr(BaseModel.__dict__[slot], "__set__"), slot


def test_a_trusted_model_equals_the_validated_one() -> None:
    validated = Message(role="user", parts=[TextPart(text="hi")], seq=3)
    values = {name: getattr(validated, name) for name in type(validated).model_fields}
    built = trusted_constructor(Message)(values)
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.model_fields_set == set(type(validated).model_fields)
    assert built.model_copy(update={"seq": 4}).seq == 4


def test_a_trusted_model_with_extra_fields_allowed_equals_the_validated_one() -> None:
    class Open(BaseModel, extra="allow"):
        text: str

    validated = Open(text="hi")
    built = trusted_constructor(Open)({"text": "hi"})
    assert built == validated == Open.model_construct(text="hi")
    assert built.model_extra == {}


def test_the_canonical_init_is_not_custom_to_pydantic() -> None:
    # The marker keeps nested validation in pydantic-core; pydantic derives this flag from it.
    for model in (Message, TextPart, Conversation):
        assert model.__pydantic_custom_init__ is False, model


# -- sqlite3 and aiosqlite ----------------------------------------------------------------------


def test_importing_convstore_registers_no_sqlite_adapter() -> None:
    code = (
        "import sqlite3, convstore, convstore.db.sqlite.backend, convstore.store;"
        "assert (type(None), sqlite3.PrepareProtocol) not in sqlite3.adapters"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_none_adapter_binds_null_and_keeps_an_application_adapter() -> None:
    key = (type(None), sqlite3.PrepareProtocol)
    previous = sqlite3.adapters.pop(key, None)
    try:
        adapt_none_quickly()
        assert key in sqlite3.adapters
        raw = sqlite3.connect(":memory:")
        assert raw.execute("SELECT ? IS NULL, typeof(?)", (None, None)).fetchone() == (1, "null")
        raw.close()

        def own(_: None) -> str:
            return "mine"

        sqlite3.adapters[key] = own
        adapt_none_quickly()
        assert sqlite3.adapters[key] is own
    finally:
        sqlite3.adapters.pop(key, None)
        if previous is not None:
            sqlite3.adapters[key] = previous


async def test_aiosqlite_runs_a_whole_function_in_its_connection_thread() -> None:
    conn = await aiosqlite.connect(":memory:")
    try:
        caller = threading.get_ident()

        def work(raw: sqlite3.Connection, value: int) -> tuple[int, int, bool]:
            assert isinstance(raw, sqlite3.Connection)
            raw.execute("CREATE TABLE t (x)")
            raw.execute("INSERT INTO t VALUES (?)", (value,))
            (x,) = raw.execute("SELECT x FROM t").fetchone()
            return x, threading.get_ident(), raw.in_transaction

        x, thread, _ = await run_in_connection_thread(conn, work, 7)
        assert x == 7
        assert thread != caller
        # The same thread the public API uses, so its statements see ours.
        async with conn.execute("SELECT count(*) FROM t") as cursor:
            assert await cursor.fetchone() == (1,)

        def fail(_raw: sqlite3.Connection) -> None:
            raise ValueError("inside")

        with pytest.raises(ValueError, match="inside"):
            await run_in_connection_thread(conn, fail)
    finally:
        await conn.close()


async def test_finish_queued_returns_after_the_work_queued_before_it() -> None:
    conn = await aiosqlite.connect(":memory:")
    try:
        release, finished = threading.Event(), threading.Event()

        def slow(_raw: sqlite3.Connection) -> None:
            release.wait(30)
            finished.set()

        caller = asyncio.ensure_future(run_in_connection_thread(conn, slow))
        await asyncio.sleep(0)  # queued
        caller.cancel()  # the caller stops waiting; the function goes on in the thread
        waiter = asyncio.ensure_future(finish_queued(conn))
        for _ in range(3):
            await asyncio.sleep(0)
        assert caller.cancelled() and not waiter.done()
        release.set()
        await waiter
        assert finished.is_set()
    finally:
        release.set()
        await conn.close()
    await finish_queued(conn)  # closed: returns at once


@pytest.mark.parametrize("hop", ["ours", "aiosqlite's"])
def test_a_result_for_a_loop_closed_meanwhile_is_dropped_quietly(
    monkeypatch: pytest.MonkeyPatch, hop: str
) -> None:
    # A caller cancelled at shutdown, its loop closed while its function still ran: the thread
    # has nobody to hand the result to. aiosqlite's own hand-back raised "Event loop is closed"
    # there, an unhandled exception in the connection's thread.
    errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    release, handed = threading.Event(), threading.Event()

    def slow(_raw: sqlite3.Connection) -> int:
        release.wait(30)
        return 1

    loop = asyncio.new_event_loop()
    # The store's connections: aiosqlite's own calls (connect, close, SQLAlchemy's statements)
    # hand back through the guarded worker, `run_in_connection_thread` through its own.
    conn = loop.run_until_complete(daemon_connection(":memory:"))

    async def start() -> asyncio.Future[int]:
        if hop == "ours":
            call: Any = run_in_connection_thread(conn, slow)
        else:
            call = conn._execute(slow, conn._conn)
        waiting = asyncio.ensure_future(call)
        await asyncio.sleep(0)  # queued
        waiting.cancel()  # the caller stops waiting; the function goes on in the thread
        return waiting

    waiting = loop.run_until_complete(start())
    loop.run_until_complete(asyncio.sleep(0))
    assert waiting.cancelled()
    loop.close()
    release.set()
    conn._tx.put_nowait((None, handed.set))  # runs after `slow` and its hand-back
    for _ in range(300):  # until then, or until the thread dies of its hand-back
        if handed.wait(0.1) or errors:
            break
    assert errors == []
    assert handed.is_set()
    raw = conn._conn
    conn._tx.put_nowait((None, lambda: (raw.close(), aiosqlite.core._STOP_RUNNING_SENTINEL)[1]))
    conn._thread.join(30)
    conn._running, conn._connection = False, None  # closed by hand (its loop is gone)
    assert errors == []


# -- the garbage collector ----------------------------------------------------------------------


def test_paused_inside_and_restored_after_an_error() -> None:
    with collector_paused:
        assert not gc.isenabled()
        with collector_paused:  # nested (another thread's load): still paused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused:
        raise RuntimeError("decode failed")
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    with collector_paused:
        pass
    assert not gc.isenabled()


def test_the_pause_is_one_switch_for_every_thread() -> None:
    seen: list[bool] = []
    with collector_paused:
        thread = threading.Thread(target=lambda: seen.append(gc.isenabled()))
        thread.start()
        thread.join()
    assert seen == [False]


class _RecordingCodec(SqliteCodec):
    def __init__(self, seen: list[bool]) -> None:
        super().__init__()
        self.seen = seen

    def load_json(self, raw: Any) -> Any:
        self.seen.append(gc.isenabled())
        return super().load_json(raw)


def _rows(fetching: list[bool], fail: bool) -> Iterator[Any]:
    fetching.append(gc.isenabled())
    yield (1, None, "user", None, None, "2026-01-01 00:00:00.000000", None, None,
           '[{"kind":"text","text":"hi"}]', None, None)  # fmt: skip
    if fail:
        raise RuntimeError("row fetch failed")


def test_only_the_decode_runs_with_the_collector_off() -> None:
    fetching: list[bool] = []
    decoding: list[bool] = []
    (message,) = decode_messages("c", _rows(fetching, fail=False), _RecordingCodec(decoding))
    assert message.text == "hi"
    assert fetching == [True]  # the driver's fetch runs with the host's collector as it was
    assert decoding and not any(decoding)
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        decode_messages("c", _rows(fetching, fail=True), SqliteCodec())
    assert gc.isenabled()

    def calls() -> Iterator[Any]:
        fetching.append(gc.isenabled())
        yield from ()

    assert decode_tool_calls(calls(), {}, SqliteCodec()) == []
    assert fetching[-1] is True and gc.isenabled()


def test_a_load_leaves_the_collector_on(tmp_path: Any) -> None:
    from convstore import ConversationStore

    async def run() -> None:
        async with ConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}") as store:
            conv = await store.create_conversation()
            await store.append(conv.id, [Message(role="user", parts=[TextPart(text="x")])])
            assert gc.isenabled()
            assert len((await store.load(conv.id)).messages) == 1
            assert gc.isenabled()

    asyncio.run(run())
