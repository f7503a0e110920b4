"""convstore beside the conversation stores people use today: ``make bench``.

Run from the repository root::

    .venv/bin/python -m bench.compare [--reps 5] [--stores convstore_store,agents_sqlite,...]
                                      [--output docs/performance.md]

Every store in `bench.peers` runs the same deterministic workload (`bench.workload`: one
conversation of 500 turns, six items a turn, one write call per turn where the store's API
allows it; then 20 conversations x 50 turns written concurrently) in its own subprocess
(``python -m bench.peers.<store> --reps 1``) on fresh SQLite files, as measured by
`bench.peers.runner`. Repetitions interleave the stores, rotating their order each time, so
that a noisy neighbour slows every store rather than one; each subprocess warms up first.
The medians of the repetitions, with their min-max spread, and each peer's ratio to convstore
go to stdout and, with the versions, the machine and the render benchmark
(`bench.render_bench`, also in its own subprocess), to ``docs/performance.md``.

``make bench`` runs it from its own virtual environment (``.venv-bench``: the project with its
``bench`` extra, pinned by ``bench/constraints.txt``), because two peers' current releases
cannot be installed beside the dev extra's SDK oracles. A store that is not installed, or lacks
the API measured, is reported as n/a with the reason.

This module runs the benchmarks and prints the tables; `bench.report_tables` builds the tables
and `bench.report` the Markdown around them, from the saved results alone (``--from-json``
rebuilds the report without measuring).

Nothing here uses the network; `bench.peers.runner` refuses and records any attempt.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import machine
from bench.harness.callgrind import unavailable
from bench.harness.fixtures import (
    OFFLINE_ENVIRONMENT,
    postgres_cluster,
    v1_environment,
    v1_source,
)
from bench.harness.report import write_json
from bench.harness.timing import rotations
from bench.peers import POSTGRES_STORES, STORES
from bench.peers.runner import sqlite_default_synchronous
from bench.render_bench import markdown as render_markdown
from bench.report import document
from bench.report_tables import (
    callgrind_table,
    details_table,
    layout_table,
    main_table,
    moves_section,
    postgres_section,
    scale_notes,
    split_stores,
    turn_loop_table,
)
from bench.targets import targets_table

ROOT = Path(__file__).resolve().parents[1]


def _run_json(
    command: Sequence[str], timeout: float, extra_env: dict[str, str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    """Run a benchmark subprocess writing ``--json-out``; its JSON, or None and stderr's tail."""
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, **OFFLINE_ENVIRONMENT, **(extra_env or {})}
        try:
            proc = subprocess.run(
                [*command, "--json-out", str(out)],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, f"timed out after {timeout:.0f} s"
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            return None, f"exit status {proc.returncode}: {tail}"
        return json.loads(out.read_text()), ""


def _store_command(store: str, args: argparse.Namespace) -> list[str]:
    command = [
        sys.executable,
        "-m",
        f"bench.peers.{store}",
        "--reps",
        "1",
        "--journal",
        args.journal,
    ]
    command += ["--turns", str(args.turns), "--loop-turns", str(args.loop_turns)]
    if args.tmpdir:
        command += ["--tmpdir", args.tmpdir]
    return command


def run_stores(
    args: argparse.Namespace, stores: Sequence[str], envs: dict[str, dict[str, str]]
) -> dict[str, dict[str, Any]]:
    """Every repetition of every store, interleaved; the merged result of each store."""
    results: dict[str, dict[str, Any]] = {}
    for rep, order in rotations(stores, args.reps):
        for store in order:
            known = results.get(store)
            if known is not None and (not known["available"] or known.get("failed")):
                continue
            started = time.perf_counter()
            print(f"[{rep + 1}/{args.reps}] {store} …", end=" ", file=sys.stderr, flush=True)
            result, error = _run_json(
                _store_command(store, args), args.timeout, envs.get(store, {})
            )
            took = time.perf_counter() - started
            if result is None:
                print(f"FAILED ({took:.0f} s)\n{error}", file=sys.stderr)
                failed = known or {"store": store, "available": True, "repetitions": []}
                results[store] = {**failed, "failed": error}
                continue
            status = "n/a" if not result["available"] else f"{took:.0f} s"
            print(status, file=sys.stderr)
            if known is None:
                results[store] = result
            else:
                known["repetitions"].extend(result["repetitions"])
                known["network_attempts"].extend(result["network_attempts"])
    return results


def run_render(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    """The render benchmark in its own subprocess."""
    print("render benchmark …", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "bench.render_bench", "--reps", str(args.render_reps)]
    if args.tmpdir:
        command += ["--tmpdir", args.tmpdir]
    return _run_json(command, args.timeout)


def run_search(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any] | str:
    """`bench.search_bench`: search p99 beside a writer, append with and without the index."""
    print(f"search benchmark ({args.search_messages:,} messages) …", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "bench.search_bench", "--messages",
               str(args.search_messages), "--conversations",
               str(max(1, args.search_messages // 100)), "--queries-per-kind",
               str(max(1, min(50, args.search_messages // 100)))]  # fmt: skip
    if not args.skip_callgrind:
        command.append("--callgrind")
    result, error = _run_json(command, args.timeout * 2, env)
    return result if result is not None else f"failed: {error}"


def run_scale(args: argparse.Namespace, v1_src: Path | None) -> dict[str, Any]:
    """`bench.scale_bench` for the current code and for v1."""
    out: dict[str, Any] = {}
    for name, env in (("v2", {}), ("v1", v1_environment(v1_src))):
        if name == "v1" and v1_src is None:
            out[name] = "v1 source unavailable"
            continue
        print(f"scale benchmark ({name}) …", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "bench.scale_bench",
                   "--messages", str(args.scale_messages), "--branches", "100"]  # fmt: skip
        result, error = _run_json(command, args.timeout, env)
        out[name] = result if result is not None else f"failed: {error}"
    return out


def run_listing(args: argparse.Namespace, databases: str) -> dict[str, Any] | str:
    """`bench.listing_bench`: the conversation list and gc at scale."""
    print(f"listing benchmark ({args.listing_sizes}) …", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", "bench.listing_bench", "--sizes", args.listing_sizes,
               "--database", databases, "--bulk"]  # fmt: skip
    result, error = _run_json(command, args.timeout * 4)
    return result if result is not None else f"failed: {error}"


def run_callgrind(args: argparse.Namespace, v1_src: Path | None) -> dict[str, Any]:
    """`bench.callgrind_bench` for the SQLite hot paths (skipped, with a note, without valgrind)."""
    reason = unavailable()
    if reason is not None:
        print(f"callgrind skipped: {reason}", file=sys.stderr)
        return {"skipped": reason, "results": []}
    results: list[dict[str, Any]] = []
    for peer in filter(None, args.callgrind_peers.split(",")):
        if peer == "convstore_v1" and v1_src is None:
            continue
        print(f"callgrind: {peer} …", file=sys.stderr, flush=True)
        env = v1_environment(v1_src) if peer == "convstore_v1" else {}
        command = [sys.executable, "-m", "bench.callgrind_bench", "--peers", peer]
        result, error = _run_json(command, args.timeout, env)
        if result is None:
            results.append({"peer": peer, "error": error})
        else:
            results.extend(result["results"])
    return {"skipped": None, "results": results}


def environment(args: argparse.Namespace, started: str, load_before: str) -> dict[str, str]:
    """What the numbers were measured on."""
    return machine.environment(
        command=shlex.join(["python", "-m", "bench.compare", *sys.argv[1:]]),
        started=started,
        load_before=load_before,
        tmpdir=args.tmpdir,
        sqlite=f"{sqlite3.sqlite_version}; a fresh WAL connection has synchronous = "
        f"{sqlite_default_synchronous()}",
    )


def measure_all(args: argparse.Namespace, stores: list[str]) -> dict[str, Any]:
    """Run every store and the other benchmarks; everything the report is made from."""
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = machine.loadavg()
    pg_wanted = any(s in POSTGRES_STORES for s in stores)
    with v1_source() as (v1_src, v1_missing), postgres_cluster(pg_wanted) as (pg_env, pg_missing):
        if v1_missing:
            print(v1_missing, file=sys.stderr)
        envs: dict[str, dict[str, str]] = dict.fromkeys(POSTGRES_STORES, pg_env)
        envs["convstore_v1"] = v1_environment(v1_src)
        runnable = [s for s in stores if not (s in POSTGRES_STORES and pg_missing)]
        runnable = [s for s in runnable if not (s == "convstore_v1" and v1_src is None)]
        results = run_stores(args, runnable, envs)
        scale: dict[str, Any] = {}
        if not args.skip_scale:
            scale = run_scale(args, v1_src)
        callgrind: dict[str, Any] = {"skipped": "`--skip-callgrind`", "results": []}
        if not args.skip_callgrind:
            callgrind = run_callgrind(args, v1_src)
        search: dict[str, Any] | str = "Skipped (`--skip-search`)."
        if not args.skip_search:
            search = run_search(args, pg_env)
        listing: dict[str, Any] | str = "Skipped (`--listing-sizes ''`)."
        if args.listing_sizes:
            listing = run_listing(args, "sqlite" if pg_missing else "sqlite,postgresql")
    render: dict[str, Any] | str = "Skipped (`--skip-render`)."
    if not args.skip_render:
        rendered, error = run_render(args)
        render = rendered if rendered is not None else f"Failed: {error}"
    return {
        "run": {
            "reps": args.reps,
            "journal": args.journal,
            "turns": args.turns,
            "loop_turns": args.loop_turns,
            "sqlite_default_synchronous": sqlite_default_synchronous(),
            "scale_messages": args.scale_messages,
        },
        "stores": stores,
        "results": results,
        "postgres_unavailable": pg_missing if pg_wanted else "",
        "scale": scale,
        "callgrind": callgrind,
        "listing": listing,
        "search": search,
        "render": render,
        "environment": environment(args, started, load_before),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="repetitions per store (3)")
    parser.add_argument(
        "--scale-messages",
        type=int,
        default=100_000,
        help="messages of the large conversation of the scale run (100000)",
    )
    parser.add_argument("--skip-scale", action="store_true", help="no scale run")
    parser.add_argument("--skip-callgrind", action="store_true", help="no callgrind counts")
    parser.add_argument(
        "--callgrind-peers",
        default="convstore_store,convstore_nocache,convstore_session,convstore_v1,agents_sqlite,"
        "raw_sqlite3",
        help="SQLite stores counted by callgrind",
    )
    parser.add_argument("--skip-search", action="store_true", help="no search benchmark")
    parser.add_argument(
        "--search-json", type=Path, help="also write the search benchmark's result here"
    )
    parser.add_argument(
        "--search-from-json", type=Path, help="take the search results from this file instead"
    )
    parser.add_argument(
        "--frameworks-json",
        default="",
        help="comma-separated results of `bench.frameworks_bench --json-out` (run from the "
        "frameworks' own environments) to judge the ADK targets",
    )
    parser.add_argument(
        "--search-messages", type=int, default=100_000, help="messages the searches run over"
    )
    parser.add_argument(
        "--listing-sizes",
        default="1000,100000,1000000",
        help="conversation counts of the listing and gc benchmark ('' to skip it)",
    )
    parser.add_argument("--turns", type=int, default=500, help="turns of the one conversation")
    parser.add_argument(
        "--loop-turns", type=int, default=500, help="turns of the turn loop (500; 0: skip it)"
    )
    parser.add_argument(
        "--stores",
        default=",".join(s for s in STORES if s != "adk_database"),
        help="comma-separated subset (default: all but adk_database, whose 4 commits a turn "
        "take minutes: add it by name)",
    )
    parser.add_argument("--journal", choices=["wal", "native"], default="wal")
    parser.add_argument("--render-reps", type=int, default=7, help="render runs per target (7)")
    parser.add_argument("--skip-render", action="store_true", help="no render benchmark")
    parser.add_argument("--tmpdir", help="directory for the fresh databases")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per subprocess")
    parser.add_argument(
        "--output", default="docs/performance.md", help="Markdown report ('-' for none)"
    )
    parser.add_argument("--save-json", type=Path, help="also keep the raw results here")
    parser.add_argument(
        "--from-json", type=Path, help="rebuild the report from saved raw results; no measuring"
    )
    args = parser.parse_args()
    stores = [s for s in args.stores.split(",") if s]
    unknown = sorted(set(stores) - set(STORES))
    if unknown:
        parser.error(f"unknown stores: {', '.join(unknown)} (known: {', '.join(STORES)})")

    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
    else:
        saved = measure_all(args, stores)
    for name in filter(None, args.frameworks_json.split(",")):
        framework = json.loads((ROOT / name).read_text())
        saved.setdefault("frameworks", {})[framework["framework"]] = framework
    if args.search_from_json is not None:  # a search run of its own (beside, not inside, this one)
        saved["search"] = json.loads(args.search_from_json.read_text())
    if args.from_json is None:
        if args.search_json is not None and isinstance(saved.get("search"), dict):
            write_json(args.search_json, saved["search"])
        if args.save_json is not None:
            args.save_json.write_text(json.dumps(saved, indent=1))

    sqlite_stores, _pg = split_stores(saved["stores"])
    table, notes = main_table(saved["results"], sqlite_stores)
    render = saved["render"]
    print()
    print(table)
    for note in notes:
        print(f"- {note}")
    print()
    print(turn_loop_table(saved["results"], sqlite_stores))
    print()
    print("\n".join(postgres_section(saved)))
    print()
    print(targets_table(saved))
    print()
    print(layout_table(saved["results"], saved.get("scale", {})))
    print(scale_notes(saved.get("scale", {})))
    print()
    print(moves_section(saved.get("scale", {})))
    print()
    print(callgrind_table(saved.get("callgrind", {})))
    print()
    print(details_table(saved["results"], saved["stores"]))
    print()
    print(render_markdown(render) if isinstance(render, dict) else render)
    if args.output != "-":
        path = ROOT / args.output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document(saved))
        print(f"\nwritten to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
