"""`ConvstoreConversationStore` judged against pydantic-ai's own `InMemoryConversationStore`.

No upstream test suite exists for the `ConversationStore` protocol, so the reference is the
framework's in-memory backend: every scenario runs the same operations on both (through the
framework's own `load` / `save` / `branch` / `fork` / `delete` / `list_conversations`), and the
outcomes must agree — loaded messages (by ``==``), entries and their parent structure, records,
listings, branches, forks and conflicts. Entry ids are minted per store, so entries are compared
through the id pairing each save establishes.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
    sqlite_file_bytes,
)

require("pydantic_ai")

from pydantic_ai import BinaryContent  # noqa: E402
from pydantic_ai.conversation import Conversation  # noqa: E402
from pydantic_ai.conversation_store import (  # noqa: E402
    ConversationConflict,
    ConversationEntry,
    InMemoryConversationStore,
)
from pydantic_ai.exceptions import UserError  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage  # noqa: E402

from convstore.integrations.pydantic_ai import ConvstoreConversationStore  # noqa: E402

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


# -- messages ------------------------------------------------------------------------------------


def as_json(messages: Any) -> bytes:
    """Messages as pydantic-ai's own serialization sees them (`None` stays distinct).

    A store that persists JSON returns what that JSON gives back (`BinaryImage` for an image
    saved as `BinaryContent`), so loads are compared with the in-memory reference in this form.
    """
    if messages is None:
        return b"null"
    return ModelMessagesTypeAdapter.dump_json(list(messages))


def user(text: str, *, image: bool = False, system: str | None = None) -> ModelRequest:
    parts: list[Any] = [SystemPromptPart(system, timestamp=T0)] if system else []
    content: Any = [text, BinaryContent(PNG, media_type="image/png")] if image else text
    parts.append(UserPromptPart(content, timestamp=T0))
    return ModelRequest(parts=parts, timestamp=T0)


def call(name: str, call_id: str, *, thinking: str | None = None) -> ModelResponse:
    parts: list[Any] = [ThinkingPart(thinking)] if thinking else []
    parts.append(ToolCallPart(name, {"q": name}, tool_call_id=call_id))
    return ModelResponse(
        parts=parts, usage=RequestUsage(input_tokens=5, output_tokens=2), timestamp=T0
    )


def result(name: str, call_id: str, *, image: bool = False, retry: bool = False) -> ModelRequest:
    if retry:
        retried = ToolReturnPart(
            name, "bad args", tool_call_id=call_id, outcome="retried", timestamp=T0
        )
        feedback = RetryFeedbackPart("say it again", retry=RetryInfo(cause="model_retry"))
        return ModelRequest(
            parts=[retried, dataclasses.replace(feedback, timestamp=T0)], timestamp=T0
        )
    content: Any = BinaryContent(PNG, media_type="image/png") if image else {"ok": name}
    part = ToolReturnPart(name, content, tool_call_id=call_id, timestamp=T0)
    return ModelRequest(parts=[part], timestamp=T0)


def answer(text: str) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart(text)], usage=RequestUsage(input_tokens=7, output_tokens=3), timestamp=T0
    )


def turn(tag: str, *, image: bool = False) -> list[ModelMessage]:
    """A user turn with a tool call and its result, then the answer."""
    call_id = f"call-{tag}"
    return [
        user(f"question {tag}"),
        call("lookup", call_id, thinking=f"thinking {tag}"),
        result("lookup", call_id, image=image),
        answer(f"answer {tag}"),
    ]


# -- the twin ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Twin:
    """One scenario run on both stores, with each store's own conversation handles."""

    ref: InMemoryConversationStore
    ours: ConvstoreConversationStore
    ids: dict[str, str] = dataclasses.field(default_factory=dict)  # ours entry id → ref's
    handles: dict[str, tuple[Conversation, Conversation]] = dataclasses.field(default_factory=dict)
    # The convstore side shares its database with other tests; listings are compared on the
    # conversations this scenario made.
    names: set[str] = dataclasses.field(default_factory=set)

    async def both(self, op: Callable[[Any, int], Awaitable[Any]]) -> tuple[Any, Any]:
        """Run ``op(store, side)`` on both; equal outcomes (a value or the same error class)."""
        outcomes = []
        for side, store in enumerate((self.ref, self.ours)):
            try:
                outcomes.append(("ok", await op(store, side)))
            except (ConversationConflict, UserError) as exc:
                outcomes.append(("error", type(exc)))
        assert outcomes[0][0] == outcomes[1][0], outcomes
        if outcomes[0][0] == "error":
            assert outcomes[0][1] is outcomes[1][1]
        return outcomes[0][1], outcomes[1][1]

    def pair(
        self, ref_entries: list[ConversationEntry], our_entries: list[ConversationEntry]
    ) -> None:
        assert [e.message for e in ref_entries] == [e.message for e in our_entries]
        for ref_entry, our_entry in zip(ref_entries, our_entries, strict=True):
            self.ids[our_entry.id] = ref_entry.id

    async def save(self, cid: str, extra: list[ModelMessage], *, scope: str | None = None) -> None:
        """Continue the current handle (or a new conversation) with ``extra`` and save it."""

        async def op(store: Any, side: int) -> list[ConversationEntry]:
            # A fresh load, so the handles kept for stale saves are never advanced.
            conv = await store.load(cid) or Conversation(conversation_id=cid)
            conv.messages = [*conv.messages, *extra]
            return await store.save(conv, scope=scope)

        ref_new, our_new = await self.both(op)
        if isinstance(ref_new, list):
            self.pair(ref_new, our_new)
            await self.reload(cid)

    async def rewrite(self, cid: str, keep: int, extra: list[ModelMessage]) -> None:
        """Save the loaded history cut to ``keep`` messages plus ``extra``, compared, not marked."""

        async def op(store: Any, side: int) -> list[ConversationEntry]:
            loaded = self.handles[cid][side]
            rewritten = Conversation(
                conversation_id=cid,
                messages=[*loaded.messages[:keep], *extra],
                revision=loaded.revision,
            )
            return await store.save(rewritten)

        ref_new, our_new = await self.both(op)
        if isinstance(ref_new, list):
            self.pair(ref_new, our_new)
        await self.reload(cid)

    async def reload(self, cid: str, *, scope: str | None = None, limit: int | None = None) -> None:
        ref, ours = await self.both(lambda store, _: store.load(cid, scope=scope, limit=limit))
        assert (ref is None) == (ours is None)
        if ref is None:
            self.handles.pop(cid, None)
            return
        assert as_json(ours.messages) == as_json(ref.messages)
        assert ours.usage == ref.usage
        assert ours.deferred_tool_requests == ref.deferred_tool_requests
        if limit is None:
            self.handles[cid] = (ref, ours)
        await self.compare_entries(cid, scope=scope)

    async def compare_entries(self, cid: str, *, scope: str | None = None) -> None:
        ref, ours = await self.both(lambda store, _: store.load_entries(cid, scope=scope))
        if ref is None:
            assert ours is None
            return
        assert as_json(e.message for e in ours) == as_json(e.message for e in ref)
        assert [self.ids.get(e.id) for e in ours] == [e.id for e in ref]
        assert [self.ids.get(e.parent_id) if e.parent_id else None for e in ours] == [
            e.parent_id for e in ref
        ]
        ref_record, our_record = await self.both(lambda store, _: store.read_record(cid))
        assert self.ids.get(our_record.head_id) == ref_record.head_id
        assert [self.ids.get(b) for b in our_record.branches] == ref_record.branches
        assert our_record.forked_from == ref_record.forked_from
        assert self.ids.get(our_record.forked_at) == ref_record.forked_at
        assert our_record.scope == ref_record.scope
        assert our_record.usage == ref_record.usage

    async def stale_save(self, cid: str, stale: tuple[Conversation, Conversation]) -> None:
        async def op(store: Any, side: int) -> list[ConversationEntry]:
            conv = stale[side]
            conv.messages = [*conv.messages, answer("late")]
            return await store.save(conv)

        await self.both(op)

    async def branch(self, cid: str, *, at: int | None = None, entry: str | None = None) -> None:
        async def op(store: Any, side: int) -> Conversation:
            handle = self.handles[cid][side]
            from_entry = None if entry is None else self.ref_or_ours(entry, side)
            return await store.branch(
                cid, at=at, from_entry=from_entry, expected_revision=handle.revision
            )

        await self.both(op)
        await self.reload(cid)

    async def fork(
        self,
        cid: str,
        new_cid: str,
        *,
        at: int | None = None,
        entry: str | None = None,
        scope: str | None = None,
    ) -> None:
        async def op(store: Any, side: int) -> Conversation:
            from_entry = None if entry is None else self.ref_or_ours(entry, side)
            return await store.fork(
                cid, at=at, from_entry=from_entry, new_conversation_id=new_cid, scope=scope
            )

        ref, ours = await self.both(op)
        if isinstance(ref, Conversation):
            assert as_json(ours.messages) == as_json(ref.messages)
            await self.reload(new_cid)

    def ours_store(self) -> ConversationStore:
        return self.ours._handle._store  # type: ignore[return-value]

    def ref_or_ours(self, our_entry: str, side: int) -> str:
        return self.ids[our_entry] if side == 0 else our_entry

    async def delete(self, cid: str, *, scope: str | None = None) -> None:
        await self.both(lambda store, _: store.delete(cid, scope=scope))
        await self.reload(cid)

    async def listing(self, *, scope: str | None = None, limit: int | None = None) -> None:
        ref, everything = await self.both(lambda store, _: store.list_conversations(scope=scope))
        if limit is not None:
            first = await self.ours.list_conversations(scope=scope, limit=limit)
            assert [r.conversation_id for r in first] == [
                r.conversation_id for r in everything[:limit]
            ]
        ours = [r for r in everything if r.conversation_id in self.names][:limit]
        ref = ref[:limit]
        assert [(r.conversation_id, r.scope) for r in ours] == [
            (r.conversation_id, r.scope) for r in ref
        ]
        assert [self.ids.get(r.head_id) if r.head_id else None for r in ours] == [
            r.head_id for r in ref
        ]

    async def entries_alive(self) -> None:
        """Every entry either store ever made is readable in both, or in neither."""
        for our_id, ref_id in self.ids.items():
            alive = []
            for store, entry_id in ((self.ref, ref_id), (self.ours, our_id)):
                try:
                    alive.append(as_json([(await store.read_entry(entry_id)).message]))
                except LookupError:
                    alive.append(None)
            assert alive[0] == alive[1]


