"""Many writers at once: nothing lost, doubled or reordered, and no error reaches a caller.

The workload (see `tests.reliability.workload`): 30 writers append 25 recognisable batches
each to one shared conversation while 40 more append 25 each to conversations of their own;
one-message batches leave a call pending that the writer completes at once, in a second
transaction. Afterwards every conversation is audited: sequence numbers exactly ``1..last_seq``,
every batch whole and contiguous and stored once, each writer's batches in the order it wrote
them, every call's lifecycle matching the results stored, and every sequence number the store
returned to a writer holding that writer's message. While the writers run, a reader audits
snapshots of the shared conversation: a load never sees half an append.

Run three ways: tasks sharing one store (SQLite and PostgreSQL), four stores on one SQLite
file in one process (their writer connections contend for SQLite's lock), and four spawned
processes with a store each (SQLite: racing to create a new database file; PostgreSQL).

SQLite runs with ``synchronous=NORMAL``: WAL-safe against crashes, and it keeps the test fast;
locking and retries, which are what is tested here, are the same as with ``FULL``.

Then races on one thing: completions of one call, retries of one append with one idempotency
key, and workers migrating one empty PostgreSQL database (from several processes, and from
several stores in one process). The last two found bugs, fixed since (docs/reliability.md).
`test_the_audit_catches_damage` shows the audit fails on each kind of damage it looks for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    Conversation,
    ConversationStore,
    JsonOutput,
    Message,
    Role,
    ToolCallConflictError,
    ToolCallPart,
    ToolCallStatus,
    ToolResultPart,
)
from tests.reliability.workers import WorkerPlan, run_worker
from tests.reliability.workload import (
    AuditError,
    Written,
    audit,
    audit_stored,
    check_reported,
    write_stream,
)
from tests.support.postgres import PostgresCluster

SHARED_WRITERS = 30
OWN_WRITERS = 40
APPENDS = 25
PROCESSES = 4
READER_SHARE = 0.25
"""At most this share of the time goes to the reader's snapshot audits (full loads)."""
DEADLINE = 180.0
"""Seconds any one run of the workload may take before the test fails (it takes a few)."""


@dataclass(frozen=True)
class Layout:
    """Which writer writes to which conversation."""

    tenant: str
    shared: str
    own: dict[str, str]
    """Own-conversation writer -> its conversation id."""

    @classmethod
    def new(cls) -> Layout:
        run = uuid.uuid4().hex[:10]
        own = {f"o{i:02d}": f"own-{run}-{i:02d}" for i in range(OWN_WRITERS)}
        return cls(tenant=f"concurrency-{run}", shared=f"shared-{run}", own=own)

    @property
    def shared_writers(self) -> list[str]:
        return [f"s{i:02d}" for i in range(SHARED_WRITERS)]

    @property
    def writers(self) -> list[tuple[str, str]]:
        """(writer, conversation id), shared and own writers interleaved."""
        shared = [(w, self.shared) for w in self.shared_writers]
        own = list(self.own.items())
        mixed = [pair for duo in zip(shared, own, strict=False) for pair in duo]
        return mixed + own[len(shared) :]

    async def create(self, store: ConversationStore) -> None:
        for cid in (self.shared, *self.own.values()):
            await store.create_conversation(id=cid, tenant=self.tenant)


async def verify(
    store: ConversationStore,
    layout: Layout,
    written: dict[str, list[Written]],
    *,
    label: str,
    snapshots: int | None = None,
) -> None:
    """Audit every conversation of the layout, and what each writer was told; print figures."""
    shared = await audit_stored(
        store,
        layout.shared,
        tenant=layout.tenant,
        expect=dict.fromkeys(layout.shared_writers, APPENDS),
    )
    for writer in layout.shared_writers:
        check_reported(shared, writer, written[writer])
    messages = shared.messages
    for writer, cid in layout.own.items():
        own = await audit_stored(store, cid, tenant=layout.tenant, expect={writer: APPENDS})
        check_reported(own, writer, written[writer])
        messages += own.messages
    completions = sum(x.completion_seq is not None for w in written.values() for x in w)
    assert completions > 0  # some batches were completed in a second transaction
    assert shared.messages > SHARED_WRITERS * APPENDS
    mid_run = "" if snapshots is None else f"; {snapshots} snapshots audited mid-run"
    print(
        f"{label}: {len(written)} writers x {APPENDS} appends + {completions} completions, "
        f"0 errors; {messages} messages audited ({shared.messages} in the shared "
        f"conversation), 0 lost/doubled/reordered{mid_run}"
    )


