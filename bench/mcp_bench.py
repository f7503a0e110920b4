"""What the MCP layer adds to a store read, and how long ``convstore mcp`` takes to answer.

Each tool is called through the SDK's in-process client (middleware, argument checks, result
views, output-schema validation, JSON) beside the store call it wraps, interleaved, on a SQLite
store of 360 conversations (tests/mcp_server/seed.py 40 times: the search tests' corpus, an
agent run with every tool-call lifecycle, a long chat). It prints the median wall time of
each, and with ``--callgrind`` the instructions per call of both (callgrind counts repeatably
on a loaded machine). Then the
stdio start-up: from spawning ``python -m convstore mcp`` to the answer to ``initialize``.
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
from tests.mcp_server.seed import Seeded, seed

from convstore import ConversationStore
from convstore.mcp import create_server

ROUNDS = 40
CALLGRIND_CALLS = 20
CALLGRIND_COPIES = 3  # seeding under valgrind is slow; the calls read the same rows
COPIES = 40  # the seed 40 times: 360 conversations

Operation = tuple[str, Callable[[], Awaitable[Any]], Callable[[], Awaitable[Any]]]


def _operations(store: ConversationStore, client: Client, seeded: Seeded) -> list[Operation]:
    tenant, agent = seeded.tenant, seeded.agent

    async def direct_call() -> Any:
        return (await store.load(agent, tenant=tenant)).get_tool_call_or_none("call_mail")

    return [
        (
            "search_conversations",
            lambda: store.search("report", tenant=tenant, limit=10),
            lambda: client.call_tool("search_conversations", {"query": "report"}),
        ),
        (
            "list_conversations",
            lambda: store.list_conversations(tenant=tenant, limit=20),
            lambda: client.call_tool("list_conversations", {}),
        ),
        (
            "read_conversation",
            lambda: store.load(agent, tenant=tenant, last=20),
            lambda: client.call_tool("read_conversation", {"conversation_id": agent}),
        ),
        (
            "get_tool_call",
            direct_call,
            lambda: client.call_tool(
                "get_tool_call", {"conversation_id": agent, "call_id": "call_mail"}
            ),
        ),
    ]


async def _seeded(where: str, copies: int = COPIES) -> tuple[str, Seeded]:
    url = f"sqlite+aiosqlite:///{Path(where) / 'bench.db'}"
    async with ConversationStore(url, blobs=f"{where}/blobs") as store:
        for _ in range(copies - 1):
            await seed(store, "bench")
        seeded = await seed(store, "bench")
    return url, seeded


async def wall(where: str) -> dict[str, dict[str, float]]:
    url, seeded = await _seeded(where)
    results: dict[str, dict[str, list[float]]] = {}
    async with (
        ConversationStore(url, blobs=f"{where}/blobs") as store,
        Client(create_server(store, tenant="bench"), cache=None) as client,
    ):
        operations = _operations(store, client, seeded)
        for _, direct, through in operations:  # warm caches
            await direct()
            await through()
        for _ in range(ROUNDS):
            for name, direct, through in operations:
                for kind, run in (("store", direct), ("mcp", through)):
                    start = time.perf_counter()
                    await run()
                    elapsed = (time.perf_counter() - start) * 1000
                    results.setdefault(name, {}).setdefault(kind, []).append(elapsed)
    return {
        name: {kind: round(statistics.median(v), 2) for kind, v in kinds.items()}
        for name, kinds in results.items()
    }


async def _inside_callgrind(library: str, where: str) -> None:
    import ctypes

    helper = ctypes.CDLL(library)
    url, seeded = await _seeded(where, copies=CALLGRIND_COPIES)
    async with (
        ConversationStore(url, blobs=f"{where}/blobs") as store,
        Client(create_server(store, tenant="bench"), cache=None) as client,
    ):
        for name, direct, through in _operations(store, client, seeded):
            for kind, run in (("store", direct), ("mcp", through)):
                await run()
                helper.cg_on()
                for _ in range(CALLGRIND_CALLS):
                    await run()
                helper.cg_off(f"{name}.{kind}".encode())


def callgrind() -> dict[str, dict[str, int]] | str:
    from bench.callgrind_bench import _build_helper, _parse, unavailable

    missing = unavailable()
    if missing is not None:
        return f"not run: {missing}"
    with tempfile.TemporaryDirectory(prefix="mcp-bench-cg-") as out:
        directory = Path(out)
        library = _build_helper(directory)
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={directory}/cg.out.%p",
            sys.executable, "-m", "bench.mcp_bench", "--inside-callgrind", str(library), out,
        ]  # fmt: skip
        proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
        totals = _parse(directory, "cg.out.")
    if proc.returncode != 0 or not totals:
        return f"not run: exit status {proc.returncode}: {proc.stderr.strip()[-400:]}"
    per: dict[str, dict[str, int]] = {}
    for key, total in totals.items():
        name, _, kind = key.partition(".")
        per.setdefault(name, {})[kind] = round(total / CALLGRIND_CALLS)
    return per


def startup(where: str, url: str) -> float:
    """Median seconds from spawning ``convstore mcp`` to its answer to ``initialize``."""
    request = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}},
    }  # fmt: skip
    times = []
    for _ in range(3):
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
    parser.add_argument("--callgrind", action="store_true", help="count instructions too")
    parser.add_argument("--inside-callgrind", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside_callgrind:
        library, out = args.inside_callgrind
        with tempfile.TemporaryDirectory(dir=out) as where:
            asyncio.run(_inside_callgrind(library, where))
        return
    with tempfile.TemporaryDirectory() as where:
        results = asyncio.run(wall(where))
        print("| tool | store call, median ms | through MCP, median ms |")
        print("|---|---:|---:|")
        for name, kinds in results.items():
            print(f"| {name} | {kinds['store']} | {kinds['mcp']} |")
        url = f"sqlite+aiosqlite:///{Path(where) / 'bench.db'}"
        print(f"\nstdio start-up to the initialize answer: {startup(where, url)} s (median of 3)")
    if args.callgrind:
        counts = callgrind()
        if isinstance(counts, str):
            print(f"\ncallgrind: {counts}")
            return
        print("\n| tool | store call, instructions | through MCP, instructions |")
        print("|---|---:|---:|")
        for name, kinds in counts.items():
            print(f"| {name} | {kinds.get('store', 0):,} | {kinds.get('mcp', 0):,} |")


if __name__ == "__main__":
    main()
