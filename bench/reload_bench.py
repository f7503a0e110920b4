"""Warm reloads: a chat app reloads the whole history after each new turn.

Run: ``.venv-bench/bin/python -m bench.reload_bench [--turns 500] [--repeat 3]``.

For each store (convstore with its message cache on, the default; convstore with
``message_cache=0``; openai-agents' ``SQLiteSession``), on a fresh SQLite file: ``--turns``
times, append one turn of `bench.workload`, then load the whole conversation. Only the loads
are timed. Stores run interleaved, each repetition in its own process. Reports the mean
reload (over the whole conversation's growth) and the last one (at ``--turns`` turns), as
medians over repetitions, and each store's ratio to ``SQLiteSession``.
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

from bench.cold_load_bench import medians
from bench.peers.runner import call

PEERS = ("convstore_store", "convstore_nocache", "agents_sqlite")


async def _inside(peer: str, turns: int) -> dict[str, float]:
    module = importlib.import_module(f"bench.peers.{peer}")
    with tempfile.TemporaryDirectory(prefix="bench-reload-") as tmp:
        async with module.open_store(Path(tmp) / "store.db") as store:
            conversation = await call(store.new_conversation, "reload")
            payloads = [store.payload(n) for n in range(turns)]
            reloads = []
            for payload in payloads:
                await call(store.append_turn, conversation, payload)
                start = time.perf_counter()
                await call(store.load_all, conversation)
                reloads.append(time.perf_counter() - start)
    return {"mean_ms": statistics.mean(reloads) * 1e3, "last_ms": reloads[-1] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(json.dumps(asyncio.run(_inside(args.inside, args.turns))))
        return
    peers = [p for p in args.peers.split(",") if p]
    samples: dict[str, list[dict[str, float]]] = {p: [] for p in peers}
    for _ in range(args.repeat):
        for peer in peers:
            command = [sys.executable, "-m", "bench.reload_bench", "--inside", peer,
                       "--turns", str(args.turns)]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, check=True)
            samples[peer].append(json.loads(out.stdout))
    result = {"turns": args.turns, "repeat": args.repeat, "peers": medians(samples)}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
