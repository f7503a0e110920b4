"""SQLite group commit: writes that queue while the writer is busy share one transaction and
one ``COMMIT``, yet each is still all or nothing and fails alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    Message,
    ToolCallConflictError,
    ToolCallPart,
)
from tests.store.test_statements import recorded


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ConversationStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'group.db'}"
    async with ConversationStore(url, blobs="memory://group-commit") as opened:
        await opened.backend.trace_all()
        yield opened


def _commits(statements: list[str]) -> int:
    return sum(s.strip().upper() == "COMMIT" for s in statements)


async def test_concurrent_appends_share_commits_and_all_land(store: ConversationStore) -> None:
    conversations = [await store.create_conversation() for _ in range(20)]
    with recorded(store) as statements:
        stored = await asyncio.gather(
            *(store.append(c.id, [Message.user(f"hello {n}")]) for n, c in enumerate(conversations))
        )
    assert [m.seq for batch in stored for m in batch] == [1] * 20
    # The first finds the writer idle and runs alone; the other 19 queue behind it.
    assert _commits(statements) == 2
    for n, conv in enumerate(conversations):
        loaded = await store.load(conv.id)
        assert [m.text for m in loaded.messages] == [f"hello {n}"]


async def test_a_failing_write_fails_alone_and_leaves_nothing(store: ConversationStore) -> None:
    shared = await store.create_conversation()
    other = await store.create_conversation()
    await store.append(
        shared.id,
        [
            Message.user("go"),
            Message.assistant(ToolCallPart(id="c1", name="lookup", arguments={})),
            Message.tool_result("c1", {"answer": 1}),
        ],
    )
    with recorded(store) as statements:
        outcomes = await asyncio.gather(
            # Finds the writer idle and runs alone; the rest queue behind it as one group.
            store.append(other.id, [Message.user("elsewhere")]),
            # Bumps the conversation's sequence, writes a message, then conflicts.
            store.append(
                shared.id, [Message.assistant("before"), Message.tool_result("c1", {"answer": 2})]
            ),
            store.append(shared.id, [Message.user("next")]),
            store.append("no-such-conversation", [Message.user("lost")]),
            store.append(other.id, [Message.user("again")]),
            return_exceptions=True,
        )
    elsewhere, conflict, following, missing, again = outcomes
    assert isinstance(conflict, ToolCallConflictError)
    assert isinstance(missing, ConversationNotFoundError)
    assert not isinstance(following, BaseException)
    assert not isinstance(elsewhere, BaseException)
    assert not isinstance(again, BaseException)
    assert _commits(statements) == 2  # the first write's, then the group's
    loaded = await store.load(shared.id)
    # The conflicting write's message and sequence bump were rolled back with it.
    assert [(m.seq, m.text) for m in loaded.messages][-1] == (4, "next")
    assert "before" not in [m.text for m in loaded.messages]
    assert [m.text for m in (await store.load(other.id)).messages] == ["elsewhere", "again"]


async def test_a_write_cancelled_before_it_starts_never_runs(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    first = asyncio.ensure_future(store.append(conv.id, [Message.user("first")]))
    second = asyncio.ensure_future(store.append(conv.id, [Message.user("second")]))
    await asyncio.sleep(0)  # both queued; the group has not started yet
    second.cancel()
    await first
    with pytest.raises(asyncio.CancelledError):
        await second
    assert [m.text for m in (await store.load(conv.id)).messages] == ["first"]


async def test_close_waits_for_queued_writes(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'close.db'}"
    async with ConversationStore(url, blobs="memory://group-close") as store:
        conv = await store.create_conversation()
        pending = [
            asyncio.ensure_future(store.append(conv.id, [Message.user(str(n))])) for n in range(5)
        ]
        await asyncio.sleep(0)
    await asyncio.gather(*pending)  # a write closed under would raise ClosedError here
    async with ConversationStore(url, blobs="memory://group-close") as store:
        assert [m.text for m in (await store.load(conv.id)).messages] == list("01234")
