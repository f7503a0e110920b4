"""Paging while others write, on every database.

- `load(last=K, before_seq=N)` paged back from the newest page visits every message of the
  active path exactly once, however the path is cut into pages, while writers append at the
  head (and on side branches).
- `list_conversations(cursor=...)` visits every conversation that existed, unchanged, through
  the whole walk exactly once and never one twice, while writers create conversations and write
  to others; `metadata={...}` keeps only the conversations whose metadata has those values.

Both are hypothesis properties over page sizes and writer schedules (a writer step runs between
page reads), plus one walk with a writer task running concurrently.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import ConversationStore, Message

SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _open(db_url: str) -> ConversationStore:
    """A store of its own per example (fsync per commit is not what these tests measure)."""
    return ConversationStore(
        db_url,
        blobs=f"memory://paging-{uuid.uuid4().hex}",
        auto_migrate=True,
        sqlite_synchronous="normal",
    )


async def _walk_back(
    store: ConversationStore, cid: str, page_size: int, between: Any = None
) -> list[list[int]]:
    """Seqs of each page, newest page first; ``between()`` runs after every page read."""
    pages: list[list[int]] = []
    page = await store.load(cid, last=page_size)
    while page.messages:
        seqs = [m.seq for m in page.messages]
        assert all(s is not None for s in seqs)
        pages.append([s for s in seqs if s is not None])
        if between is not None:
            await between()
        page = await store.load(cid, last=page_size, before_seq=pages[-1][0])
    return pages


async def _path_seqs(store: ConversationStore, cid: str) -> list[int]:
    return [m.seq for m in (await store.load(cid)).messages if m.seq is not None]


class TestLoadBeforeSeq:
    @SETTINGS
    @given(
        shape=st.lists(st.sampled_from(["path", "path", "side"]), min_size=0, max_size=25),
        page_size=st.integers(1, 7),
        writes=st.lists(st.integers(0, 3), max_size=10),
    )
    def test_paging_back_visits_every_path_message_once(
        self, db_url: str, shape: list[str], page_size: int, writes: list[int]
    ) -> None:
        async def scenario() -> None:
            async with _open(db_url) as store:
                conv = await store.create_conversation()
                for step, kind in enumerate(shape):
                    if kind == "side" and (head := (await store.load(conv.id)).head_seq):
                        # A side branch from the head, then back: the path gets a gap.
                        await store.append(conv.id, Message.user(f"side {step}"))
                        await store.switch_branch(conv.id, head_seq=head)
                    else:
                        await store.append(conv.id, Message.user(f"turn {step}"))
                expected = await _path_seqs(store, conv.id)
                schedule = iter(writes)

                async def writer() -> None:
                    for i in range(next(schedule, 0)):
                        await store.append(conv.id, Message.assistant(f"new {i}"))

                pages = await _walk_back(store, conv.id, page_size, writer)
                visited = [s for page in reversed(pages) for s in page]
                assert visited == expected  # each once, oldest first
                assert all(len(p) <= page_size for p in pages)
                assert all(len(p) == page_size for p in pages[:-1])

        asyncio.run(scenario())

    async def test_walking_back_while_a_writer_task_appends(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user(str(i)) for i in range(40)])
        expected = await _path_seqs(store, conv.id)
        stop = asyncio.Event()

        async def writer() -> int:
            written = 0
            while not stop.is_set():
                await store.append(conv.id, Message.assistant(f"live {written}"))
                written += 1
                await asyncio.sleep(0)
            return written

        task = asyncio.create_task(writer())
        try:
            pages = await _walk_back(store, conv.id, 3, lambda: asyncio.sleep(0))
        finally:
            stop.set()
            written = await task
        visited = sorted(s for page in pages for s in page)
        assert len(visited) == len(set(visited))
        # The first page may already hold live messages; every older message comes once.
        assert [s for s in visited if s <= expected[-1]] == expected
        assert len(await _path_seqs(store, conv.id)) == 40 + written

    async def test_before_seq_on_a_branch_and_empty_pages(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user(str(i)) for i in range(5)])
        await store.append(conv.id, [Message.user("x"), Message.user("y")], parent_seq=2)
        page = await store.load(conv.id, last=2, before_seq=7)
        assert [m.seq for m in page.messages] == [2, 6]
        assert [m.seq for m in (await store.load(conv.id, before_seq=6)).messages] == [1, 2]
        assert (await store.load(conv.id, last=3, before_seq=1)).messages == []
        assert (await store.load(conv.id, last=0, before_seq=7)).messages == []


class TestListCursor:
    @SETTINGS
    @given(
        initial=st.integers(0, 14),
        page_size=st.integers(1, 5),
        schedule=st.lists(
            st.tuples(st.sampled_from(["create", "write", "nothing"]), st.integers(0, 13)),
            max_size=8,
        ),
    )
    def test_cursor_walk_sees_every_unchanged_conversation_once(
        self,
        db_url: str,
        initial: int,
        page_size: int,
        schedule: list[tuple[str, int]],
    ) -> None:
        async def scenario() -> None:
            tenant = f"t-{uuid.uuid4()}"
            async with _open(db_url) as store:
                ids = [
                    (await store.create_conversation(tenant=tenant, title=str(i))).id
                    for i in range(initial)
                ]
                for cid in ids[::3]:
                    await store.append(cid, Message.user("activity"), tenant=tenant)
                written: set[str] = set()
                created: set[str] = set()
                steps = iter(schedule)

                async def between() -> None:
                    action, index = next(steps, ("nothing", 0))
                    if action == "create":
                        new = await store.create_conversation(tenant=tenant)
                        created.add(new.id)
                    elif action == "write" and ids:
                        cid = ids[index % len(ids)]
                        await store.update_state(cid, {"touched": index}, tenant=tenant)
                        written.add(cid)

                seen: list[str] = []
                cursor: str | None = None
                while True:
                    page = await store.list_conversations(
                        tenant=tenant, limit=page_size, cursor=cursor
                    )
                    assert len(page) <= page_size
                    seen += [c.id for c in page]
                    if not page.has_more:
                        assert page.next_cursor is None
                        break
                    assert page.next_cursor is not None and page
                    # Both ways to continue are valid: the page's and its last summary's.
                    cursor = page[-1].cursor if len(seen) % 2 else page.next_cursor
                    await between()
                assert len(seen) == len(set(seen)), "a conversation was listed twice"
                assert set(seen) <= set(ids) | created
                unchanged = set(ids) - written
                assert unchanged <= set(seen), "an unchanged conversation was skipped"

        asyncio.run(scenario())

    async def test_a_quiet_walk_lists_everything_newest_created_first(
        self, store: ConversationStore
    ) -> None:
        """Newest ``created_at`` first, ties by id: writing to a conversation never moves it."""
        tenant = f"t-{uuid.uuid4()}"
        ids = [(await store.create_conversation(tenant=tenant)).id for _ in range(7)]
        await store.append(ids[2], Message.user("written, not moved"), tenant=tenant)
        order = list(reversed(ids))
        walked: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await store.list_conversations(tenant=tenant, limit=3, cursor=cursor)
            pages += 1
            walked += [c.id for c in page]
            if not page.has_more:
                break
            cursor = page.next_cursor
        assert walked == order
        assert pages == 3
        everything = await store.list_conversations(tenant=tenant, limit=7)
        assert [c.id for c in everything] == order and not everything.has_more

    async def test_metadata_filter(self, store: ConversationStore) -> None:
        tenant = f"t-{uuid.uuid4()}"
        made: dict[str, dict[str, Any]] = {}
        metadatas: list[dict[str, Any]] = [
            {"kind": "a", "n": 1},
            {"kind": "a", "n": 2, "extra": True},
            {"kind": "b", "n": 1},
            {"n": 1},
            {"kind": "a", "obj": {"x": [1, 2]}},
            {},
        ]
        for i, meta in enumerate(metadatas):
            conv = await store.create_conversation(tenant=tenant, metadata=meta, title=str(i))
            made[conv.id] = meta

        async def matching(**filters: Any) -> set[str]:
            found: set[str] = set()
            cursor = None
            while True:
                page = await store.list_conversations(
                    tenant=tenant, metadata=filters, limit=2, cursor=cursor
                )
                found |= {c.id for c in page}
                assert all(c.metadata == made[c.id] for c in page)
                if not page.has_more:
                    return found
                cursor = page.next_cursor

        def where(**filters: Any) -> set[str]:
            return {
                cid
                for cid, meta in made.items()
                if all(k in meta and meta[k] == v for k, v in filters.items())
            }

        for filters in (
            {"kind": "a"},
            {"kind": "a", "n": 2},
            {"n": 1},
            {"obj": {"x": [1, 2]}},
            {"extra": True},
            {"kind": "c"},
            {},
        ):
            assert await matching(**filters) == where(**filters), filters
        assert len(where(kind="a")) == 3

    async def test_summaries_carry_revision_and_cursor(self, store: ConversationStore) -> None:
        tenant = f"t-{uuid.uuid4()}"
        conv = await store.create_conversation(tenant=tenant, title="t", metadata={"k": 1})
        await store.append(conv.id, Message.user("hi"), tenant=tenant)
        (summary,) = await store.list_conversations(tenant=tenant)
        loaded = await store.load(conv.id)
        assert (summary.id, summary.title, summary.tenant, summary.metadata) == (
            conv.id, "t", tenant, {"k": 1},
        )  # fmt: skip
        assert summary.revision == loaded.revision
        assert isinstance(summary.cursor, str) and summary.cursor
