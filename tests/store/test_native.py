"""`ConversationStore.load_native`: the native records of the active path, on every database.

Its entries line up one to one with ``load(...).messages`` (same path, same window, same
order) at the revision it reports; a record of another format, or none, reads as ``None``; it
follows pops, branches and switches like ``load``; bad input and missing or foreign
conversations fail like ``load`` does.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    InvalidInputError,
    Message,
    NativePath,
    NativeRecord,
    ToolCallPart,
)
from convstore.sync import SyncConversationStore

FORMAT = "test-framework"


def record(n: int) -> dict[str, JsonValue]:
    return {"n": n, "nested": {"list": [1, "two", None, 3.5], "ok": True}, "text": "é" * n}


def msg(n: int, *, fmt: str | None = FORMAT, mid: str | None = None) -> Message:
    native = None if fmt is None else NativeRecord(format=fmt, data=record(n))
    return Message.user(f"message {n}", native=native, id=mid)


def expected(conversation_messages: list[Message]) -> list[tuple[int, str | None, Any]]:
    """What load_native should say, computed from the typed path."""
    return [
        (
            m.seq or 0,
            m.id,
            m.native.data if m.native is not None and m.native.format == FORMAT else None,
        )
        for m in conversation_messages
    ]


async def check_lines_up(store: ConversationStore, cid: str, last: int | None = None) -> None:
    native = await store.load_native(cid, format=FORMAT, last=last)
    typed = await store.load(cid, last=last)
    assert isinstance(native, NativePath)
    assert list(native) == expected(typed.messages)
    assert (native.revision, native.head_seq, native.metadata) == (
        typed.revision,
        typed.head_seq,
        typed.metadata,
    )


async def test_entries_line_up_with_the_typed_load(store: ConversationStore) -> None:
    conv = await store.create_conversation(metadata={"app": "x"})
    batch = [msg(n, mid=f"m{n}") for n in range(1, 8)]
    batch[2] = msg(3, fmt=None)  # no record
    batch[4] = msg(5, fmt="another-format")
    batch.append(
        Message.assistant(
            ToolCallPart(id="c1", name="f", arguments={}),
            native=NativeRecord(format=FORMAT, data={"call": True}),
        )
    )
    await store.append(conv.id, batch)
    for last in (None, 1, 3, 8, 50):
        await check_lines_up(store, conv.id, last)
    whole = await store.load_native(conv.id, format=FORMAT)
    assert [e[2] for e in whole][:3] == [record(1), record(2), None]
    assert whole[4][2] is None  # another format's record
    assert whole[0][1] == "m1"
    assert (await store.load_native(conv.id, format=FORMAT, last=0)) == []


async def test_it_follows_pops_branches_and_switches(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, [msg(n) for n in range(1, 6)])
    await store.pop(conv.id)
    await check_lines_up(store, conv.id)
    assert [e[0] for e in await store.load_native(conv.id, format=FORMAT)] == [1, 2, 3, 4]
    # An edit of message 2: a branch; the head moves to its tip.
    await store.append(conv.id, [msg(10), msg(11)], parent_seq=2)
    for last in (None, 1, 2, 3, 10):
        await check_lines_up(store, conv.id, last)
    assert [e[0] for e in await store.load_native(conv.id, format=FORMAT)] == [1, 2, 6, 7]
    await store.switch_branch(conv.id, head_seq=4)
    await check_lines_up(store, conv.id)
    await check_lines_up(store, conv.id, last=2)
    await store.pop(conv.id)
    await check_lines_up(store, conv.id)


async def test_records_are_fresh_on_every_read(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, msg(1))
    first = await store.load_native(conv.id, format=FORMAT)
    data = first[0][2]
    assert isinstance(data, dict)
    data["n"] = "changed by the caller"
    assert (await store.load_native(conv.id, format=FORMAT))[0][2] == record(1)


async def test_an_empty_conversation_and_bad_input(store: ConversationStore) -> None:
    conv = await store.create_conversation(tenant="acme")
    empty = await store.load_native(conv.id, format=FORMAT, tenant="acme")
    assert (list(empty), empty.head_seq, empty.revision) == ([], None, conv.revision)
    for cid, tenant in (("missing", None), (conv.id, "other")):
        with pytest.raises(ConversationNotFoundError):
            await store.load_native(cid, format=FORMAT, tenant=tenant)
    bad_arguments: list[dict[str, Any]] = [
        {"format": ""},
        {"format": None},
        {"format": "x" * 65},
        {"format": FORMAT, "last": -1},
        {"format": FORMAT, "last": True},
    ]
    for bad in bad_arguments:
        with pytest.raises(InvalidInputError):
            await store.load_native(conv.id, **bad)


def test_the_blocking_facade_has_it(db_url: str, blobs_url: str) -> None:
    with SyncConversationStore(db_url, blobs=blobs_url, auto_migrate=True) as store:
        conv = store.create_conversation()
        store.append(conv.id, [msg(1), msg(2)])
        assert [e[2] for e in store.load_native(conv.id, format=FORMAT, last=1)] == [record(2)]