@pytest.fixture
async def twin(store: ConversationStore) -> Twin:
    return Twin(InMemoryConversationStore(), ConvstoreConversationStore(store=store))


def cid(twin: Twin | None = None) -> str:
    name = f"c-{uuid.uuid4().hex[:12]}"
    if twin is not None:
        twin.names.add(name)
    return name


# -- scripted scenarios --------------------------------------------------------------------------


async def test_save_load_continue_with_images_and_tool_calls(twin: Twin) -> None:
    a = cid()
    await twin.save(a, [user("draw", image=True, system="be brief"), *turn("1", image=True)[1:]])
    await twin.save(a, turn("2"))
    await twin.save(
        a, [user("why"), call("check", "c-retry"), result("check", "c-retry", retry=True)]
    )
    await twin.reload(a, limit=3)
    await twin.reload(a, limit=0)
    await twin.entries_alive()


async def test_stale_and_duplicate_saves_conflict_alike(twin: Twin) -> None:
    a = cid()
    await twin.save(a, turn("1"))
    stale = twin.handles[a]
    await twin.save(a, turn("2"))
    await twin.stale_save(a, stale)
    # A new Conversation object for an id the store already has is a conflict too.
    await twin.both(
        lambda store, _: store.save(Conversation(conversation_id=a, messages=turn("x")))
    )
    await twin.reload(a)