async def run_writers(
    stores: Sequence[ConversationStore], layout: Layout
) -> tuple[dict[str, list[Written]], int]:
    """Every writer as a task (writer ``i`` on ``stores[i % len(stores)]``), while a reader
    audits snapshots of the shared conversation; what each writer was told, and how many
    snapshots were audited. Any error fails the test with every error listed."""
    done = asyncio.Event()
    snapshots = 0

    async def reader() -> None:
        nonlocal snapshots
        while not done.is_set():
            started = time.perf_counter()
            audit(await stores[-1].load(layout.shared), last_seq=None)
            snapshots += 1
            pause = (time.perf_counter() - started) * (1 / READER_SHARE - 1)
            try:
                await asyncio.wait_for(done.wait(), timeout=pause)
            except TimeoutError:
                continue

    async def writers() -> list[list[Written] | BaseException]:
        try:
            return await asyncio.gather(
                *(
                    write_stream(stores[i % len(stores)], cid, writer, APPENDS)
                    for i, (writer, cid) in enumerate(layout.writers)
                ),
                return_exceptions=True,
            )
        finally:
            done.set()

    async with asyncio.timeout(DEADLINE):
        outcomes, _ = await asyncio.gather(writers(), reader())
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert errors == [], f"{len(errors)} writers failed: {errors!r}"
    written = {
        writer: outcome
        for (writer, _), outcome in zip(layout.writers, outcomes, strict=True)
        if not isinstance(outcome, BaseException)
    }
    return written, snapshots


async def test_tasks_sharing_one_store(db_url: str) -> None:
    layout = Layout.new()
    async with ConversationStore(
        db_url, blobs="memory://concurrency", auto_migrate=True, sqlite_synchronous="normal"
    ) as store:
        await layout.create(store)
        written, snapshots = await run_writers([store], layout)
        await verify(store, layout, written, label="one store", snapshots=snapshots)
    assert snapshots > 0


async def test_stores_racing_to_create_one_sqlite_file(tmp_path: Path) -> None:
    """Switching a new file to WAL takes a lock SQLite refuses at once, busy handler or not,
    while another connection holds it: opening retries, and nothing leaks when it fails."""
    for round_ in range(20):
        url = f"sqlite+aiosqlite:///{tmp_path / f'race-{round_}.db'}"
        stores = [ConversationStore(url, blobs="memory://race") for _ in range(8)]
        try:
            await asyncio.gather(*(store.open() for store in stores))
            conv = await stores[-1].create_conversation()
            assert (await stores[0].load(conv.id)).id == conv.id
        finally:
            for store in stores:
                await store.close()


async def test_several_stores_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    layout = Layout.new()
    stores = [
        ConversationStore(url, blobs="memory://concurrency", sqlite_synchronous="normal")
        for _ in range(4)
    ]
    try:
        await asyncio.gather(*(store.open() for store in stores))  # racing to create the file
        await layout.create(stores[0])
        written, snapshots = await run_writers(stores, layout)
        await verify(stores[1], layout, written, label="4 stores", snapshots=snapshots)
    finally:
        for store in stores:
            await store.close()
    assert snapshots > 0


def _plans(url: str, layout: Layout) -> list[WorkerPlan]:
    writers: list[list[tuple[str, str]]] = [[] for _ in range(PROCESSES)]
    for i, pair in enumerate(layout.writers):
        writers[i % PROCESSES].append(pair)
    return [
        WorkerPlan(
            index=i,
            url=url,
            tenant=layout.tenant,
            create=(
                *((layout.shared,) if i == 0 else ()),
                *(cid for _, cid in writers[i] if cid != layout.shared),
            ),
            writers=tuple(writers[i]),
            appends=APPENDS,
        )
        for i in range(PROCESSES)
    ]


