"""Instructions per append, per full load and per last-50 load, counted by callgrind.

Wall time on a shared 2-core machine moves by tens of percent from one run to the next;
instruction counts do not. Run: ``python -m bench.callgrind_bench --peers a,b,... --json-out F``
(`bench.compare` does, when valgrind is installed; without it the table says so).

For each peer module of `bench.peers` (SQLite stores), one process runs under
``valgrind --tool=callgrind --instr-atstart=no``: it writes ``--turns`` turns (100) of the
workload uninstrumented, then switches instrumentation on only around the measured calls, via
callgrind's client requests (a tiny C helper compiled here with the system's
``valgrind/callgrind.h``): ``--appends`` more appends (30), one full load, ``--lasts`` last-50
loads (10), each after one unmeasured call of the same kind; for adapters with a turn-loop
``request``, one request built from the whole history and one from the newest 50; for adapters
with ``pop_last``, ``--lasts`` pops after a turn's worth of unmeasured ones. Every thread
counts (the driver threads of the async stores too). A store with a deferred search index
(an adapter with ``settle``: convstore) catches up before the appends and has the catch-up of
the counted appends counted on its own (``catch_up``, per append), with its idle-time
catch-up off, so that no section counts work an idle timer happened to start in it. Results:
instructions per call, from callgrind's dumps.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.harness.callgrind import Counter, counted_run, unavailable
from bench.peers.runner import call


async def _measure(peer_name: str, counter: Counter, turns: int, appends: int, lasts: int) -> None:
    module = importlib.import_module(f"bench.peers.{peer_name}")
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
        path = Path(tmp) / "store.db"
        sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").connection.close()
        async with module.open_store(path) as store:
            conversation = await call(store.new_conversation, "cg")
            payloads = [store.payload(n) for n in range(turns + appends + 1)]
            for payload in payloads[:turns]:
                await call(store.append_turn, conversation, payload)
            await call(store.append_turn, conversation, payloads[turns])
            settle = getattr(store, "settle", None)  # convstore: the deferred search index
            if settle is not None:
                await settle()
            with counter.section("append"):
                for payload in payloads[turns + 1 :]:
                    await call(store.append_turn, conversation, payload)
            if settle is not None:
                with counter.section("catch_up"):
                    await settle()
            await call(store.load_all, conversation)
            with counter.section("full_load"):
                await call(store.load_all, conversation)
            await call(store.load_last, conversation, 50)
            with counter.section("last_50"):
                for _ in range(lasts):
                    await call(store.load_last, conversation, 50)
            if hasattr(store, "request"):  # the turn loop's read: history -> request body
                for name, last in (("request_full", None), ("request_50", 50)):
                    await call(store.request, conversation, last)
                    with counter.section(name):
                        await call(store.request, conversation, last)
            pop_last = getattr(store, "pop_last", None)
            if pop_last is not None:  # a `bench.peers.runner.PoppingStore`
                # A turn's worth unmeasured first: a pop runs other statements for each kind of
                # message it removes (each prepared on its first use), not only for the first.
                for _ in range(module.PEER.records_per_turn):
                    await call(pop_last, conversation)
                with counter.section("pop"):
                    for _ in range(lasts):
                        await call(pop_last, conversation)


def run_peer(peer: str, env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """One peer under callgrind; instructions per call, or the reason it failed."""
    totals, failure = counted_run(
        "bench.callgrind_bench",
        ["--inside", peer, "--turns", str(args.turns), "--appends", str(args.appends),
         "--lasts", str(args.lasts)],
        args.timeout,
        env,
    )  # fmt: skip
    if failure is not None or len(totals) < 3:
        return {"peer": peer, "error": failure or f"only {sorted(totals)} counted"}
    return {
        "peer": peer,
        "append": totals["append"] / args.appends,
        "full_load": totals["full_load"],
        "last_50": totals["last_50"] / args.lasts,
        "request_full": totals.get("request_full"),
        "request_50": totals.get("request_50"),
        "pop": totals["pop"] / args.lasts if "pop" in totals else None,
        "catch_up": totals["catch_up"] / args.appends if "catch_up" in totals else None,
        "turns": args.turns,
        "history_turns": args.turns + 1 + args.appends,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", default="convstore_store,agents_sqlite,raw_sqlite3")
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--appends", type=int, default=30)
    parser.add_argument("--lasts", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        counter = Counter(args.library)
        asyncio.run(_measure(args.inside, counter, args.turns, args.appends, args.lasts))
        return
    reason = unavailable()
    results: list[dict[str, Any]] = []
    if reason is None:
        env = dict(os.environ)
        for peer in [p for p in args.peers.split(",") if p]:
            print(f"callgrind: {peer} …", file=sys.stderr, flush=True)
            results.append(run_peer(peer, env, args))
    else:
        print(f"callgrind skipped: {reason}", file=sys.stderr)
    output = {"skipped": reason, "results": results}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(output, indent=1))
    print(json.dumps(output, indent=1))


if __name__ == "__main__":
    main()