async def test_rewritten_history_branches_and_keeps_the_old_branch(twin: Twin) -> None:
    a = cid()
    await twin.save(a, [*turn("1"), *turn("2")])
    await twin.rewrite(a, 4, [user("compacted"), answer("summary")])
    await twin.rewrite(a, 2, [result("lookup", "call-1"), answer("again")])  # repeats a call id
    # A rewrite that makes the same call again (same call id, different message): call ids are
    # unique per convstore conversation, so the branch's copy of the call gets a qualified id.
    await twin.rewrite(a, 1, [call("lookup", "call-1", thinking="again"), *turn("1")[2:]])
    path = await twin.ours_store().load(a)
    assert [(c.id, c.provider_id, c.status) for c in path.tool_calls] == [
        (f"call-1@{path.messages[1].id}", "call-1", "complete")
    ]
    old_tip = next(iter(twin.ids))
    await twin.branch(a, entry=old_tip)
    await twin.branch(a, at=3)
    await twin.save(a, [user("regenerate"), answer("other")])
    await twin.entries_alive()


async def test_branch_from_a_left_branch_and_back(twin: Twin) -> None:
    a = cid()
    await twin.save(a, turn("1"))
    first_tip = list(twin.ids)[-1]
    await twin.branch(a, at=2)
    await twin.save(a, [result("lookup", "call-1", image=True), answer("alt")])
    await twin.branch(a, entry=first_tip)
    await twin.save(a, turn("3"))
    await twin.branch(a, at=9)  # out of range: the same UserError from both


