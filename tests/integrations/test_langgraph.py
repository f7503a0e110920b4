"""`ConvstoreSaver` under a real LangGraph agent, judged against LangGraph's `InMemorySaver`.

The agent (tests/integrations/langgraph_agent.py: a model node, a tool node, a fake chat model
from langchain_core, no network) runs the same turns on both savers. Every state either gives —
after each turn, at every checkpoint of the history, in a new process that resumes the thread,
at an older checkpoint (time travel) and after a fork from it — must be equal. The thread's
conversation holds each message once, is the path the newest checkpoint holds, and renders to
Anthropic and Gemini with every call answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, Role
from tests.integrations.pydantic_ai_google_adk_support import require

require("langgraph")

from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from convstore.integrations.langgraph import ConvstoreSaver  # noqa: E402
from tests.integrations.langgraph_agent import (  # noqa: E402
    build,
    config,
    question,
    snapshot,
    snapshot_json,
)

ROOT = Path(__file__).resolve().parents[2]
TURNS = 200
"""Turns of the agent run, on each database."""


async def _states(graph: Any, cfg: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [snapshot(state) async for state in graph.aget_state_history(cfg)]


def _record_ids(messages: list[Any]) -> list[str]:
    return [m.native.data["data"]["id"] for m in messages]


@dataclass
class _Reference:
    """What `InMemorySaver` gives for the agent run, computed once for both databases (the run
    is deterministic, ids included; the reference's history walk is most of the test's time).
    """

    every_50: dict[int, tuple[Any, ...]]
    """The state after each 50th turn."""
    at_end: dict[str, Any]
    """``snapshot_json`` after the run, and after the resumed process's two turns."""
    resumed: dict[str, Any]
    past: tuple[Any, ...]
    """The state at the end of the middle turn (time travel's target)."""
    forked: tuple[Any, ...]
    """The state after a turn run from ``past``."""
    history: list[tuple[Any, ...]]
    """Every checkpoint's state after the fork, newest first."""


_reference: list[_Reference] = []


@pytest.fixture(scope="module", autouse=True)
def _drop_the_reference() -> Iterator[None]:
    """Forget the reference once the module's tests are done: its history holds every
    checkpoint's messages (~300,000 objects), which every later full garbage collection of the
    session would walk again (pytest's own at the end takes several)."""
    yield
    _reference.clear()


async def _reference_run() -> _Reference:
    if not _reference:
        cfg = config("reference")
        graph = build(InMemorySaver())
        every_50 = {}
        for turn in range(1, TURNS + 1):
            await graph.ainvoke({"messages": [question(turn)]}, cfg)
            if turn % 50 == 0:
                every_50[turn] = snapshot(await graph.aget_state(cfg))
            if turn == TURNS // 2:
                past = (await graph.aget_state(cfg)).config
        at_end = snapshot_json(await graph.aget_state(cfg))
        for turn in (TURNS + 1, TURNS + 2):
            await graph.ainvoke({"messages": [question(turn)]}, cfg)
        resumed = snapshot_json(await graph.aget_state(cfg))
        past_state = snapshot(await graph.aget_state(past))
        await graph.ainvoke({"messages": [question(1000)]}, past)
        forked = snapshot(await graph.aget_state(cfg))
        history = await _states(graph, cfg)
        _reference.append(_Reference(every_50, at_end, resumed, past_state, forked, history))
    return _reference[0]


