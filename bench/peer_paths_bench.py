"""Two paths beside their peers, without the rest of ``make bench``: PostgreSQL loads (whole and
``last=50``) against openai-agents' ``SQLAlchemySession``, and ``ConvstoreSession.pop_item``
against openai-agents' ``SQLiteSession``.

Run from the repository root (``.venv-bench``: the peers are installed there)::

    .venv-bench/bin/python -m bench.peer_paths_bench [--reps 3] [--sections pg,pop]
        [--callgrind] [--baseline-src DIR] [--json-out F]

Each section runs its stores' `bench.peers` modules, each repetition in its own process on a
fresh database (`bench.peers.runner`, with the phases these targets do not use cut short),
interleaved and rotated as `bench.compare` does, and prints the medians with their spread and
the ratio to the peer. The PostgreSQL section also counts the round trips of one load and one
``last=50`` window (`tests.support.round_trips`: asyncpg protocol requests). ``--callgrind``
adds each store's instructions per call (`bench.callgrind_bench`, every thread, client side).
``--baseline-src DIR`` adds convstore as found in ``DIR`` (a copy of an older ``src``, put
first on ``PYTHONPATH``) as one more store, so a change is measured before and after in the
same interleaved run. Without ``BENCH_POSTGRES_DSN``, a throwaway cluster is started as for
``bench.compare``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.callgrind_bench import run_peer
from bench.harness.timing import rotations

ROOT = Path(__file__).resolve().parents[1]

SECTIONS = {
    "pg": (("convstore_pg", "agents_sqlalchemy_pg"), ("full_load_ms", "last_ms")),
    "pop": (("convstore_session", "agents_sqlite"), ("pop_ms",)),
}
"""Per section: (the convstore store, its peer), and the measures compared."""

_CUT_SHORT = ["--conversations", "2", "--conversation-turns", "2", "--loop-turns", "0"]
"""The runner's other phases (concurrent writers, the turn loop), reduced to almost nothing."""


def _env(baseline: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(baseline), env.get("PYTHONPATH")) if p)
    return env


def _run(peer: str, pops: int, baseline: Path | None, turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-paths-") as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, "-m", f"bench.peers.{peer}", "--reps", "1", *_CUT_SHORT,
                   "--turns", str(turns), "--pops", str(pops), "--json-out", str(out)]  # fmt: skip
        proc = subprocess.run(
            command, cwd=ROOT, env=_env(baseline), capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{peer} failed:\n{proc.stderr[-3000:]}")
        repetition: dict[str, Any] = json.loads(out.read_text())["repetitions"][0]
        return repetition


async def _round_trips(turns: int) -> dict[str, int]:
    """Round trips of a whole load and of a ``last=50`` window (after one of each, which
    prepares the statements and fills the message cache)."""
    from tests.support.round_trips import round_trips

    from bench.peers.convstore_pg import open_store

    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with open_store(Path(tmp) / "unused.db") as adapter:
            cid = await adapter.new_conversation("round-trips")
            for turn in range(turns):
                await adapter.append_turn(cid, adapter.payload(turn))
            store = adapter._store
            for name, last in (("full_load", None), ("last_50", 50)):
                for _ in range(2):
                    await store.load(cid, last=last)
                with round_trips(store) as sent:
                    await store.load(cid, last=last)
                counts[name] = len(sent)
    return counts


def _count_round_trips(baseline: Path | None, turns: int) -> dict[str, int]:
    command = [sys.executable, "-m", "bench.peer_paths_bench", "--inside-round-trips", str(turns)]
    proc = subprocess.run(
        command, cwd=ROOT, env=_env(baseline), capture_output=True, text=True, check=True
    )
    counts: dict[str, int] = json.loads(proc.stdout.strip().splitlines()[-1])
    return counts


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--sections", default="pg,pop")
    parser.add_argument("--pops", type=int, default=20)
    parser.add_argument("--turns", type=int, default=500, help="turns of the conversation")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--inside-round-trips", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside_round_trips:
        print(json.dumps(asyncio.run(_round_trips(args.inside_round_trips))))
        return
    # Imported here: the round-trip child may run an older convstore, which bench.compare's
    # other imports need not support.
    from bench.harness.fixtures import postgres_cluster

    sections = [s for s in args.sections.split(",") if s]
    wants_pg = "pg" in sections and not os.environ.get("BENCH_POSTGRES_DSN")
    with postgres_cluster(wants_pg) as (pg_env, missing):
        if wants_pg and missing:
            raise SystemExit(f"no PostgreSQL: {missing}")
        os.environ.update(pg_env)
        output = {name: _section(name, args) for name in sections}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(output, indent=1))


def _section(name: str, args: argparse.Namespace) -> dict[str, Any]:
    (ours, peer), measures = SECTIONS[name]
    stores: list[tuple[str, str, Path | None]] = [(ours, ours, None), (peer, peer, None)]
    if args.baseline_src is not None:
        stores.insert(1, (f"{ours}@baseline", ours, args.baseline_src))
    pops = args.pops if name == "pop" else 0
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in stores}
    for rep, order in rotations(stores, args.reps):
        for label, module, baseline in order:
            print(f"[{rep + 1}/{args.reps}] {label} …", file=sys.stderr, flush=True)
            runs[label].append(_run(module, pops, baseline, args.turns))
    result: dict[str, Any] = {}
    print(f"\n== {name}: medians of {args.reps} interleaved runs (min-max), ratio to {peer}")
    peer_medians = {m: _median([r[m] for r in runs[peer]]) for m in measures}
    for label, module, baseline in stores:
        row: dict[str, Any] = {}
        for measure in measures:
            values = [r[measure] for r in runs[label]]
            median, base = _median(values), peer_medians[measure]
            ratio = None if median is None or not base else median / base
            row[measure] = {"median": median, "values": values, "ratio": ratio}
            shown = [v for v in values if v is not None]
            print(f"{label:34} {measure:13} {median or 0:9.3f} ms "
                  f"({min(shown, default=0):.3f}-{max(shown, default=0):.3f})  "
                  f"{'' if ratio is None else f'{ratio:.2f}x'}")  # fmt: skip
        if name == "pg" and module == ours:
            row["round_trips"] = _count_round_trips(baseline, turns=min(args.turns, 100))
            print(f"{label:34} round trips   {row['round_trips']}")
        if args.callgrind:
            counted = run_peer(
                module,
                _env(baseline),
                argparse.Namespace(turns=100, appends=30, lasts=10, timeout=1500),
            )
            row["callgrind"] = counted
            keys = ("full_load", "last_50") if name == "pg" else ("pop",)
            shown_counts = {k: counted.get(k) for k in keys} if "error" not in counted else counted
            print(f"{label:34} instructions  {shown_counts}")
        result[label] = row
    if args.callgrind:
        keys = ("full_load", "last_50") if name == "pg" else ("pop",)
        base = result[peer].get("callgrind", {})
        for label, measured in result.items():
            counted = measured.get("callgrind", {})
            ratios = {k: counted[k] / base[k] for k in keys if counted.get(k) and base.get(k)}
            print(f"{label:34} instructions vs {peer}: "
                  + ", ".join(f"{k} {r:.2f}x" for k, r in ratios.items()))  # fmt: skip
    return result


if __name__ == "__main__":
    main()
