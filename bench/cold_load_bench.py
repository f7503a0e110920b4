"""Cold full loads: a new process opens the store and loads one whole conversation.

Run: ``.venv-bench/bin/python -m bench.cold_load_bench [--turns 500] [--repeat 7]``.

One SQLite file per store is written once (``--turns`` turns of `bench.workload`); then, for
``--repeat`` rounds, every store in turn (interleaved, so a noisy neighbour slows all of them)
gets a fresh process that opens it and times:

- ``first``: the first full load in that process (nothing decoded or cached yet, statements
  not yet prepared: what a CLI call or a worker's first request pays);
- ``again``: a second full load in the same process. With convstore's message cache off
  (``convstore_nocache``) that is the cold decode with warm code; with it on (the default)
  a reload that decodes nothing.

Medians per store and their ratio to openai-agents' ``SQLiteSession.get_items()``. Wall times
on a shared machine: see `bench.callgrind_bench` for instruction counts.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.peers.runner import call

PEERS = ("convstore_nocache", "convstore_store", "agents_sqlite")
KEY = "cold-load"


async def _fill(peer: str, path: Path, turns: int) -> str:
    module = importlib.import_module(f"bench.peers.{peer}")
    async with module.open_store(path) as store:
        conversation = await call(store.new_conversation, KEY)
        for n in range(turns):
            await call(store.append_turn, conversation, store.payload(n))
        return conversation if isinstance(conversation, str) else KEY


async def _inside(peer: str, path: Path, handle: str) -> dict[str, Any]:
    module = importlib.import_module(f"bench.peers.{peer}")
    async with module.open_store(path) as store:
        # convstore's handle is its conversation id; the sessions reopen theirs by key.
        conversation = (
            handle if peer.startswith("convstore") else await store.new_conversation(handle)
        )
        timings = []
        for _ in range(2):
            start = time.perf_counter()
            count = await call(store.load_all, conversation)
            timings.append((time.perf_counter() - start) * 1e3)
    return {"first_ms": timings[0], "again_ms": timings[1], "records": count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    parser.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--handle", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(json.dumps(asyncio.run(_inside(args.inside, args.path, args.handle))))
        return
    peers = [p for p in args.peers.split(",") if p]
    samples: dict[str, list[dict[str, Any]]] = {p: [] for p in peers}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        files = {}
        for peer in peers:
            path = Path(tmp) / peer / "store.db"
            path.parent.mkdir()
            files[peer] = (path, asyncio.run(_fill(peer, path, args.turns)))
        for _ in range(args.repeat):
            for peer in peers:
                path, handle = files[peer]
                command = [sys.executable, "-m", "bench.cold_load_bench", "--inside", peer,
                           "--path", str(path), "--handle", handle]  # fmt: skip
                out = subprocess.run(command, capture_output=True, text=True, check=True)
                samples[peer].append(json.loads(out.stdout))
    result = {"turns": args.turns, "repeat": args.repeat, "peers": medians(samples)}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=1))


def medians(samples: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per store, the median of each ``*_ms`` figure and its ratio to ``SQLiteSession``'s;
    printed one line a store."""
    base = samples.get("agents_sqlite")
    table = {}
    for peer, runs in samples.items():
        row = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.endswith("_ms")}
        line = [f"{peer:<20}"]
        for k in list(row):
            line.append(f"{k.removesuffix('_ms')} {row[k]:8.2f} ms")
            if base:
                row[k.replace("_ms", "_ratio")] = row[k] / statistics.median(r[k] for r in base)
                line.append(f"({row[k.replace('_ms', '_ratio')]:.2f}x SQLiteSession)")
        print("  ".join(line))
        table[peer] = row
    return table


if __name__ == "__main__":
    main()
