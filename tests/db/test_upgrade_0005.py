"""Revision 0005 on a populated database of revision 0004: up, down and up again, no drift.

0005 adds an index and moves ``tool_calls``' foreign key from the message to the
conversation; it changes no row. So a database written by this code and downgraded to 0004 holds
exactly what 0004's code would have written: branches, popped messages, calls in every state,
blob references, a fork. From there each step must keep every row, and the store must load
every conversation as before, pop (deleting the popped message's calls) and delete
conversations at head.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, FilePart, JsonOutput, Message, ToolCallPart
from convstore.db import migrate, search_ddl
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run

PREVIOUS = "0004"
TABLES = ("conversations", "messages", "tool_calls", "blob_refs", "compactions", "attachments")


def _calling(*ids: str) -> Message:
    return Message.assistant(*(ToolCallPart(id=i, name="lookup", arguments={"q": i}) for i in ids))


async def _populate(store: ConversationStore) -> list[str]:
    """Conversations with branches, pops and calls in every state; their ids."""
    conv = await store.create_conversation(title="branchy")
    image = FilePart.from_bytes(b"\x89PNG\r\n\x1a\n" + uuid.uuid4().bytes, media_type="image/png")
    await store.append(conv.id, [Message.user("look", image), _calling("a", "b")])
    await store.append(conv.id, [Message.tool_result("a", 1), Message.user("and b?")])  # 3, 4
    await store.append(conv.id, Message.tool_result("b", "late"), parent_seq=3)  # 5: a branch
    await store.append(conv.id, [_calling("c"), _calling("d")])  # 6, 7
    await store.cancel_tool_calls(conv.id)  # c and d
    await store.append(conv.id, Message.assistant("done"))  # 8
    await store.pop(conv.id)  # 8 goes
    await store.append(conv.id, [Message.user("again"), _calling("e")])  # 9 (parent 7), 10
    await store.compact(conv.id, through_seq=3, summary="looked at a picture")
    fork = await store.fork(conv.id, at_seq=5)
    plain = await store.create_conversation(title="plain")
    await store.append(plain.id, [Message.user("q"), _calling("x"), Message.tool_result("x", 2)])
    return [conv.id, fork.id, plain.id]


def _rows(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    meta = sa.MetaData()
    out = {}
    for name in TABLES:
        table = sa.Table(name, meta, autoload_with=conn)
        keys = list(table.primary_key.columns)
        # The search index's generated columns (PostgreSQL) come and go with revision 0006.
        columns = [c for c in table.columns if search_ddl.include_name(c.name, "column", {})]
        out[name] = [tuple(r) for r in conn.execute(sa.select(*columns).order_by(*keys))]
    return out


def _calls_refer_to(conn: Connection) -> list[tuple[str, tuple[str, ...]]]:
    keys = sa.inspect(conn).get_foreign_keys("tool_calls")
    return sorted((k["referred_table"], tuple(k["constrained_columns"])) for k in keys)


def _message_indexes(conn: Connection) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(conn).get_indexes("messages")}


async def _loads(url: str, blobs: str, cids: list[str]) -> list[dict[str, Any]]:
    async with ConversationStore(url, blobs=blobs) as store:
        return [(await store.load(cid)).model_dump(mode="json") for cid in cids]


async def test_a_populated_0004_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up5-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        cids = await _populate(store)
    loads = await _loads(empty_url, blobs, cids)
    rows = await _run(empty_url, _rows)

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _calls_refer_to) == [("messages", ("conversation_id", "seq"))]
    assert "ix_messages_branch_children" not in await _run(empty_url, _message_indexes)  # type: ignore[operator]

    await migrate(empty_url)
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _calls_refer_to) == [("conversations", ("conversation_id",))]
    assert "ix_messages_branch_children" in await _run(empty_url, _message_indexes)  # type: ignore[operator]
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))
    assert await _loads(empty_url, blobs, cids) == loads

    # At head again: a pop deletes the calls its message made, a delete every call.
    conv, _fork, plain = cids
    async with ConversationStore(empty_url, blobs=blobs) as store:
        popped = await store.pop(conv)
        assert [p.id for p in popped.tool_calls] == ["e"]
        assert "e" not in {c.id for c in (await store.load(conv)).tool_calls}
        done = await store.complete_tool_call(plain, "x", JsonOutput(value=2))
        assert done.status == "complete"
        await store.delete_conversation(plain)

    def leftovers(conn: Connection) -> list[tuple[str, int]]:
        calls = sa.text(
            "SELECT conversation_id, count(*) FROM tool_calls "
            "WHERE conversation_id IN (:conv, :plain) GROUP BY conversation_id"
        )
        return sorted((r[0], r[1]) for r in conn.execute(calls, {"conv": conv, "plain": plain}))

    assert await _run(empty_url, leftovers) == [(conv, 4)]  # a, b, c, d