async def test_agent_run_resume_time_travel_and_fork(db_url: str, tmp_path: Path) -> None:
    turns = TURNS
    thread = f"agent-{uuid.uuid4().hex}"
    cfg = config(thread)
    blobs = str(tmp_path / "blobs")
    reference = await _reference_run()

    async with ConversationStore(
        db_url, blobs=blobs, auto_migrate=True, sqlite_synchronous="normal"
    ) as store:
        ours = build(ConvstoreSaver(store=store))
        for turn in range(1, turns + 1):
            await ours.ainvoke({"messages": [question(turn)]}, cfg)
            if turn % 50 == 0:
                assert snapshot(await ours.aget_state(cfg)) == reference.every_50[turn], turn
            if turn == turns // 2:
                past = (await ours.aget_state(cfg)).config

        # Messages once: the conversation is the thread's message list, one row per message.
        state = await ours.aget_state(cfg)
        conversation = await store.load(thread)
        assert len(conversation.messages) == 4 * turns
        assert _record_ids(conversation.messages) == [m.id for m in state.values["messages"]]
        assert all(call.status == "complete" for call in conversation.tool_calls)

    # A new process resumes the thread from the database alone.
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integrations.langgraph_resume",
            *(db_url, blobs, thread, str(turns + 1), str(turns + 2)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    )
    result = json.loads(resumed.stdout)
    assert result["before"] == reference.at_end
    assert result["after"] == reference.resumed

    # Time travel to the end of the run's middle turn and a fork from there, through a saver
    # that has seen nothing of the thread yet.
    async with ConversationStore(db_url, blobs=blobs) as store:
        ours = build(ConvstoreSaver(store=store))
        assert snapshot(await ours.aget_state(past)) == reference.past
        await ours.ainvoke({"messages": [question(1000)]}, past)
        forked = await ours.aget_state(cfg)
        assert snapshot(forked) == reference.forked
        assert len(forked.values["messages"]) == 2 * turns + 4
        # Every checkpoint of the thread (both branches), newest first, equals the reference's.
        assert await _states(ours, cfg) == reference.history

        # The fork is a convstore branch, and the active path is what the fork's state holds.
        branches = await store.branches(thread)
        assert len(branches) == 2
        conversation = await store.load(thread)
        assert _record_ids(conversation.messages) == [m.id for m in forked.values["messages"]]

        calls = sum(len(m.tool_calls) for m in conversation.messages)
        assert calls == turns // 2 + 1
        anthropic = await store.render(thread, "anthropic", model="claude-sonnet-4-5")
        blocks = [
            block
            for message in anthropic.payload["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
        ]
        assert sum(b["type"] == "tool_use" for b in blocks) == calls
        assert sum(b["type"] == "tool_result" for b in blocks) == calls
        assert not anthropic.diagnostics.synthetic_results
        gemini = await store.render(thread, "gemini", model="gemini-2.5-flash")
        parts = [p for content in gemini.payload["contents"] for p in content["parts"]]
        assert sum("functionCall" in p for p in parts) == calls
        assert sum("functionResponse" in p for p in parts) == calls
        assert not gemini.diagnostics.synthetic_results
        assert conversation.messages[-1].role == Role.ASSISTANT


async def test_removed_and_edited_messages_make_the_conversation_follow(
    db_url: str, tmp_path: Path
) -> None:
    """``RemoveMessage`` mid-list and at the end, and an edit by id, through ``aupdate_state``:
    every state equals the reference's, and after each change the conversation's active path is
    exactly the message list of the newest checkpoint (a change mid-list is a branch from the
    message before it)."""
    from langchain_core.messages import AIMessage, RemoveMessage

    thread = f"edits-{uuid.uuid4().hex}"
    cfg = config(thread)
    reference = build(InMemorySaver())
    async with ConversationStore(db_url, blobs=str(tmp_path / "blobs"), auto_migrate=True) as store:
        ours = build(ConvstoreSaver(store=store))

        async def both(update: dict[str, Any] | None = None, turn: int | None = None) -> None:
            for graph in (ours, reference):
                if update is not None:
                    await graph.aupdate_state(cfg, update)
                if turn is not None:
                    await graph.ainvoke({"messages": [question(turn)]}, cfg)
            state = await ours.aget_state(cfg)
            assert snapshot(state) == snapshot(await reference.aget_state(cfg))
            conversation = await store.load(thread)
            assert _record_ids(conversation.messages) == [m.id for m in state.values["messages"]]

        for turn in (1, 2, 3):
            await both(turn=turn)
        rows = len((await store.load(thread)).messages)
        await both({"messages": [RemoveMessage(id="human-2")]})
        assert len(await store.branches(thread)) == 2
        # Removing the newest messages moves the head back: nothing is stored again.
        await both(
            {"messages": [RemoveMessage(id="ai-3-reply"), RemoveMessage(id="tool-call_0003")]}
        )
        edited = AIMessage(content="An edited answer.", id="ai-1-reply")
        await both({"messages": [edited]})
        assert (await store.load(thread)).messages[3].native.data["data"]["content"] == (  # type: ignore[union-attr]
            "An edited answer."
        )
        await both(turn=4)
        stored = await store.get_messages(thread, list(range(1, rows + 1)))
        assert [m.seq for m in stored] == list(
            range(1, rows + 1)
        )  # the first rows kept as they were

        # Every checkpoint reads back as the reference's, through a saver that saw nothing yet.
        fresh = build(ConvstoreSaver(store=store))
        assert await _states(fresh, cfg) == await _states(reference, cfg)


async def test_a_thread_id_another_tenant_holds_is_refused_by_name(db_url: str) -> None:
    """The first checkpoint of a thread whose id another tenant's conversation holds raises
    `ConversationOwnedByAnotherTenantError` (not "not found" while creating it), and leaves
    that conversation as it was."""
    from convstore import ConversationOwnedByAnotherTenantError

    thread = f"lg-thread-{uuid.uuid4().hex}"
    async with ConversationStore(db_url, blobs="memory://lg-tenants", auto_migrate=True) as store:
        acme = build(ConvstoreSaver(store=store, tenant="acme"))
        await acme.ainvoke({"messages": [question(1)]}, config(thread))
        before = await store.load(thread, tenant="acme")
        saver = ConvstoreSaver(store=store, tenant="other")
        with pytest.raises(ConversationOwnedByAnotherTenantError, match=thread):
            await build(saver).ainvoke({"messages": [question(2)]}, config(thread))
        assert await saver.aget_tuple(config(thread)) is None  # reading: as if missing
        after = await store.load(thread, tenant="acme")
        assert after.revision == before.revision
        assert [m.id for m in after.messages] == [m.id for m in before.messages]