async def _run_processes(plans: list[WorkerPlan]) -> list[dict[str, Any]]:
    context = multiprocessing.get_context("spawn")
    barriers = tuple(context.Barrier(len(plans)) for _ in range(3))
    results = context.Queue()
    processes = [
        context.Process(target=run_worker, args=(plan, barriers, results), daemon=True)
        for plan in plans
    ]
    try:
        for process in processes:
            process.start()
        outcomes = [await asyncio.to_thread(results.get, True, DEADLINE) for _ in processes]
        for process in processes:
            await asyncio.to_thread(process.join, 30)
            assert process.exitcode == 0
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join(10)
            process.close()
        results.close()
        results.join_thread()
    return outcomes


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def process_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """SQLite: a file that does not exist yet (the workers race to create it)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_store_url")
        return url
    return f"sqlite+aiosqlite:///{tmp_path / 'new.db'}"


@pytest.mark.slow
async def test_worker_processes(process_db_url: str) -> None:
    layout = Layout.new()
    outcomes = await _run_processes(_plans(process_db_url, layout))
    errors = [error for outcome in outcomes for error in outcome["errors"]]
    assert errors == [], "\n".join(errors)
    written = {
        writer: [Written(k, tuple(seqs), completion) for k, seqs, completion in items]
        for outcome in outcomes
        for writer, items in outcome["written"].items()
    }
    assert sorted(written) == sorted(w for w, _ in layout.writers)
    async with ConversationStore(process_db_url, blobs="memory://concurrency") as store:
        await verify(store, layout, written, label=f"{PROCESSES} processes")


def _renumbered(conversation: Conversation, messages: list[Message]) -> Conversation:
    """``messages`` as the whole conversation, seqs renumbered 1..n (calls' seqs remapped)."""
    remap = {m.seq: i for i, m in enumerate(messages, 1)}
    calls = [
        c.model_copy(update={"seq": remap.get(c.seq, c.seq), "result_seq": remap.get(c.result_seq)})
        for c in conversation.tool_calls
    ]
    renumbered = [m.model_copy(update={"seq": i}) for i, m in enumerate(messages, 1)]
    return conversation.model_copy(update={"messages": renumbered, "tool_calls": calls})


def _drop_mid_batch(c: Conversation) -> Conversation:
    victim = next(m for m in c.messages if m.text.endswith("2/3"))
    return _renumbered(c, [m for m in c.messages if m is not victim])


def _double_a_message(c: Conversation) -> Conversation:
    return _renumbered(c, [*c.messages, c.messages[-1]])


def _swap_two_batches_of_a_writer(c: Conversation) -> Conversation:
    def batch_of(m: Message) -> tuple[str, str]:
        if m.role is Role.TOOL:
            part = m.parts[0]
            assert isinstance(part, ToolResultPart)
            writer, _, k = part.call_id.removeprefix("call-").rpartition("-")
            return writer, k
        writer, k, _ = m.text.split("|")
        return writer, k

    first = [m for m in c.messages if batch_of(m) == ("s00", "0")]
    second = [m for m in c.messages if batch_of(m) == ("s00", "1")]
    rest = [m for m in c.messages if m not in first and m not in second]
    return _renumbered(c, [*second, *first, *rest])


def _result_without_lifecycle(c: Conversation) -> Conversation:
    calls = [c.tool_calls[0].model_copy(update={"status": ToolCallStatus.PENDING})]
    return c.model_copy(update={"tool_calls": calls + c.tool_calls[1:]})


def _lost_completion(c: Conversation) -> Conversation:
    victim = next(
        m for m in c.messages if m.role is Role.TOOL and '"complete"' in m.model_dump_json()
    )
    return _renumbered(c, [m for m in c.messages if m is not victim])


@pytest.mark.parametrize(
    "damage",
    [
        _drop_mid_batch,
        _double_a_message,
        _swap_two_batches_of_a_writer,
        _result_without_lifecycle,
        _lost_completion,
    ],
)
async def test_the_audit_catches_damage(damage: Callable[[Conversation], Conversation]) -> None:
    async with ConversationStore("sqlite+aiosqlite://", blobs="memory://audit") as store:
        conv = await store.create_conversation()
        for writer in ("s00", "s01"):
            await write_stream(store, conv.id, writer, 12)
        intact = await store.load(conv.id)
    expect = {"s00": 12, "s01": 12}
    audit(intact, last_seq=len(intact.messages), expect=expect)
    damaged = damage(intact)
    with pytest.raises(AuditError):
        audit(damaged, last_seq=len(damaged.messages), expect=expect)


@pytest.mark.postgres
@pytest.mark.slow
async def test_workers_migrating_an_empty_postgres_database_at_once(
    pg_cluster: PostgresCluster,
) -> None:
    url = pg_cluster.create_database(f"race_{uuid.uuid4().hex[:12]}")
    layout = Layout.new()
    plans = [
        dataclasses.replace(plan, writers=plan.writers[:1], appends=1, auto_migrate=True)
        for plan in _plans(url, layout)
    ]
    outcomes = await _run_processes(plans)
    errors = [error for outcome in outcomes for error in outcome["errors"]]
    assert errors == [], "\n".join(errors)


@pytest.mark.postgres
async def test_stores_migrating_an_empty_postgres_database_at_once_in_one_process(
    pg_cluster: PostgresCluster,
) -> None:
    """Alembic's context is process-global: stores opened together must take turns, not hang."""
    url = pg_cluster.create_database(f"race_{uuid.uuid4().hex[:12]}")
    stores = [ConversationStore(url, blobs="memory://race", auto_migrate=True) for _ in range(4)]
    try:
        async with asyncio.timeout(60):
            await asyncio.gather(*(store.open() for store in stores))
        ids = {(await store.create_conversation()).id for store in stores}
        assert {c.id for c in await stores[0].list_conversations()} == ids
    finally:
        await asyncio.gather(*(store.close() for store in stores))


RACERS = 8


async def test_racing_completions_of_one_call(db_url: str) -> None:
    async with ConversationStore(db_url, blobs="memory://race", auto_migrate=True) as store:
        conv = await store.create_conversation()
        calls = [ToolCallPart(id=i, name="f") for i in ("same", "different")]
        await store.append(conv.id, Message.assistant(*calls))
        same = await asyncio.gather(
            *(store.complete_tool_call(conv.id, "same", JsonOutput(value=1)) for _ in range(RACERS))
        )
        assert {c.result_seq for c in same} == {2}  # one result stored, every caller told so
        different = await asyncio.gather(
            *(
                store.complete_tool_call(conv.id, "different", JsonOutput(value=i))
                for i in range(RACERS)
            ),
            return_exceptions=True,
        )
        winners = [c for c in different if not isinstance(c, BaseException)]
        losers = [c for c in different if isinstance(c, BaseException)]
        assert len(winners) == 1 and all(isinstance(e, ToolCallConflictError) for e in losers)
        loaded = await store.load(conv.id)
        assert [m.seq for m in loaded.messages] == [1, 2, 3]
        assert loaded.get_tool_call("different").output == winners[0].output


async def test_racing_retries_with_one_idempotency_key(db_url: str) -> None:
    """Retries of one append racing each other (a client resubmitting on timeout): every one
    is told the same stored messages, and they are stored once.

    On PostgreSQL the racers are lined up deterministically: a second connection holds the
    conversation's row lock until all of them are waiting for it.
    """
    postgres = db_url.startswith("postgresql")
    async with ConversationStore(db_url, blobs="memory://race", auto_migrate=True) as store:
        conv = await store.create_conversation()
        batch = [Message.user("once"), Message.assistant("only once")]
        retries = [store.append(conv.id, batch, idempotency_key="retry") for _ in range(RACERS)]
        if postgres:
            outcomes = await _lined_up_on_row_lock(db_url, conv.id, retries)
        else:
            outcomes = await asyncio.gather(*retries, return_exceptions=True)
        seqs = [o if isinstance(o, BaseException) else [m.seq for m in o] for o in outcomes]
        assert seqs == [[1, 2]] * RACERS
        assert len((await store.load(conv.id)).messages) == 2


async def _lined_up_on_row_lock(
    url: str, conversation_id: str, appends: list[Coroutine[Any, Any, list[Message]]]
) -> list[Any]:
    """Run ``appends`` while another connection holds the conversation's row lock, and
    release it once every one of them is waiting for it."""
    import asyncpg
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    # The observer polls outside any transaction: inside one, pg_stat_activity is a snapshot.
    holder, observer = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    try:
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute(
            "SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE", conversation_id
        )
        tasks = [asyncio.ensure_future(append) for append in appends]
        deadline = time.monotonic() + 30
        while True:
            waiting = await observer.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 "
                "AND wait_event_type = 'Lock' AND query LIKE '%conversations%'",
                parsed.database,
            )
            if waiting == len(tasks) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        if waiting != len(tasks):  # the race was never set up: report that, not a wrong result
            raise RuntimeError(f"only {waiting} of {len(tasks)} racers waited for the lock")
        await transaction.rollback()
        return await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await holder.close()
        await observer.close()
