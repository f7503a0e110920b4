"""What the MCP layer adds to a store read, and how long ``convstore mcp`` takes to answer.

Each tool is called three ways, interleaved: the store call it wraps, the server's own
``call_tool`` (tool body, result views, the SDK's output validation) and the SDK's in-process
client (the protocol on both sides: argument checks, JSON, the client's own check of the result
against the tool's output schema), on a SQLite store of 360 conversations
(tests/mcp_server/seed.py 40 times: the search tests' corpus, an agent run with every tool-call
lifecycle, a long chat). It prints the median wall time of each, and with ``--callgrind`` the
instructions per call (callgrind counts repeatably on a loaded machine). Then the stdio
start-up: from spawning ``python -m convstore mcp`` to the answer to ``initialize``.
Run: ``.venv/bin/python -m bench.mcp_bench [--callgrind]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer
from tests.mcp_server.seed import Seeded, seed

from bench.harness.callgrind import Counter, counted_run, unavailable
from convstore import ConversationStore
from convstore.mcp import create_server

ROUNDS = 40
CALLGRIND_CALLS = 20
CALLGRIND_COPIES = 3  # seeding under valgrind is slow; the calls read the same rows
COPIES = 40  # the seed 40 times: 360 conversations

Run = Callable[[], Awaitable[Any]]
Operation = tuple[str, dict[str, Run]]
KINDS = ("store", "server", "client")


def _operations(
    store: ConversationStore, server: MCPServer[Any], client: Client, seeded: Seeded
) -> list[Operation]:
    """Per tool: the store call, the server's own ``call_tool`` (tool body, views, output
    validation; no protocol) and the SDK client's call (both sides of the protocol, the
    client's own check of the result against the output schema included)."""
    tenant, agent = seeded.tenant, seeded.agent
    arguments: dict[str, dict[str, Any]] = {
        "search_conversations": {"query": "report"},
        "list_conversations": {},
        "read_conversation": {"conversation_id": agent},
        "get_tool_call": {"conversation_id": agent, "call_id": "call_mail"},
    }

    async def direct_call() -> Any:
        return (await store.load(agent, tenant=tenant)).get_tool_call_or_none("call_mail")

    direct: dict[str, Run] = {
        "search_conversations": lambda: store.search("report", tenant=tenant, limit=10),
        "list_conversations": lambda: store.list_conversations(tenant=tenant, limit=20),
        "read_conversation": lambda: store.load(agent, tenant=tenant, last=20),
        "get_tool_call": direct_call,
    }

    def via_server(name: str) -> Run:
        return lambda: server.call_tool(name, arguments[name])

    def via_client(name: str) -> Run:
        return lambda: client.call_tool(name, arguments[name])

    return [
        (name, {"store": direct[name], "server": via_server(name), "client": via_client(name)})
        for name in arguments
    ]


async def _seeded(where: str, copies: int = COPIES) -> tuple[str, Seeded]:
    url = f"sqlite+aiosqlite:///{Path(where) / 'bench.db'}"
    async with ConversationStore(url, blobs=f"{where}/blobs") as store:
        for _ in range(copies - 1):
            await seed(store, "bench")
        seeded = await seed(store, "bench")
    return url, seeded


async def wall(
    where: str, rounds: int = ROUNDS, copies: int = COPIES
) -> dict[str, dict[str, float]]:
    url, seeded = await _seeded(where, copies)
    results: dict[str, dict[str, list[float]]] = {}
    async with ConversationStore(url, blobs=f"{where}/blobs") as store:
        server = create_server(store, tenant="bench")
        async with Client(server, cache=None) as client:
            operations = _operations(store, server, client, seeded)
            for _, runs in operations:  # warm caches
                for run in runs.values():
                    await run()
            for _ in range(rounds):
                for name, runs in operations:
                    for kind, run in runs.items():
                        start = time.perf_counter()
                        await run()
                        elapsed = (time.perf_counter() - start) * 1000
                        results.setdefault(name, {}).setdefault(kind, []).append(elapsed)
    return {
        name: {kind: round(statistics.median(v), 2) for kind, v in kinds.items()}
        for name, kinds in results.items()
    }


async def _inside_callgrind(counter: Counter, where: str) -> None:
    url, seeded = await _seeded(where, copies=CALLGRIND_COPIES)
    async with ConversationStore(url, blobs=f"{where}/blobs") as store:
        server = create_server(store, tenant="bench")
        async with Client(server, cache=None) as client:
            for name, runs in _operations(store, server, client, seeded):
                for kind, run in runs.items():
                    await run()
                    with counter.section(f"{name}.{kind}"):
                        for _ in range(CALLGRIND_CALLS):
                            await run()


def callgrind() -> dict[str, dict[str, int]] | str:
    missing = unavailable()
    if missing is not None:
        return f"not run: {missing}"
    totals, failure = counted_run("bench.mcp_bench", ["--inside"], timeout=3600)
    if failure is not None or not totals:
        return f"not run: {failure or 'nothing counted'}"
    per: dict[str, dict[str, int]] = {}
    for key, total in totals.items():
        name, _, kind = key.partition(".")
        per.setdefault(name, {})[kind] = round(total / CALLGRIND_CALLS)
    return per


def startup(where: str, url: str, startups: int = 3) -> float:
    """Median seconds from spawning ``convstore mcp`` to its answer to ``initialize``."""
    request = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}},
    }  # fmt: skip
    times = []
    for _ in range(startups):
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "convstore", "mcp", "--url", url, "--blobs", f"{where}/blobs"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        assert b'"serverInfo"' in proc.stdout.readline()
        times.append(time.perf_counter() - start)
        proc.stdin.close()
        proc.wait(timeout=60)
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"timed rounds ({ROUNDS})")
    parser.add_argument("--copies", type=int, default=COPIES, help=f"seed copies ({COPIES})")
    parser.add_argument("--startups", type=int, default=3, help="stdio start-ups timed (3)")
    parser.add_argument("--callgrind", action="store_true", help="count instructions too")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        with tempfile.TemporaryDirectory() as where:
            asyncio.run(_inside_callgrind(Counter(args.library), where))
        return
    with tempfile.TemporaryDirectory() as where:
        results = asyncio.run(wall(where, args.rounds, args.copies))
        print("| tool | store call, median ms | server.call_tool | SDK client call |")
        print("|---|---:|---:|---:|")
        for name, kinds in results.items():
            print(f"| {name} | {kinds['store']} | {kinds['server']} | {kinds['client']} |")
        url = f"sqlite+aiosqlite:///{Path(where) / 'bench.db'}"
        took = startup(where, url, args.startups)
        print(f"\nstdio start-up to the initialize answer: {took} s (median of {args.startups})")
    if args.callgrind:
        counts = callgrind()
        if isinstance(counts, str):
            print(f"\ncallgrind: {counts}")
            return
        print("\n| tool | store call, instructions | server.call_tool | SDK client call |")
        print("|---|---:|---:|---:|")
        for name, by_kind in counts.items():
            cells = " | ".join(f"{by_kind.get(kind, 0):,}" for kind in KINDS)
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
