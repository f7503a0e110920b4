"""ConvstoreSession: items back exactly, images as blobs, lifecycles, tenants, any event loop.

Runs in ``.venv-agents`` (``make pytest-agents``); the SDK's own suites are in
``test_openai_agents_contract.py``.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import copy
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="openai-agents runs in .venv-agents (make test)")

from agents import Agent, RunContextWrapper, Runner, function_tool  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.memory.session import _session_accepts_wrapper  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, function_call  # noqa: E402

from convstore import (  # noqa: E402
    ContentOutput,
    ConversationNotFoundError,
    ConversationOwnedByAnotherTenantError,
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    TextPart,
    search_tool,
)
from convstore.integrations.openai_agents import ConvstoreSession  # noqa: E402

PNG_HEADER = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")


def png(tag: bytes) -> bytes:
    return PNG_HEADER + tag * 64 + os.urandom(512)


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


IMAGE = png(b"I")
SHOT = png(b"S")
PDF = b"%PDF-1.4\n" + os.urandom(300)
RAW_PDF = b"%PDF-1.7\n" + os.urandom(300)  # sent as bare base64, as ToolOutputFileContent allows

ITEMS: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": data_url(IMAGE), "detail": "auto"},
            {"type": "input_file", "file_data": data_url(PDF, "application/pdf"),
             "filename": "a.pdf"},
            {"type": "input_file", "file_data": base64.b64encode(RAW_PDF).decode(),
             "filename": "b.pdf"},
            {"type": "input_image", "image_url": "https://cdn.example/x.png", "detail": "low"},
        ],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look."}],
     "encrypted_content": "gAAAA-opaque"},
    {"type": "function_call", "call_id": "call_1", "name": "screenshot", "arguments": "{}",
     "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1",
     "output": [{"type": "input_text", "text": "the screen"},
                {"type": "input_image", "image_url": data_url(SHOT), "detail": "auto"}]},
    {"type": "function_call", "call_id": "call_2", "name": "weather",
     "arguments": '{"city": "Oslo"}'},
    {"type": "function_call_output", "call_id": "call_2", "output": '{"temp": 3}'},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "oslo"}},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "It is 3 degrees.", "annotations": []}]},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-summary"},
]  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agents.db"


@pytest.fixture
async def session(db: Path) -> AsyncIterator[ConvstoreSession]:
    owned = ConvstoreSession("s1", url=f"sqlite+aiosqlite:///{db}")
    yield owned
    owned.close()


def database_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))


def test_it_is_a_session_that_takes_the_run_wrapper(db: Path) -> None:
    session = ConvstoreSession("s", url=f"sqlite+aiosqlite:///{db}")
    assert isinstance(session, Session)
    assert _session_accepts_wrapper(session)
    assert session.session_settings == SessionSettings()
    assert ConvstoreSession("s", session_settings={"limit": 3}).session_settings.limit == 3
    with pytest.raises(TypeError, match="limitt"):
        ConvstoreSession("s", session_settings={"limitt": 3})


async def test_items_come_back_exactly_and_images_stay_out_of_the_database(
    session: ConvstoreSession, db: Path
) -> None:
    added = copy.deepcopy(ITEMS)
    await session.add_items(added)
    assert added == ITEMS  # the caller's items are not touched
    assert await session.get_items() == ITEMS
    assert await session.get_items(limit=3) == ITEMS[-3:]
    stored = database_bytes(db)
    for data in (IMAGE, SHOT, PDF, RAW_PDF):
        assert data[-200:] not in stored
        assert base64.b64encode(data)[100:300] not in stored
    assert await session.pop_item() == ITEMS[-1]
    assert await session.get_items() == ITEMS[:-1]
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None


async def test_tool_calls_have_lifecycles_and_render_for_another_provider(
    session: ConvstoreSession, db: Path
) -> None:
    await session.add_items(copy.deepcopy(ITEMS))
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        conversation = await store.load("s1")
        calls = {c.id: (c.status, c.result_kind) for c in conversation.tool_calls}
        assert calls == {"call_1": ("complete", "content"), "call_2": ("complete", "json")}
        user = conversation.messages[1]
        assert [f.media_type for f in user.files] == [
            "image/png", "application/pdf", "application/pdf", "image/png",
        ]  # fmt: skip
        rendered = await store.render("s1", "anthropic", model="claude-sonnet-4-5")
        blocks = [b for m in rendered.payload["messages"] for b in m["content"]]
        images = [b for b in blocks if b.get("type") == "image"]
        assert images
        assert base64.b64decode(images[0]["source"]["data"]) == IMAGE
        result = next(b for b in blocks if b.get("type") == "tool_result")
        assert any(c.get("type") == "image" for c in result["content"])


async def test_pop_of_a_result_reopens_its_call(session: ConvstoreSession, db: Path) -> None:
    await session.add_items(copy.deepcopy(ITEMS[3:7]))
    assert (await session.pop_item())["type"] == "function_call_output"  # type: ignore[index]
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        statuses = {c.id: c.status for c in (await store.load("s1")).tool_calls}
    assert statuses == {"call_1": "complete", "call_2": "pending"}


async def test_limits_follow_the_session_settings(db: Path) -> None:
    session = ConvstoreSession(
        "lim", url=f"sqlite+aiosqlite:///{db}", session_settings=SessionSettings(limit=2)
    )
    try:
        items = [{"role": "user", "content": str(n)} for n in range(5)]
        await session.add_items(items)
        assert await session.get_items() == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=-1) == items
    finally:
        session.close()


async def test_a_shared_store_is_used_on_the_callers_loop_and_left_open(db: Path) -> None:
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        session = ConvstoreSession("shared", store=store)
        await session.add_items([{"role": "user", "content": "hi"}])
        session.close()  # not the session's to close
        assert (await store.load("shared")).messages[0].text == "hi"
        conversation = await store.get_or_create_conversation("shared")
        assert conversation.id == "shared"


async def test_messages_written_through_the_store_read_as_items(db: Path) -> None:
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        session = ConvstoreSession("mixed", store=store)
        await session.add_items(
            [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
        )
        output = ContentOutput(parts=[TextPart(text="t"), FilePart.from_bytes(SHOT)])
        await store.complete_tool_call("mixed", "c1", output)
        items = await session.get_items()
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "t"},
            {"type": "input_image", "image_url": data_url(SHOT), "detail": "auto"},
        ],
    }


async def test_the_run_wrapper_routes_the_session_to_a_tenant(db: Path) -> None:
    url = f"sqlite+aiosqlite:///{db}"
    session = ConvstoreSession("t", url=url, tenant=lambda context: context["tenant"])
    try:
        acme = RunContextWrapper(context={"tenant": "acme"})
        other = RunContextWrapper(context={"tenant": "other"})
        secret = [
            {"role": "user", "content": "secret"},
            {"role": "user", "content": [{"type": "input_image", "image_url": data_url(IMAGE)}]},
        ]
        await session.add_items(copy.deepcopy(secret), wrapper=acme)
        assert await session.get_items(wrapper=acme) == secret
        assert await session.pop_item(wrapper=acme) == secret[1]
        assert await session.get_items(wrapper=other) == []
        assert await session.pop_item(wrapper=other) is None
        with pytest.raises(Exception, match="run context"):
            await session.get_items()
    finally:
        session.close()
    async with ConversationStore(url) as store:
        assert (await store.load("t", tenant="acme")).messages[0].text == "secret"
        with pytest.raises(ConversationNotFoundError):
            await store.load("t", tenant="other")


async def test_a_runner_passes_its_context_to_the_tenant_function(db: Path) -> None:
    @function_tool
    def screenshot() -> str:
        """Take a screenshot."""
        return "done"

    model = ScriptedModel(
        [
            ModelStep.respond(lambda call: [function_call("screenshot", {}, call_id="call_a")]),
            ModelStep.respond(lambda call: [agents_text("All done.")]),
        ]
    )
    agent = Agent(name="a", model=model, tools=[screenshot])
    url = f"sqlite+aiosqlite:///{db}"
    session = ConvstoreSession("run", url=url, tenant=lambda context: context["tenant"])
    try:
        result = await Runner.run(agent, "go", session=session, context={"tenant": "acme"})
        assert result.final_output == "All done."
    finally:
        session.close()
    async with ConversationStore(url) as store:
        conversation = await store.load("run", tenant="acme")
        assert [c.status for c in conversation.tool_calls] == ["complete"]


async def test_a_session_id_another_tenant_holds_is_refused_by_name(db: Path) -> None:
    url = f"sqlite+aiosqlite:///{db}"
    acme = ConvstoreSession("shared-id", url=url, tenant="acme")
    other = ConvstoreSession("shared-id", url=url, tenant="other")
    try:
        await acme.add_items([{"role": "user", "content": "acme's secret"}])
        with pytest.raises(ConversationOwnedByAnotherTenantError, match="shared-id"):
            await other.add_items([{"role": "user", "content": "other's words"}])
        assert await other.get_items() == []  # reading it: as if missing, nothing told
    finally:
        acme.close()
        other.close()
    async with ConversationStore(url) as store:
        kept = await store.load("shared-id", tenant="acme")
        assert [m.text for m in kept.messages] == ["acme's secret"]


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ({"query": "tent", "roles": ["wizard"]}, "unknown role 'wizard'"),
        ({"query": "tent", "limit": "abc"}, "limit must be a whole number from 1 to 50, not 'abc'"),
        ({"query": "tent", "limit": 2.5}, "limit must be a whole number from 1 to 50, not 2.5"),
        ({"query": 5}, "query must be text"),
        ({"query": "tent", "conversation_id": 7}, "conversation_id must be text or null"),
    ],
    ids=["role", "limit-text", "limit-fraction", "query-number", "conversation-number"],
)
async def test_a_search_refusal_reaches_the_model_as_the_documented_text(
    db: Path, arguments: dict[str, Any], why: str
) -> None:
    """Through ``function_tool`` and the SDK's own Runner, the model's next request carries the
    tool's ``"search refused: …"`` (docs/search.md), not the SDK's generic error text: the SDK
    validates arguments against the tool's signature, which describes but does not restrict."""
    requests: list[Any] = []

    def answer(call: Any) -> list[Any]:
        requests.append(call.input)
        return [agents_text("Understood.")]

    model = ScriptedModel(
        [
            ModelStep.respond(
                lambda call: [function_call("search_conversations", arguments, call_id="c1")]
            ),
            ModelStep.respond(answer),
        ]
    )
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        conv = await store.create_conversation(tenant="u")
        await store.append(conv.id, Message.user("pack the tent"), tenant="u")
        tool = function_tool(search_tool(store, tenant="u"))
        schema = tool.params_json_schema["properties"]
        assert schema["roles"]["anyOf"][0]["items"]["enum"] == [
            "system",
            "user",
            "assistant",
            "tool",
        ]
        assert (schema["limit"]["minimum"], schema["limit"]["maximum"]) == (1, 50)
        agent = Agent(name="a", model=model, tools=[tool])
        result = await Runner.run(agent, "find my tent")
    assert result.final_output == "Understood."
    (request,) = requests
    outputs = _tool_outputs(request)
    assert [o["call_id"] for o in outputs] == ["c1"]
    assert outputs[0]["output"].startswith("search refused: ")
    assert why in outputs[0]["output"]


