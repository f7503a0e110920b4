"""The framework integrations beside each framework's own store: ``make bench-frameworks``.

Run from the repository root, each in the environment holding its framework::

    .venv-adk/bin/python -m bench.frameworks_bench adk [--turns 200] [--writers 20]
    .venv-pydantic-ai/bin/python -m bench.frameworks_bench pydantic-ai [--turns 200]

- ``adk``: google-adk's `DatabaseSessionService` (``sqlite+aiosqlite``) beside
  `ConvstoreSessionService` (convstore on SQLite, blobs in a local directory). A turn of the
  shared workload (`bench.workload.turn_data`) is the four events ADK's runner writes for it
  (user text; the model's two function calls; the two function responses; the reply), one
  ``append_event`` each. Measured: sequential append throughput (events/s) into one session;
  ``get_session`` of that session, whole and with ``num_recent_events=50`` (ms, median of 5);
  and ``--writers`` concurrent writers, each appending its own session's turns, counting the
  appends that raised and the turns left half-written (some but not all four events stored).
- ``pydantic-ai``: pydantic-ai's `InMemoryConversationStore` beside `ConvstoreConversationStore`
  on SQLite. A turn is the four messages a tool-using agent run adds (request, response with two
  tool calls, the tool returns, the reply); each turn is one ``load`` + ``save``, as an
  application does around ``agent.run``. Measured: turns/s and the final ``load`` (ms).

Numbers go to stdout; nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness.report import write_json
from bench.harness.timing import median_ms
from bench.workload import turn_data

# -- google-adk -----------------------------------------------------------------------------------


def _adk_events(turn: int, invocation: str) -> list[Any]:
    from google.adk.events.event import Event
    from google.genai import types

    data = turn_data(turn)

    def event(author: str, role: str, parts: list[Any]) -> Any:
        content = types.Content(role=role, parts=parts)
        return Event(invocation_id=invocation, author=author, content=content)

    names = {call_id: name for call_id, name, _ in data.calls}
    return [
        event("user", "user", [types.Part(text=data.user)]),
        event(
            "agent",
            "model",
            [
                types.Part(function_call=types.FunctionCall(id=i, name=n, args=a))
                for i, n, a in data.calls
            ],
        ),
        event(
            "agent",
            "user",
            [
                types.Part(
                    function_response=types.FunctionResponse(
                        id=i, name=names[i], response={"result": out}
                    )
                )
                for i, out in data.results
            ],
        ),
        event("agent", "model", [types.Part(text=data.reply)]),
    ]


async def _adk_workload(service: Any, turns: int, writers: int) -> dict[str, float]:
    from google.adk.sessions.base_session_service import GetSessionConfig

    session = await service.create_session(app_name="bench", user_id="u", session_id="main")
    batches = [_adk_events(t, f"inv-{t}") for t in range(turns)]
    start = time.perf_counter()
    for batch in batches:
        for event in batch:
            await service.append_event(session, event)
    elapsed = time.perf_counter() - start

    async def load(config: Any = None) -> None:
        got = await service.get_session(
            app_name="bench", user_id="u", session_id="main", config=config
        )
        assert got is not None

    full_ms = await median_ms(load)
    last_ms = await median_ms(lambda: load(GetSessionConfig(num_recent_events=50)))

    errors = 0
    writer_turns = max(turns // 10, 5)

    async def writer(index: int) -> None:
        nonlocal errors
        sid = f"w{index}"
        for _ in range(3):  # a failed create is counted and retried
            try:
                own = await service.create_session(app_name="bench", user_id="u", session_id=sid)
                break
            except Exception:
                errors += 1
        else:
            return
        for t in range(writer_turns):
            for event in _adk_events(t, f"{sid}-{t}"):
                try:
                    await service.append_event(own, event)
                except Exception:
                    errors += 1

    start = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    concurrent_s = time.perf_counter() - start
    half = 0
    for index in range(writers):
        got = await service.get_session(app_name="bench", user_id="u", session_id=f"w{index}")
        counts: dict[str, int] = {}
        for event in got.events if got is not None else []:
            counts[event.invocation_id] = counts.get(event.invocation_id, 0) + 1
        half += sum(1 for t in range(writer_turns) if 0 < counts.get(f"w{index}-{t}", 0) < 4)
    return {
        "append events/s": turns * 4 / elapsed,
        "get_session ms (all)": full_ms,
        "get_session ms (last 50)": last_ms,
        "concurrent events/s": writers * writer_turns * 4 / concurrent_s,
        "concurrent errors": errors,
        "half-written turns": half,
    }


async def bench_adk(turns: int, writers: int) -> dict[str, Any]:
    from google.adk.sessions import DatabaseSessionService

    from convstore import ConversationStore
    from convstore.integrations.google_adk import ConvstoreSessionService

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        adk = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{root / 'adk.db'}")
        try:
            results["DatabaseSessionService"] = await _adk_workload(adk, turns, writers)
        finally:
            await adk.close()
        url = f"sqlite+aiosqlite:///{root / 'convstore.db'}"
        async with ConversationStore(url, blobs=str(root / "blobs")) as store:
            ours = ConvstoreSessionService(store=store)
            results["ConvstoreSessionService"] = await _adk_workload(ours, turns, writers)
    return _table(results, "DatabaseSessionService", "ConvstoreSessionService")


# -- pydantic-ai ----------------------------------------------------------------------------------


def _pydantic_turn(turn: int) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    data = turn_data(turn)
    names = {call_id: name for call_id, name, _ in data.calls}
    return [
        ModelRequest(parts=[UserPromptPart(data.user)]),
        ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=i) for i, n, a in data.calls]),
        ModelRequest(
            parts=[ToolReturnPart(names[i], out, tool_call_id=i) for i, out in data.results]
        ),
        ModelResponse(parts=[TextPart(data.reply)]),
    ]


async def _pydantic_workload(backend: Any, turns: int) -> dict[str, float]:
    from pydantic_ai.conversation import Conversation

    start = time.perf_counter()
    for turn in range(turns):
        conversation = await backend.load("main") or Conversation(conversation_id="main")
        conversation.messages = [*conversation.messages, *_pydantic_turn(turn)]
        await backend.save(conversation)
    elapsed = time.perf_counter() - start
    return {
        "turns/s (load + save)": turns / elapsed,
        "load ms (all)": await median_ms(lambda: backend.load("main")),
        "load ms (last 50)": await median_ms(lambda: backend.load("main", limit=50)),
    }


async def bench_pydantic_ai(turns: int) -> dict[str, Any]:
    from pydantic_ai.conversation_store import InMemoryConversationStore

    from convstore import ConversationStore
    from convstore.integrations.pydantic_ai import ConvstoreConversationStore

    results = {
        "InMemoryConversationStore": await _pydantic_workload(InMemoryConversationStore(), turns)
    }
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        url = f"sqlite+aiosqlite:///{root / 'convstore.db'}"
        async with ConversationStore(url, blobs=str(root / "blobs")) as store:
            backend = ConvstoreConversationStore(store=store)
            results["ConvstoreConversationStore"] = await _pydantic_workload(backend, turns)
    return _table(results, "InMemoryConversationStore", "ConvstoreConversationStore")


def _table(results: dict[str, dict[str, float]], peer: str, ours: str) -> dict[str, Any]:
    """Print the table; the result, as `bench.compare --frameworks-json` reads it."""
    print(f"| measure | {peer} | {ours} | ratio (ours / peer) |")
    print("|---|---:|---:|---:|")
    for measure, value in results[peer].items():
        mine = results[ours][measure]
        ratio = f"{mine / value:.2f}" if value else "-"
        print(f"| {measure} | {value:,.1f} | {mine:,.1f} | {ratio} |")
    return {"peer": peer, "ours": ours, "results": results}


def main() -> None:
    """Parse arguments and run one framework's benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=["adk", "pydantic-ai"])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--writers", type=int, default=20)
    parser.add_argument("--json-out", type=Path, help="also write the result here")
    args = parser.parse_args()
    if args.framework == "adk":
        result = asyncio.run(bench_adk(args.turns, args.writers))
    else:
        result = asyncio.run(bench_pydantic_ai(args.turns))
    if args.json_out is not None:
        write_json(args.json_out, {"framework": args.framework, **result})


if __name__ == "__main__":
    main()