async def test_forks_share_history_and_survive_the_source(twin: Twin) -> None:
    a, b, c = cid(twin), cid(twin), cid(twin)
    await twin.save(a, turn("1", image=True), scope="alice")
    await twin.save(a, turn("2"))
    await twin.fork(a, b, at=4)
    middle = list(twin.ids)[2]
    await twin.fork(a, c, entry=middle, scope="bob")
    await twin.fork(a, b)  # the id is taken: a conflict from both
    await twin.save(b, turn("b"))
    await twin.listing()
    await twin.listing(scope="alice")
    await twin.listing(scope="bob", limit=1)
    await twin.delete(a, scope="bob")  # another scope: left alone
    await twin.delete(a)
    await twin.reload(b)
    await twin.reload(c)
    await twin.entries_alive()
    await twin.listing()


async def test_scope_hides_records(twin: Twin) -> None:
    a = cid()
    await twin.save(a, turn("1"), scope="alice")
    await twin.reload(a, scope="bob")
    await twin.both(lambda store, _: store.load(a, scope="bob"))
    await twin.reload(a, scope="alice")
    await twin.both(lambda store, _: store.save(Conversation(conversation_id=a), scope="bob"))


async def test_images_are_blobs_not_rows(store: ConversationStore, db_url: str) -> None:
    backend = ConvstoreConversationStore(store=store)
    a = cid()
    saved = [user("draw", image=True), *turn("1", image=True)[1:]]
    await backend.save(Conversation(conversation_id=a, messages=saved))
    loaded = await backend.load(a)
    assert loaded is not None and as_json(loaded.messages) == as_json(saved)
    conv = await store.load(a)
    files = [f for m in conv.messages for f in m.files]
    assert len(files) == 2 and all(f.attachment is not None and f.data is None for f in files)
    assert await store.read_attachment(files[0]) == PNG
    if db_url.startswith("sqlite"):
        raw = sqlite_file_bytes(db_url)
        assert PNG not in raw and b"iVBORw0KGgo" not in raw


async def test_owned_store_on_a_url(tmp_path: Any) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'owned.db'}"
    backend = ConvstoreConversationStore(url=url, blobs=str(tmp_path / "blobs"))
    a = cid()
    await backend.save(Conversation(conversation_id=a, messages=turn("1")))
    await backend.close()
    again = ConvstoreConversationStore(url=url, blobs=str(tmp_path / "blobs"))
    loaded = await again.load(a)
    assert loaded is not None and loaded.messages == turn("1")
    await again.close()


