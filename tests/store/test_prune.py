"""Retention: prune deletes what nobody wrote to, in batches, and never what is being written."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import ConversationStore, Message
from convstore.db import schema
from convstore.errors import ConversationNotFoundError, InvalidInputError
from convstore.store.checkpoints import PendingWrite
from convstore.sync import SyncConversationStore


def _tenant() -> str:
    # The PostgreSQL database is shared by the session: every prune here is tenant-scoped.
    return f"prune-{uuid.uuid4().hex[:10]}"


async def _exists(store: ConversationStore, cid: str) -> bool:
    try:
        await store.get_conversation(cid)
    except ConversationNotFoundError:
        return False
    return True


async def test_prune_deletes_only_what_is_older_and_only_of_the_tenant(
    store: ConversationStore,
) -> None:
    tenant, other = _tenant(), _tenant()
    mine = [(await store.create_conversation(tenant=tenant)).id for _ in range(7)]
    theirs = (await store.create_conversation(tenant=other)).id
    for cid in mine:
        await store.append(cid, [Message.user("hello")], tenant=tenant)

    kept = await store.prune(older_than=timedelta(days=30), tenant=tenant)
    assert (kept.deleted, kept.examined) == (0, 0)  # all created within the period

    dry = await store.prune(older_than=timedelta(0), tenant=tenant, dry_run=True)
    assert (dry.deleted, dry.examined, dry.dry_run) == (7, 7, True)
    assert all([await _exists(store, cid) for cid in mine])

    done = await store.prune(older_than=timedelta(0), tenant=tenant)
    assert (done.deleted, done.kept) == (7, 0)
    assert not any([await _exists(store, cid) for cid in mine])
    assert await _exists(store, theirs)

    with pytest.raises(InvalidInputError):
        await store.prune(older_than=timedelta(seconds=-1), tenant=tenant)


async def _age(store: ConversationStore, cids: list[str], days: int) -> None:
    """Make these conversations look created and last written ``days`` ago."""
    then = datetime.now(UTC) - timedelta(days=days)
    engine = create_async_engine(store.url)
    try:
        async with engine.begin() as conn:
            c = schema.conversations.c
            await conn.execute(
                update(schema.conversations)
                .where(c.id.in_(cids))
                .values(created_at=then, updated_at=then)
            )
    finally:
        await engine.dispose()


async def test_a_thread_that_only_checkpoints_is_not_idle(store: ConversationStore) -> None:
    tenant = _tenant()
    idle, graph, pending = [(await store.create_conversation(tenant=tenant)).id for _ in range(3)]
    await _age(store, [idle, graph, pending], days=40)
    await store.checkpoints.put(
        graph,
        checkpoint_ns="",
        checkpoint_id="1ef4f797-8335-6428-8001-8a1503f9b875",
        parent_checkpoint_id=None,
        checkpoint_type="msgpack",
        checkpoint=b"\x84\xa1v\x04",
        channel_versions={},
        metadata={"step": 3},
        tenant=tenant,
    )
    await store.checkpoints.put_writes(
        pending,
        checkpoint_ns="",
        checkpoint_id="1ef4f797-8335-6428-8001-8a1503f9b876",
        writes=[PendingWrite("task-1", 0, "answer", "msgpack", b"\xa2ok")],
        tenant=tenant,
    )

    report = await store.prune(older_than=timedelta(days=30), tenant=tenant)
    assert (report.examined, report.deleted) == (3, 1)
    assert not await _exists(store, idle)
    assert await _exists(store, graph)
    assert await _exists(store, pending)
    assert (await store.get_conversation(graph, tenant=tenant)).updated_at > report.cutoff


async def test_prune_beside_20_writers_loses_no_conversation_written_during_it(
    db_url: str, blobs_url: str
) -> None:
    tenant = _tenant()
    async with ConversationStore(db_url, blobs=blobs_url, auto_migrate=True) as store:
        old = [(await store.create_conversation(tenant=tenant)).id for _ in range(120)]
        for cid in old:
            await store.append(cid, [Message.user("seed")], tenant=tenant)

        pruning = asyncio.Event()
        stop = asyncio.Event()
        first_writes = [asyncio.Event() for _ in range(20)]
        touched: set[str] = set()  # every conversation a write succeeded on, whenever
        during: list[tuple[str, str]] = []  # (conversation, text) of writes begun mid-prune

        async def writer(k: int) -> None:
            rng = random.Random(k)
            # The newer half only, newest most often: the prune reaches them last, so writes
            # and deletes meet; the older half is never written and must go.
            targets = old[: len(old) // 2 - 1 : -1]
            n = 0
            while not stop.is_set():
                began_during = pruning.is_set()
                text = f"writer {k} write {n}"
                n += 1
                try:
                    if rng.random() < 0.2:
                        cid = (await store.create_conversation(tenant=tenant)).id
                    else:
                        cid = targets[min(int(rng.expovariate(1 / 30)), len(targets) - 1)]
                    await store.append(cid, [Message.user(text)], tenant=tenant)
                except ConversationNotFoundError:
                    continue  # deleted before this write: nothing was written
                touched.add(cid)
                if began_during:
                    during.append((cid, text))
                first_writes[k].set()

        tasks = [asyncio.create_task(writer(k)) for k in range(20)]
        try:
            for event in first_writes:  # every writer is running before the prune starts
                await event.wait()
            pruning.set()
            report = await store.prune(older_than=timedelta(0), tenant=tenant, batch=8)
        finally:
            stop.set()
            await asyncio.gather(*tasks)

        # The writers ran throughout, and wrote to conversations the prune was deleting.
        assert during
        assert {cid for cid, _ in during} & set(old)
        # Every conversation written during the prune is there, with what was written.
        for cid, text in during:
            held = [m.text for m in (await store.load(cid, tenant=tenant)).messages]
            assert text in held, (cid, text)
        # And the prune did delete: every old conversation nobody wrote to is gone.
        untouched = old[: len(old) // 2]
        assert not set(untouched) & touched
        assert not any([await _exists(store, cid) for cid in untouched])
        assert report.deleted >= len(untouched)
        assert report.examined >= len(old)


def test_the_blocking_facade_exports_erases_and_prunes(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sync.db'}"
    with SyncConversationStore(url, blobs=str(tmp_path / "blobs")) as store:
        kept = store.create_conversation(tenant="a")
        store.append(kept.id, [Message.user("hi")], tenant="a")
        gone = store.create_conversation(tenant="b")
        assert store.export(tmp_path / "a.zip", tenant="a").conversations == 1
        assert store.erase_tenant("a").messages == 1
        assert store.prune(older_than=timedelta(0), tenant="b").deleted == 1
        with pytest.raises(ConversationNotFoundError):
            store.get_conversation(gone.id)
