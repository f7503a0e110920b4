"""Injected faults: each surfaces as a typed `ConvstoreError` (or the documented placeholder),
leaves nothing half-written, and the store keeps working afterwards.

- the blob backend fails part-way through an append's (or a completion's) uploads;
- SQLite fails mid-transaction: a hard error (``disk I/O error``) after some rows were
  written, a transient ``database is locked`` that the bounded retry absorbs, one that outlasts
  every retry, and a write lock really held by another connection for a while;
- PostgreSQL loses the connection mid-transaction: the append is parked on a row lock after
  it inserted its messages and blob refs, and its server backend is terminated
  (``pg_terminate_backend``);
- an append is cancelled while in flight (both databases);
- a referenced blob is missing or corrupted when a conversation is rendered.

After every fault the conversation is compared with what was there before, and fsck runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    BlobStorageError,
    ContentOutput,
    ConversationStore,
    ConvstoreError,
    DatabaseError,
    FilePart,
    JsonOutput,
    Message,
    TextPart,
    ToolCallPart,
    ToolCallStatus,
    fsck,
)
from convstore.db.sqlite import tx as sqlite_tx
from tests.support.postgres import PostgresCluster
from tests.support.storage import LocalStorage

PNG_A = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"a").digest() * 1024  # 32 KiB
PNG_B = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"b").digest() * 1024
PNG_C = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"c").digest() * 1024
PNG_D = b"\x89PNG\r\n\x1a\n" + hashlib.sha256(b"d").digest() * 1024
LOCK_WAIT = 10.0
"""Seconds the PostgreSQL test waits for the append to reach the lock (it takes milliseconds)."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of this test's own: fsck looks at every blob reference in it."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"faults_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'faults.db'}"