async def test_concurrent_writers_from_one_revision_one_wins(store: ConversationStore) -> None:
    import asyncio

    backend = ConvstoreConversationStore(store=store)
    a = cid()
    await backend.save(Conversation(conversation_id=a, messages=turn("0")))
    loaded = [await backend.load(a) for _ in range(6)]

    async def write(index: int) -> bool:
        conv = loaded[index]
        assert conv is not None
        conv.messages = [*conv.messages, user(f"writer {index}")]
        try:
            await backend.save(conv)
        except ConversationConflict:
            return False
        return True

    outcomes = await asyncio.gather(*(write(i) for i in range(6)))
    assert outcomes.count(True) == 1
    final = await backend.load(a)
    assert final is not None and len(final.messages) == 5
    winner = outcomes.index(True)
    assert final.messages[-1] == user(f"writer {winner}")
    assert (await store.load(a)).messages[-1].native is not None


# -- generated scenarios -------------------------------------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("save"), st.integers(0, 2), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("rewrite"), st.integers(0, 2), st.integers(0, 8), st.booleans()),
        st.tuples(st.just("branch_at"), st.integers(0, 2), st.integers(0, 8), st.booleans()),
        st.tuples(st.just("branch_entry"), st.integers(0, 2), st.integers(0, 40), st.booleans()),
        st.tuples(st.just("fork"), st.integers(0, 2), st.integers(0, 8), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 2), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("list"), st.integers(0, 2), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("stale"), st.integers(0, 2), st.integers(0, 1), st.booleans()),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
async def test_generated_operations_agree(store: ConversationStore, ops: list[Any]) -> None:
    twin = Twin(InMemoryConversationStore(), ConvstoreConversationStore(store=store))
    names = [cid(twin) for _ in range(3)]
    stale: dict[str, tuple[Conversation, Conversation]] = {}
    for step, (kind, target, number, flag) in enumerate(ops):
        name = names[target]
        exists = name in twin.handles
        if kind == "save":
            if exists:
                stale[name] = twin.handles[name]
            extra = turn(f"{step}", image=flag)[: number + 1]
            await twin.save(name, extra, scope="s" if flag and not exists else None)
        elif kind == "rewrite" and exists:
            await twin.rewrite(name, number, [user(f"rewrite {step}"), answer(f"r {step}")])
        elif kind == "branch_at" and exists:
            await twin.branch(name, at=number)
        elif kind == "branch_entry" and exists and twin.ids:
            entry = list(twin.ids)[number % len(twin.ids)]
            await twin.branch(name, entry=entry)
        elif kind == "fork" and exists:
            await twin.fork(name, names[(target + 1) % 3], at=number if flag else None)
        elif kind == "delete":
            await twin.delete(name, scope="other" if number else None)
        elif kind == "list":
            await twin.listing(scope="s" if flag else None, limit=number or None)
        elif kind == "stale" and name in stale and exists:
            await twin.stale_save(name, stale.pop(name))
    for name in names:
        await twin.reload(name)
    await twin.entries_alive()


@pytest.mark.filterwarnings("ignore:Could not generate return schema:UserWarning")
@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"query": "tent", "roles": ["wizard"]}, "unknown role 'wizard'"),
        ({"query": "tent", "limit": "abc"}, "limit must be a whole number from 1 to 50, not 'abc'"),
        ({"query": 5}, "query must be text"),
    ],
    ids=["role", "limit-text", "query-number"],
)
async def test_a_search_refusal_reaches_the_model_as_the_documented_text(
    store: ConversationStore, arguments: dict[str, Any], why: str
) -> None:
    """Through ``Agent(tools=[search_tool(...)])`` (docs/search.md) the model's next request
    carries the tool's ``"search refused: …"``, not pydantic-ai's validation retry prompt."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.messages import TextPart as AgentText
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from convstore import Message, search_tool

    tenant = f"t-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    await store.append(conv.id, Message.user("pack the tent"), tenant=tenant)
    requests: list[ModelRequest] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            call = ToolCallPart("search_conversations", arguments, tool_call_id="c1")
            return ModelResponse(parts=[call])
        requests.append(messages[-1])
        return ModelResponse(parts=[AgentText("Understood.")])

    agent = Agent(FunctionModel(model), tools=[search_tool(store, tenant=tenant)])
    result = await agent.run("find my tent")
    assert result.output == "Understood."
    (request,) = requests
    (returned,) = request.parts
    assert isinstance(returned, ToolReturnPart) and returned.tool_call_id == "c1"
    assert returned.content.startswith("search refused: ") and why in returned.content
