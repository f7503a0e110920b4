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
counts (the driver threads of the async stores too). Results: instructions per call, from
callgrind's dumps.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_on(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_off(const char *name) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(name); }
"""


def unavailable() -> str | None:
    """Why callgrind cannot run here (``None`` when it can)."""
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (e.g. `apt-get install -y valgrind gcc`)"
    if not Path("/usr/include/valgrind/callgrind.h").exists():
        return "valgrind's headers (valgrind/callgrind.h) are missing"
    return None


def _build_helper(directory: Path) -> Path:
    source = directory / "cg.c"
    source.write_text(_HELPER)
    library = directory / "cg.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    return library


async def _measure(peer_name: str, library: Path, turns: int, appends: int, lasts: int) -> None:
    from bench.peers.runner import _call

    helper = ctypes.CDLL(str(library))
    module = importlib.import_module(f"bench.peers.{peer_name}")
    with tempfile.TemporaryDirectory(prefix="bench-cg-") as tmp:
        path = Path(tmp) / "store.db"
        import sqlite3

        sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").connection.close()
        async with module.open_store(path) as store:
            conversation = await _call(store.new_conversation, "cg")
            payloads = [store.payload(n) for n in range(turns + appends + 1)]
            for payload in payloads[:turns]:
                await _call(store.append_turn, conversation, payload)
            await _call(store.append_turn, conversation, payloads[turns])
            helper.cg_on()
            for payload in payloads[turns + 1 :]:
                await _call(store.append_turn, conversation, payload)
            helper.cg_off(b"append")
            await _call(store.load_all, conversation)
            helper.cg_on()
            await _call(store.load_all, conversation)
            helper.cg_off(b"full_load")
            await _call(store.load_last, conversation, 50)
            helper.cg_on()
            for _ in range(lasts):
                await _call(store.load_last, conversation, 50)
            helper.cg_off(b"last_50")
            if hasattr(store, "request"):  # the turn loop's read: history -> request body
                for name, last in ((b"request_full", None), (b"request_50", 50)):
                    await _call(store.request, conversation, last)
                    helper.cg_on()
                    await _call(store.request, conversation, last)
                    helper.cg_off(name)
            pop_last = getattr(store, "pop_last", None)
            if pop_last is not None:  # a `bench.peers.runner.PoppingStore`
                # A turn's worth unmeasured first: a pop runs other statements for each kind of
                # message it removes (each prepared on its first use), not only for the first.
                for _ in range(module.PEER.records_per_turn):
                    await _call(pop_last, conversation)
                helper.cg_on()
                for _ in range(lasts):
                    await _call(pop_last, conversation)
                helper.cg_off(b"pop")


def _parse(directory: Path, prefix: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for dump in sorted(directory.glob(f"{prefix}*")):
        text = dump.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.MULTILINE)
        total = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if trigger and total:
            found[trigger.group(1)] = int(total.group(1))
    return found


def counted_run(
    module: str, arguments: list[str], timeout: float, env: dict[str, str] | None = None
) -> tuple[dict[str, int], str | None]:
    """``python -m module --library L *arguments`` under callgrind, instrumented only between
    the helper's ``cg_on``/``cg_off`` calls; the instructions per ``cg_off`` name, and why the
    run failed (``None`` when it did not)."""
    with tempfile.TemporaryDirectory(prefix="bench-cg-out-") as out:
        directory = Path(out)
        library = _build_helper(directory)
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={directory}/cg.out.%p",
            sys.executable, "-m", module, "--library", str(library), *arguments,
        ]  # fmt: skip
        proc = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, check=False,
            timeout=timeout,
        )  # fmt: skip
        totals = _parse(directory, "cg.out.")
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return totals, f"exit status {proc.returncode}: {tail}"
    return totals, None


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
        asyncio.run(_measure(args.inside, args.library, args.turns, args.appends, args.lasts))
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
