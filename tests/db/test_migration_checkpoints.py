"""Revision 0003 (LangGraph checkpoint tables) on a populated database of revision 0002.

A store written at 0002 upgrades in place with its conversations intact and can hold
checkpoints at once; the downgrade drops only the checkpoint tables; upgrading again leaves
no drift between the models and the migrations.
"""

from __future__ import annotations

import uuid

from convstore import ConversationStore, Message
from convstore.db.migrations import downgrade_connection, upgrade_connection
from convstore.store.checkpoints import ChannelValue
from tests.db.test_migrations import _drift, _run, _tables

CHECKPOINT_TABLES = {"checkpoints", "checkpoint_values", "checkpoint_writes"}


async def _put_checkpoint(store: ConversationStore, cid: str) -> None:
    await store.checkpoints.put(
        cid,
        checkpoint_ns="",
        checkpoint_id="1f0c0000-0000-6000-8000-000000000001",
        parent_checkpoint_id=None,
        checkpoint_type="msgpack",
        checkpoint=b"\x81\xa1v\x04",
        channel_versions={"topic": "1"},
        metadata={"source": "input", "step": -1},
        values=[ChannelValue("topic", "1", "msgpack", b"\xa5hello")],
    )


async def test_upgrade_from_populated_0002(empty_url: str) -> None:
    await _run(empty_url, lambda conn: upgrade_connection(conn, "0002"))
    assert not CHECKPOINT_TABLES & await _run(empty_url, _tables)  # type: ignore[operator]
    # Rows as revision 0002 holds them, written through its own schema.
    await _run(
        empty_url,
        lambda conn: conn.exec_driver_sql(
            "INSERT INTO conversations (id, title, last_seq, created_at, updated_at, head_seq, "
            "revision, branched) VALUES ('thread-1', 'kept', 1, '2026-11-25 10:00:00.000000', "
            "'2026-11-25 10:00:00.000000', 1, '1', false)"
        ),
    )
    await _run(
        empty_url,
        lambda conn: conn.exec_driver_sql(
            "INSERT INTO messages (conversation_id, seq, role, created_at, parts) VALUES "
            "('thread-1', 1, 'user', '2026-11-25 10:00:00.000000', "
            '\'[{"kind":"text","text":"hello"}]\')'
        ),
    )
    await _run(empty_url, upgrade_connection)
    assert await _run(empty_url, _tables) >= CHECKPOINT_TABLES  # type: ignore[operator]
    assert await _run(empty_url, _drift) == []
    async with ConversationStore(empty_url, blobs=f"memory://{uuid.uuid4().hex}") as store:
        loaded = await store.load("thread-1")
        assert [m.text for m in loaded.messages] == ["hello"]
        await _put_checkpoint(store, "thread-1")
        record = await store.checkpoints.get("thread-1", checkpoint_ns="")
        assert record is not None
        assert record.values == [ChannelValue("topic", "1", "msgpack", b"\xa5hello")]

    await _run(empty_url, lambda conn: downgrade_connection(conn, "0002"))
    assert not CHECKPOINT_TABLES & await _run(empty_url, _tables)  # type: ignore[operator]
    await _run(empty_url, upgrade_connection)
    assert await _run(empty_url, _drift) == []
    async with ConversationStore(empty_url, blobs=f"memory://{uuid.uuid4().hex}") as store:
        assert [m.text for m in (await store.load("thread-1")).messages] == ["hello"]
        assert await store.checkpoints.get("thread-1", checkpoint_ns="") is None
        await store.append("thread-1", Message.user("still writable"))