@pytest.fixture
async def store(db_url: str, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    async with ConversationStore(db_url, blobs=str(tmp_path / "blobs"), auto_migrate=True) as s:
        yield s


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[ConversationStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'faults.db'}"
    async with ConversationStore(url, blobs=str(tmp_path / "blobs")) as s:
        yield s


def calling(call_id: str) -> Message:
    return Message.assistant(ToolCallPart(id=call_id, name="render_chart", arguments={"n": 1}))


def image_result(call_id: str) -> Message:
    output = ContentOutput(parts=[TextPart(text="chart"), FilePart.from_bytes(PNG_C)])
    return Message.tool_result(call_id, output)


async def snapshot(store: ConversationStore, cid: str) -> tuple[Any, int]:
    """The conversation as stored (messages and calls) and its ``last_seq`` counter."""
    conversation = await store.load(cid)
    (summary,) = [s for s in await store.list_conversations(limit=1000) if s.id == cid]
    return conversation.model_dump(exclude={"updated_at"}), summary.message_count


async def assert_healthy(store: ConversationStore) -> None:
    report = await fsck(store)
    assert report.ok, (report.missing, report.corrupted)


async def started(cid: str, store: ConversationStore) -> tuple[Any, int]:
    """Seqs 1-2: a user message with a file, an assistant message making a pending call ``c1``;
    the snapshot of that."""
    await store.append(cid, [Message.user("draw it", FilePart.from_bytes(PNG_A)), calling("c1")])
    return await snapshot(store, cid)


async def test_blob_backend_failing_mid_append_writes_no_rows(
    store: ConversationStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = await store.create_conversation()
    before = await started(conv.id, store)
    raw = LocalStorage(tmp_path / "blobs")
    blobs_before = raw.keys()
    # Room for one more 32 KiB file, not two: one upload succeeds, the other fails part-way.
    raw.fail_writes_after(monkeypatch, len(PNG_B) + 1024)
    batch = [image_result("c1"), Message.user("and this", FilePart.from_bytes(PNG_B))]
    with pytest.raises(BlobStorageError):
        await store.append(conv.id, batch)
    with pytest.raises(BlobStorageError):  # a completion stores its files first, too
        await store.complete_tool_call(
            conv.id, "c1", ContentOutput(parts=[FilePart.from_bytes(PNG_D)])
        )
    monkeypatch.undo()

    assert await snapshot(store, conv.id) == before
    assert (await store.load(conv.id)).get_tool_call("c1").status is ToolCallStatus.PENDING
    assert not {k for k in raw.keys() - blobs_before if k.startswith("tmp/")}
    await assert_healthy(store)

    stored = await store.append(conv.id, batch)  # the store keeps working
    assert [m.seq for m in stored] == [3, 4]
    call = (await store.load(conv.id)).get_tool_call("c1")
    assert (call.status, call.result_seq) == (ToolCallStatus.COMPLETE, 3)
    await assert_healthy(store)


class _FaultyConnection:
    """A sqlite3 connection whose statements matching a prefix raise, like a failing driver."""

    def __init__(self, raw: sqlite3.Connection, injector: Injector) -> None:
        self._raw = raw
        self._injector = injector

    def execute(self, sql: str, *args: Any) -> Any:
        self._injector.check(sql)
        return self._raw.execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        self._injector.check(sql)
        return self._raw.executemany(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class Injector:
    """Makes the SQLite writer's statements starting with ``prefix`` raise ``error``.

    The backend runs each write transaction as one function of the raw connection in the
    driver thread (``in_transaction``); the connection it gets is wrapped, so the error comes
    from inside the open transaction, after the statements before it succeeded.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, prefix: str, error: str) -> None:
        self.prefix = prefix
        self.error = error
        self.times: int | None = None
        self.raised = 0
        self.seen: list[str] = []
        original = sqlite_tx.in_transaction

        def in_transaction(raw: sqlite3.Connection, *args: Any) -> Any:
            return original(_FaultyConnection(raw, self), *args)  # type: ignore[arg-type]

        monkeypatch.setattr(sqlite_tx, "in_transaction", in_transaction)

    def check(self, sql: str) -> None:
        self.seen.append(sql)
        if sql.startswith(self.prefix) and (self.times is None or self.raised < self.times):
            self.raised += 1
            raise sqlite3.OperationalError(self.error)


async def test_sqlite_error_mid_transaction_rolls_back_everything(
    sqlite_store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    conv = await store.create_conversation()
    before = await started(conv.id, store)
    # The conversation row is locked and the messages inserted before the blob refs fail.
    inject = Injector(monkeypatch, "INSERT INTO blob_refs", "disk I/O error")
    with pytest.raises(DatabaseError, match="disk I/O error"):
        await store.append(conv.id, [image_result("c1"), Message.user("after")])
    assert inject.raised == 1  # not transient: not retried
    # It failed with the conversation bumped and messages inserted in the transaction.
    assert any(q.startswith("INSERT INTO messages") for q in inject.seen)
    monkeypatch.undo()
    # The result's rows are written before its lifecycle update fails.
    Injector(monkeypatch, "UPDATE tool_calls SET status=?, result_kind=?", "disk I/O error")
    with pytest.raises(DatabaseError):
        await store.complete_tool_call(conv.id, "c1", JsonOutput(value="done"))
    monkeypatch.undo()

    assert await snapshot(store, conv.id) == before
    await assert_healthy(store)
    call = await store.complete_tool_call(conv.id, "c1", JsonOutput(value="done"))
    assert (call.status, call.result_seq) == (ToolCallStatus.COMPLETE, 3)


async def test_sqlite_transient_lock_errors_are_retried_whole(
    sqlite_store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    conv = await store.create_conversation()
    await started(conv.id, store)
    inject = Injector(monkeypatch, "INSERT INTO blob_refs", "database is locked")
    inject.times = 2
    stored = await store.append(conv.id, [image_result("c1"), Message.user("after")])
    assert inject.raised == 2
    assert [m.seq for m in stored] == [3, 4]  # retried whole: no sequence numbers skipped
    loaded = await store.load(conv.id)
    assert [m.seq for m in loaded.messages] == [1, 2, 3, 4]
    assert loaded.get_tool_call("c1").result_seq == 3


async def test_sqlite_lock_outlasting_every_retry_is_a_database_error(
    sqlite_store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sqlite_store
    conv = await store.create_conversation()
    before = await started(conv.id, store)
    inject = Injector(monkeypatch, "INSERT INTO messages", "database is locked")
    with pytest.raises(DatabaseError, match="locked"):
        await store.append(conv.id, [image_result("c1")])
    assert 1 < inject.raised <= 10  # retried, a bounded number of times (8 today)
    monkeypatch.undo()
    assert await snapshot(store, conv.id) == before
    await store.append(conv.id, [image_result("c1")])


async def test_sqlite_write_lock_held_elsewhere_is_waited_out(tmp_path: Path) -> None:
    database = tmp_path / "faults.db"
    async with ConversationStore(f"sqlite+aiosqlite:///{database}", blobs="memory://held") as store:
        conv = await store.create_conversation()
        holder = sqlite3.connect(database, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another process's writer, say
            append = asyncio.create_task(store.append(conv.id, Message.user("waits")))
            done, _ = await asyncio.wait({append}, timeout=0.3)
            assert not done  # waiting for the lock (busy_timeout), not failed
            holder.execute("COMMIT")
            (stored,) = await asyncio.wait_for(append, timeout=30)
        finally:
            holder.close()
        assert stored.seq == 1


async def _backend_waiting_on_lock(observer: Any, database: str, query: str) -> int:
    deadline = time.monotonic() + LOCK_WAIT
    while time.monotonic() < deadline:
        pid = await observer.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' "
            "AND query LIKE $2",
            database,
            query,
        )
        if pid is not None:
            return int(pid)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no backend blocked on {query!r} within {LOCK_WAIT} s")


def _fresh_database(cluster: PostgresCluster) -> tuple[str, str, str]:
    """A new database: its name, its store URL and its asyncpg DSN."""
    database = f"faults_{uuid.uuid4().hex[:12]}"
    url = cluster.create_database(database)
    return database, url, f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/{database}"


@pytest.mark.postgres
async def test_postgres_connection_terminated_mid_transaction(
    pg_cluster: PostgresCluster, tmp_path: Path
) -> None:
    import asyncpg

    database, url, dsn = _fresh_database(pg_cluster)
    async with ConversationStore(url, blobs=str(tmp_path / "blobs"), auto_migrate=True) as store:
        conv = await store.create_conversation()
        before = await started(conv.id, store)
        batch = [image_result("c1"), Message.user("after", FilePart.from_bytes(PNG_B))]
        holder, observer = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
        try:
            # Lock the call's row: the append bumps the conversation, inserts its attachments,
            # messages and blob refs, then parks on this lock when it completes the call.
            holder_tx = holder.transaction()
            await holder_tx.start()
            await holder.execute(
                "SELECT 1 FROM tool_calls WHERE conversation_id = $1 AND id = 'c1' FOR UPDATE",
                conv.id,
            )
            append = asyncio.create_task(store.append(conv.id, batch, idempotency_key="k1"))
            pid = await _backend_waiting_on_lock(observer, database, "UPDATE tool_calls%")
            inserted = await observer.fetchval(
                "SELECT count(*) FROM pg_locks WHERE pid = $1 AND mode = 'RowExclusiveLock' "
                "AND relation = 'blob_refs'::regclass",
                pid,
            )
            assert inserted == 1  # the transaction had written blob refs when it was cut off
            assert await observer.fetchval("SELECT pg_terminate_backend($1)", pid)
            with pytest.raises(DatabaseError) as caught:
                await asyncio.wait_for(append, timeout=30)
            await holder_tx.rollback()
        finally:
            await holder.close()
            await observer.close()
        assert isinstance(caught.value, ConvstoreError)

        assert await snapshot(store, conv.id) == before
        await assert_healthy(store)
        # The store keeps working, and a retry with the same key stores the batch once.
        stored = await store.append(conv.id, batch, idempotency_key="k1")
        again = await store.append(conv.id, batch, idempotency_key="k1")
        assert [m.seq for m in stored] == [m.seq for m in again] == [3, 4]
        loaded = await store.load(conv.id)
        assert len(loaded.messages) == 4
        assert loaded.get_tool_call("c1").status is ToolCallStatus.COMPLETE
        await assert_healthy(store)


@pytest.mark.postgres
async def test_postgres_pooled_connections_closed_by_the_server(
    pg_cluster: PostgresCluster, tmp_path: Path
) -> None:
    """No pre-ping: connections the server ended while pooled are replaced, not failed with."""
    import asyncpg

    database, url, dsn = _fresh_database(pg_cluster)
    async with ConversationStore(url, blobs=str(tmp_path / "blobs"), auto_migrate=True) as store:
        conv = await store.create_conversation()
        await started(conv.id, store)
        # Several pooled connections, then the server ends every one of them.
        await asyncio.gather(*(store.load(conv.id) for _ in range(4)))
        observer = await asyncpg.connect(dsn)
        try:
            ended = await observer.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = $1 AND pid <> pg_backend_pid()",
                database,
            )
        finally:
            await observer.close()
        assert ended >= 2
        loaded = await store.load(conv.id)  # a read
        stored = await store.append(conv.id, Message.user("still here"))  # the one statement
        await store.update_conversation(conv.id, title="renamed")  # a general write
        again = await store.load(conv.id)
        assert [m.seq for m in again.messages] == [*(m.seq for m in loaded.messages), stored[0].seq]
        assert again.title == "renamed"
        await assert_healthy(store)


async def test_sqlite_cancelled_append_is_whole_or_absent(tmp_path: Path) -> None:
    database = tmp_path / "faults.db"
    async with ConversationStore(f"sqlite+aiosqlite:///{database}", blobs="memory://c") as store:
        conv = await store.create_conversation()
        await started(conv.id, store)
        batch = [image_result("c1"), Message.user("after")]
        holder = sqlite3.connect(database, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            append = asyncio.create_task(store.append(conv.id, batch, idempotency_key="k"))
            done, _ = await asyncio.wait({append}, timeout=0.3)
            assert not done  # in flight: waiting for the lock inside the driver thread
            append.cancel()
            with pytest.raises(asyncio.CancelledError):
                await append
            holder.execute("COMMIT")
        finally:
            holder.close()
        # The transaction was already running in the driver thread: the cancelled append may
        # still commit (today it does). Either way it is whole, and a retry with the same
        # idempotency key leaves exactly one copy.
        stored = await store.append(conv.id, batch, idempotency_key="k")
        loaded = await store.load(conv.id)
        assert [m.seq for m in stored] == [3, 4] and len(loaded.messages) == 4
        assert loaded.get_tool_call("c1").result_seq == 3


@pytest.mark.postgres
async def test_postgres_cancelled_append_rolls_back(
    pg_cluster: PostgresCluster, tmp_path: Path
) -> None:
    import asyncpg

    database, url, dsn = _fresh_database(pg_cluster)
    async with ConversationStore(url, blobs=str(tmp_path / "blobs"), auto_migrate=True) as store:
        conv = await store.create_conversation()
        before = await started(conv.id, store)
        batch = [image_result("c1"), Message.user("after")]
        holder, observer = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
        try:
            holder_tx = holder.transaction()
            await holder_tx.start()
            await holder.execute(
                "SELECT 1 FROM tool_calls WHERE conversation_id = $1 AND id = 'c1' FOR UPDATE",
                conv.id,
            )
            append = asyncio.create_task(store.append(conv.id, batch, idempotency_key="k"))
            await _backend_waiting_on_lock(observer, database, "UPDATE tool_calls%")
            append.cancel()
            with pytest.raises(asyncio.CancelledError):
                await append
            await holder_tx.rollback()
        finally:
            await holder.close()
            await observer.close()
        assert await snapshot(store, conv.id) == before
        stored = await store.append(conv.id, batch, idempotency_key="k")
        assert [m.seq for m in stored] == [3, 4]
        assert len((await store.load(conv.id)).messages) == 4


async def test_missing_and_corrupted_blobs_at_render_time(
    store: ConversationStore, tmp_path: Path
) -> None:
    conv = await store.create_conversation()
    await started(conv.id, store)
    await store.append(conv.id, image_result("c1"))
    before = await snapshot(store, conv.id)
    healthy = await store.render(conv.id, "anthropic")
    assert [n.placement for n in healthy.diagnostics.media] == ["user", "native"]
    raw = LocalStorage(tmp_path / "blobs")
    sha_a, sha_c = hashlib.sha256(PNG_A).hexdigest(), hashlib.sha256(PNG_C).hexdigest()

    await store.blob_store.delete(sha_a)
    with pytest.raises(AttachmentNotFoundError):
        await store.render(conv.id, "anthropic")
    raw.overwrite(store.blob_store.key(sha_c), PNG_C[:-1] + b"\x00")
    for _ in range(2):  # whichever blob the concurrent fetch reaches first
        with pytest.raises((AttachmentNotFoundError, AttachmentCorruptedError)):
            await store.render(conv.id, "anthropic")
    await store.blob_store.put(PNG_A)  # re-storing the bytes repairs the missing blob
    with pytest.raises(AttachmentCorruptedError):
        await store.render(conv.id, "anthropic")
    await store.blob_store.delete(sha_a)

    rendered = await store.render(conv.id, "anthropic", missing_attachments="placeholder")
    notes = [n for n in rendered.diagnostics.media if n.placement == "text_note"]
    assert len(notes) == 2
    assert {n.reason for n in notes} == {"its bytes were not available to the render"}
    assert json.dumps(rendered.payload).count("is not available]") == 2
    assert await snapshot(store, conv.id) == before  # rendering never writes

    report = await fsck(store)
    assert (report.missing, report.corrupted) == ([sha_a], [sha_c])
    raw.overwrite(store.blob_store.key(sha_c), PNG_C)
    await store.blob_store.put(PNG_A)
    repaired = await store.render(conv.id, "anthropic")
    assert repaired.payload == healthy.payload
