"""The one-statement PostgreSQL append writes exactly the general path's rows.

Generated sequences of appends (user turns with and without message ids, assistant turns making
calls, results for calls made earlier, in the same batch, twice, never, or after a
cancellation; matching and stale ``expected_revision``; the right and a wrong tenant; a branch
that sends later appends down the general path) run against two conversations of one
PostgreSQL store: one with the one-statement path, one with it switched off. Every step must
end alike (the same stored messages, or the same error) and the two conversations must hold the
same rows, column by column, timestamps aside.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import (
    ConversationStore,
    ConvstoreError,
    DatabaseError,
    ErrorOutput,
    Message,
    ToolCallConflictError,
    ToolCallPart,
)
from convstore.store.append import _one_statement

pytestmark = pytest.mark.postgres

CALL_IDS = [f"call_{n}" for n in range(4)]
MESSAGE_IDS = ["m1", "m2", "m3"]


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["user", "assistant", "result", "error"]))
    message_id = draw(st.none() | st.sampled_from(MESSAGE_IDS))
    if kind == "user":
        return Message.user(draw(st.sampled_from(["hi", "what next?"])), id=message_id)
    if kind == "assistant":
        calls = draw(st.lists(st.sampled_from(CALL_IDS), max_size=2))
        return Message.assistant(
            "on it",
            *(ToolCallPart(id=c, name="lookup", arguments={"q": c}) for c in calls),
            id=message_id,
        )
    call_id = draw(st.sampled_from(CALL_IDS))
    if kind == "error":
        return Message.tool_result(call_id, ErrorOutput(message="boom"), id=message_id)
    return Message.tool_result(call_id, {"value": draw(st.integers(0, 1))}, id=message_id)


steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(messages(), min_size=1, max_size=4),
            st.sampled_from(["none", "current", "stale", "wrong-tenant"]),
            st.sampled_from(["raise", "keep-first"]),
        ),
        st.tuples(st.just("cancel")),
        st.tuples(st.just("branch")),
    ),
    min_size=1,
    max_size=6,
)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def pg_store(pg_store_url: str, loop: asyncio.AbstractEventLoop) -> Iterator[ConversationStore]:
    store = ConversationStore(pg_store_url, blobs="memory://one-statement")
    loop.run_until_complete(store.open())
    yield store
    loop.run_until_complete(store.close())


class _Counter:
    def __init__(self) -> None:
        self.taken = 0
        self.declined = 0


async def _step(store: ConversationStore, cid: str, step: tuple[Any, ...]) -> Any:
    try:
        match step:
            case ("append", batch, revision, on_conflict):
                expected = None
                if revision == "current":
                    expected = (await store.load(cid, tenant="t", last=1)).revision
                elif revision == "stale":
                    expected = "0123456789abcdef"
                stored = await store.append(
                    cid,
                    batch,
                    tenant="u" if revision == "wrong-tenant" else "t",
                    expected_revision=expected,
                    on_conflict=on_conflict,
                )
                return [(m.seq, m.parent_seq, m.role, m.id, m.parts) for m in stored]
            case ("cancel",):
                return await store.cancel_tool_calls(cid, tenant="t")
            case ("branch",):
                stored = await store.append(cid, Message.user("edit"), tenant="t", parent_seq=1)
                return [(m.seq, m.parent_seq) for m in stored]
    except ConvstoreError as exc:
        return type(exc).__name__
    raise AssertionError(step)


async def _rows(store: ConversationStore, cid: str) -> dict[str, Any]:
    engine = create_async_engine(store.url)
    try:
        async with engine.connect() as conn:
            found = {}
            for table, key in (("messages", "seq"), ("tool_calls", "seq, idx")):
                result = await conn.execute(
                    text(f"SELECT * FROM {table} WHERE conversation_id = :c ORDER BY {key}"),
                    {"c": cid},
                )
                found[table] = [_comparable(row) for row in result.mappings()]
            header = await conn.execute(
                text("SELECT last_seq, head_seq, branched FROM conversations WHERE id = :c"),
                {"c": cid},
            )
            found["header"] = [tuple(header.one())]
            return found
    finally:
        await engine.dispose()


def _comparable(row: Any) -> dict[str, Any]:
    """A row without its conversation id, each timestamp reduced to whether it is set."""
    return {
        k: (v is not None if k.endswith("_at") else v)
        for k, v in row.items()
        if k != "conversation_id"
    }


def test_one_statement_append_writes_the_general_paths_rows(
    pg_store: ConversationStore, loop: asyncio.AbstractEventLoop
) -> None:
    counter = _Counter()
    real = _one_statement.append_in_one_statement

    async def counted(backend: Any, plan: Any) -> Any:
        stored = await real(backend, plan)
        if stored is None:
            counter.declined += 1
        else:
            counter.taken += 1
        return stored

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(script=steps)
    def run(script: list[tuple[Any, ...]]) -> None:
        async def both() -> None:
            fast = (await pg_store.create_conversation(tenant="t")).id
            general = (await pg_store.create_conversation(tenant="t")).id
            for step in script:
                with mock.patch.object(_one_statement, "append_in_one_statement", counted):
                    got = await _step(pg_store, fast, step)
                with mock.patch.object(_one_statement, "eligible", return_value=False):
                    want = await _step(pg_store, general, step)
                assert got == want, step
            assert await _rows(pg_store, fast) == await _rows(pg_store, general)

        loop.run_until_complete(both())

    run()
    # The comparison means something only if both paths ran (errors and branches decline).
    assert counter.taken > 0
    assert counter.declined > 0


def test_a_plain_turn_is_one_statement(
    pg_store: ConversationStore, loop: asyncio.AbstractEventLoop
) -> None:
    """Calls made, answered, and a user turn interrupting one left pending: one round trip."""
    sent: list[str] = []

    async def turns() -> None:
        cid = (await pg_store.create_conversation(tenant="t")).id
        stop = pg_store.backend.add_statement_listener(sent.append)
        try:
            await pg_store.append(
                cid,
                [
                    Message.user("weather and time?"),
                    Message.assistant(
                        ToolCallPart(id="w", name="weather", arguments={"city": "Oslo"}),
                        ToolCallPart(id="t", name="time", arguments={}),
                    ),
                    Message.tool_result("w", {"celsius": 3}),
                ],
                tenant="t",
            )
            await pg_store.append(cid, Message.user("never mind"), tenant="t")
        finally:
            stop()
        loaded = await pg_store.load(cid, tenant="t")
        assert [(c.id, c.status.value) for c in loaded.tool_calls] == [
            ("w", "complete"),
            ("t", "interrupted"),
        ]
        assert [m.seq for m in loaded.messages] == [1, 2, 3, 4]

    loop.run_until_complete(turns())
    assert len(sent) == 2  # one statement per append
    assert all(s.lstrip().startswith("WITH") for s in sent)


def test_only_the_designed_refusals_fall_back(
    pg_store: ConversationStore, loop: asyncio.AbstractEventLoop
) -> None:
    """A duplicate call id is declined (the general path reports it); a broken statement raises.

    Before, every server refusal meant "take the general path": a statement a migration broke
    would have sent every append the slow way, silently.
    """

    async def run() -> None:
        cid = (await pg_store.create_conversation(tenant="t")).id
        call = ToolCallPart(id="dup", name="lookup", arguments={})
        await pg_store.append(cid, Message.assistant(call), tenant="t")
        declined: list[Any] = []
        real = _one_statement.append_in_one_statement

        async def watched(backend: Any, plan: Any) -> Any:
            declined.append(stored := await real(backend, plan))
            return stored

        with (
            mock.patch.object(_one_statement, "append_in_one_statement", watched),
            pytest.raises(ToolCallConflictError),
        ):
            await pg_store.append(cid, Message.assistant(call), tenant="t")
        assert declined == [None]  # the unique violation (23505) was declined, not raised

        broken = _one_statement.SQL.replace("RETURNING", "RETURNING no_such_column,", 1)
        assert broken != _one_statement.SQL
        with (
            mock.patch.object(_one_statement, "SQL", broken),
            pytest.raises(DatabaseError, match="no_such_column"),
        ):
            await pg_store.append(cid, Message.user("still here?"), tenant="t")
        assert [m.seq for m in (await pg_store.load(cid, tenant="t")).messages] == [1]

    loop.run_until_complete(run())