async def test_a_valid_search_reaches_the_model_as_hits(db: Path) -> None:
    requests: list[Any] = []

    def answer(call: Any) -> list[Any]:
        requests.append(call.input)
        return [agents_text("Found it.")]

    call = function_call("search_conversations", {"query": "tent", "roles": ["user"]}, call_id="c1")
    model = ScriptedModel([ModelStep.respond(lambda _: [call]), ModelStep.respond(answer)])
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        conv = await store.create_conversation(tenant="u")
        await store.append(
            conv.id, [Message.user("pack the tent"), Message.assistant("tent packed")], tenant="u"
        )
        agent = Agent(name="a", model=model, tools=[function_tool(search_tool(store, tenant="u"))])
        await Runner.run(agent, "find my tent")
    (request,) = requests
    (output,) = _tool_outputs(request)
    hits = ast.literal_eval(output["output"])  # the SDK sends a list result as its str()
    assert [(h["seq"], h["role"], h["snippet"]) for h in hits] == [(1, "user", "pack the ⟦tent⟧")]


def _tool_outputs(request: list[Any]) -> list[dict[str, Any]]:
    return [i for i in request if isinstance(i, dict) and i.get("type") == "function_call_output"]


def agents_text(text: str) -> Any:
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    return ResponseOutputMessage(
        id="msg_x",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def test_one_session_serves_many_event_loops_and_threads(db: Path) -> None:
    session = ConvstoreSession("loops", url=f"sqlite+aiosqlite:///{db}")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            asyncio.run(session.add_items([{"role": "user", "content": f"{n}"}]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(asyncio.run(session.get_items())) == 4
    session.close()
    session.close()


async def test_a_cancelled_write_still_completes(session: ConvstoreSession) -> None:
    task = asyncio.create_task(session.add_items([{"role": "user", "content": "kept"}]))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await session.get_items() == [{"role": "user", "content": "kept"}]


async def test_repeated_calls_and_outputs_are_kept_like_a_list_would(
    session: ConvstoreSession, db: Path
) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    first = {"type": "function_call_output", "call_id": "c1", "output": "a"}
    second = {"type": "function_call_output", "call_id": "c1", "output": "b"}
    batches = [[call, first], [second], [call], [call, call]]
    for batch in batches:
        await session.add_items(copy.deepcopy(batch))
    assert await session.get_items() == [item for batch in batches for item in batch]
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        (stored,) = (await store.load("s1")).tool_calls
    assert (stored.id, stored.status, stored.output) == ("c1", "complete", JsonOutput(value="a"))


@pytest.mark.parametrize(
    ("target", "model"),
    [
        ("openai-chat", "gpt-4.1"),
        ("openai-responses", "gpt-5"),
        ("anthropic", "claude-sonnet-4-5"),
        ("gemini", "gemini-2.5-pro"),
        ("mistral", "mistral-large-latest"),
        ("kimi", "kimi-k2"),
    ],
)
async def test_every_item_kind_renders_for_every_target(
    session: ConvstoreSession, db: Path, target: str, model: str
) -> None:
    await session.add_items(copy.deepcopy(ITEMS))
    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        rendered = await store.render("s1", target, model=model)
    wire = json.dumps(rendered.payload)
    for expected in ("Be brief.", "What is this?", "screenshot", "Oslo", "It is 3 degrees."):
        assert expected in wire


def store_threads() -> list[threading.Thread]:
    """The threads of open stores: a blocking store's loop, and SQLite's driver threads."""
    return [
        t
        for t in threading.enumerate()
        if t.name == "convstore-sync-loop" or type(t).__module__.startswith("aiosqlite")
    ]


async def test_sessions_on_one_url_share_one_store(db: Path, tmp_path: Path) -> None:
    before = len(store_threads())
    url = f"sqlite+aiosqlite:///{db}"
    sessions = [ConvstoreSession(f"s{n}", url=url) for n in range(20)]
    other = ConvstoreSession("elsewhere", url=f"sqlite+aiosqlite:///{tmp_path / 'other.db'}")
    try:
        await asyncio.gather(
            *(s.add_items([{"role": "user", "content": s.session_id}]) for s in sessions)
        )
        await other.add_items([{"role": "user", "content": "other"}])
        loops = [t for t in store_threads() if t.name == "convstore-sync-loop"]
        assert len(loops) == 2  # one store per URL, not one per session
        one_store = len(store_threads()) - before
        for s in sessions:
            assert await s.get_items() == [{"role": "user", "content": s.session_id}]
        for s in sessions[:-1]:
            s.close()
        # The store stays while one session still holds it, and serves a reopened session.
        assert await sessions[-1].get_items() == [{"role": "user", "content": "s19"}]
        assert await sessions[0].get_items() == [{"role": "user", "content": "s0"}]
        assert len(store_threads()) - before == one_store
    finally:
        for s in [*sessions, other]:
            s.close()
    assert len(store_threads()) == before  # the last session closed the store


async def test_pop_item_pops_the_newest_item_of_a_long_session(session: ConvstoreSession) -> None:
    items = [
        {"role": "user", "content": f"question {n}"} if n % 2 == 0 else
        {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"}
        for n in range(200)
    ]  # fmt: skip
    await session.add_items(copy.deepcopy(items))
    await session.add_items([{"role": "user", "content": [
        {"type": "input_image", "image_url": data_url(IMAGE)}]}])  # fmt: skip
    assert (await session.pop_item())["content"][0]["image_url"] == data_url(IMAGE)  # type: ignore[index]
    for expected in reversed(items[-5:]):
        assert await session.pop_item() == expected
    assert await session.get_items(limit=3) == items[-8:-5]


async def test_each_session_call_is_one_thread_hop(db: Path) -> None:
    # On a shared store: each call hands its statements to the connection's thread once, as
    # SQLiteSession makes one to_thread hop (tests/db/test_sqlite_hops.py for the store).
    # pop_item is two: the item is read (with its bytes) at a revision, then popped at it, so
    # that the references that find the bytes are still there when they are read.
    from convstore.db.sqlite.backend import SqliteBackend

    async with ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        backend = store.backend
        assert isinstance(backend, SqliteBackend)
        session = ConvstoreSession("hops", store=store)
        numbers = iter(range(100))

        def turn() -> list[dict[str, Any]]:
            # ITEMS without inline bytes, its call ids new each turn (a repeat is the rare case)
            text = json.dumps([item for item in ITEMS if "image_url" not in json.dumps(item)])
            return json.loads(text.replace('"call_', f'"call_{next(numbers)}_'))

        await session.add_items(turn())  # creates the conversation
        calls = {
            "add_items": (lambda: session.add_items(turn()), 1),
            "get_items()": (session.get_items, 1),
            "get_items(limit=5)": (lambda: session.get_items(limit=5), 1),
            "pop_item": (session.pop_item, 2),
        }
        hops = {}
        for name, (call, _) in calls.items():
            await call()  # warm-up: reader connections open, statements prepared
            before = backend.hops
            await call()
            hops[name] = backend.hops - before
        assert hops == {name: expected for name, (_, expected) in calls.items()}
