"""Every write that inserts messages leaves them findable by the next search (revision 0017).

On PostgreSQL the writes queue what they insert (`convstore.db.search_queue`; the one-statement
append inside its own statement) instead of a trigger doing it; on SQLite the index finds new
rows above its mark. Each test writes a word no other row holds through one write path, with
the background catch-up off, and searches for it: the search's catch-up must index it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from sqlalchemy import text

from convstore import ConversationStore, Message
from convstore.db.search_queue import ranges
from convstore.imports import import_file
from convstore.model import JsonOutput, ToolCallPart
from convstore.store.checkpoints import MessageList


def _word() -> str:
    return f"quokka{uuid.uuid4().hex[:10]}"


async def _found(
    store: ConversationStore, word: str, tenant: str | None = None
) -> set[tuple[str, int]]:
    hits = await store.search(word, tenant=tenant, limit=50)
    return {(h.conversation_id, h.seq) for h in hits if h.seq is not None}


async def _quiet(store: ConversationStore) -> ConversationStore:
    store.search_index.background = False
    await store.search("anything")  # caught up: what follows is all the index lacks
    return store


async def test_an_append_at_the_head_is_found(store: ConversationStore) -> None:
    await _quiet(store)
    conv = await store.create_conversation()
    word = _word()
    stored = await store.append(conv.id, [Message.user("hello"), Message.assistant(f"a {word}")])
    assert await _found(store, word) == {(conv.id, stored[-1].seq)}


async def test_an_append_with_an_idempotency_key_is_found(store: ConversationStore) -> None:
    # The general path (a key is never planned ahead).
    await _quiet(store)
    conv = await store.create_conversation()
    word = _word()
    stored = await store.append(conv.id, Message.user(f"keyed {word}"), idempotency_key="k-1")
    assert await _found(store, word) == {(conv.id, stored[0].seq)}


async def test_a_new_branch_is_found(store: ConversationStore) -> None:
    await _quiet(store)
    conv = await store.create_conversation()
    first = await store.append(conv.id, [Message.user("one"), Message.assistant("two")])
    word = _word()
    branch = await store.append(conv.id, Message.user(f"again {word}"), parent_seq=first[0].seq)
    assert await _found(store, word) == {(conv.id, branch[0].seq)}


async def test_a_completed_tool_call_is_found(store: ConversationStore) -> None:
    await _quiet(store)
    conv = await store.create_conversation()
    await store.append(
        conv.id,
        [
            Message.user("look it up"),
            Message.assistant(ToolCallPart(id="c1", name="find", arguments={})),
        ],
    )
    word = _word()
    call = await store.complete_tool_call(conv.id, "c1", JsonOutput(value=f"got {word}"))
    assert call.result_seq is not None
    assert await _found(store, word) == {(conv.id, call.result_seq)}


async def test_a_fork_is_found_beside_its_source(store: ConversationStore) -> None:
    await _quiet(store)
    conv = await store.create_conversation()
    word = _word()
    stored = await store.append(
        conv.id, [Message.user(f"x {word}"), Message.assistant("y"), Message.user("z")]
    )
    assert await _found(store, word) == {(conv.id, stored[0].seq)}
    fork = await store.fork(conv.id, at_seq=stored[1].seq)
    assert await _found(store, word) == {(conv.id, stored[0].seq), (fork.id, stored[0].seq)}


async def test_a_checkpoints_new_messages_are_found(store: ConversationStore) -> None:
    await _quiet(store)
    conv = await store.create_conversation()
    word = _word()
    seqs = await store.checkpoints.put(
        conv.id,
        checkpoint_ns="",
        checkpoint_id="1ef0000000000001",
        parent_checkpoint_id=None,
        checkpoint_type="msgpack",
        checkpoint=b"\x81\xa1v\x01",
        channel_versions={"messages": "1"},
        metadata={"step": 1},
        messages=MessageList("messages", "1", kept=[], new=[Message.user(f"graph {word}")]),
    )
    assert await _found(store, word) == {(conv.id, seq) for seq in seqs}
    assert len(seqs) == 1


async def test_a_restored_conversation_is_found(store: ConversationStore, tmp_path: Path) -> None:
    await _quiet(store)
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    conv = await store.create_conversation(tenant=tenant)
    word = _word()
    await store.append(
        conv.id, [Message.user(f"{word} one"), Message.assistant("two"), Message.user(f"{word} 3")],
        tenant=tenant,
    )  # fmt: skip
    where = await _found(store, word, tenant)
    assert len(where) == 2
    archive = tmp_path / "archive.zip"
    await store.export(archive, tenant=tenant)
    await store.delete_conversation(conv.id, tenant=tenant)
    assert await _found(store, word, tenant) == set()
    report = await import_file(store, archive, "convstore", tenant=tenant)
    assert report.imported["conversation"] == 1
    assert await _found(store, word, tenant) == where


async def test_an_append_queues_one_range_on_postgres(store: ConversationStore) -> None:
    # PostgreSQL: one queue row per append whatever its length, and no trigger on inserts.
    if store.backend.dialect_name == "sqlite":
        assert store.backend.statements.queue_for_search is None  # type: ignore[attr-defined]
        return
    await _quiet(store)
    conv = await store.create_conversation()
    await store.append(conv.id, [Message.user(f"m{n}") for n in range(5)])
    await store.append(conv.id, Message.user("one more"), idempotency_key="k")  # the general path
    queued = text(
        "SELECT seq, last_seq FROM search_queue WHERE conversation_id = :cid ORDER BY seq"
    )
    triggers = text(
        "SELECT tgname FROM pg_trigger WHERE tgrelid = 'messages'::regclass AND NOT tgisinternal"
    )

    def read(tx: object) -> tuple[list[tuple[int, int | None]], set[str]]:
        rows = tx.fetch(queued, {"cid": conv.id})  # type: ignore[attr-defined]
        names = tx.fetch(triggers)  # type: ignore[attr-defined]
        return [tuple(r) for r in rows], {str(n) for (n,) in names}

    rows, names = await store.backend.read(read)  # type: ignore[arg-type]
    assert rows == [(1, 5), (6, None)]
    assert names == {"search_messages_requeue"}


def test_ranges_are_the_runs_of_consecutive_seqs() -> None:
    assert ranges([]) == []
    assert ranges([7]) == [(7, 7)]
    assert ranges([5, 1, 2, 3, 3, 9, 10]) == [(1, 3), (5, 5), (9, 10)]
