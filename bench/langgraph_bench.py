"""LangGraph checkpointers on one agent run: `ConvstoreSaver` beside langgraph-checkpoint-sqlite's
`AsyncSqliteSaver`.

Run: ``python -m bench.langgraph_bench`` (``make bench-langgraph``, part of ``make bench``; from
``.venv-langgraph``). Options: ``--turns`` (200), ``--reps`` (3), ``--json-out FILE``.

The workload is the ReAct-style agent of the tests (tests/integrations/langgraph_agent.py: a
model node, a tool node, langchain_core's fake chat model; each turn stores 4 messages in 4
checkpoints). Each repetition runs both savers in one process on fresh SQLite files, turn by
turn interleaved (so the machine's noise falls on both), each store with its defaults (WAL,
``synchronous=FULL``). Reported, medians over the repetitions:

- database bytes after 50, 100 and 200 turns: the live pages of the SQLite file read through
  its WAL (``(page_count - freelist_count) * page_size``), plus the blob directory (no file in
  this workload, so 0);
- ms per step: a turn's ``ainvoke`` time over its 4 checkpoints, for the first and the last 50
  turns (the second shows how a step's cost grows with the thread);
- ms for ``aget_state`` at the end: a new graph on a new saver of the same file (cold; median
  of 5, the savers alternating) and the last of them again (warm, median of 5).

Instruction counts beside them (callgrind, when valgrind is installed; ``--callgrind-turns 0``
skips them): each saver in a process of its own under ``valgrind --tool=callgrind
--instr-atstart=no`` (bench/callgrind_bench.py's helper switches counting on and off) runs
``--callgrind-turns`` turns (100) uncounted, then counts ``--counted-turns`` more (5, so 20
steps), then ``aget_state`` through a new saver (cold) and again (warm). Every thread counts
(the drivers' too), so the counts include the SQLite work of each saver.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from tests.integrations.langgraph_agent import build, config, question

from bench.harness.callgrind import Counter, counted_run, dry_run, unavailable
from bench.harness.timing import median_ms
from convstore import ConversationStore
from convstore.integrations.langgraph import ConvstoreSaver

STEPS_PER_TURN = 4
MARKS = (50, 100, 200)
THREAD = "bench-thread"


def live_bytes(db: Path) -> int:
    """The bytes of the pages SQLite holds for ``db`` (through its WAL), free pages left out."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return int((pages - free) * size)


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


class Run:
    """One saver's run: its graph, its files and what was measured."""

    def __init__(self, name: str, db: Path, blobs: Path | None) -> None:
        self.name, self.db, self.blobs = name, db, blobs
        self.graph: Any = None
        self.step_ms: list[float] = []
        self.bytes: dict[int, int] = {}

    async def turn(self, turn: int) -> None:
        start = time.perf_counter()
        await self.graph.ainvoke({"messages": [question(turn)]}, config(THREAD))
        self.step_ms.append((time.perf_counter() - start) * 1000 / STEPS_PER_TURN)
        if turn in MARKS:
            self.bytes[turn] = live_bytes(self.db) + (tree_bytes(self.blobs) if self.blobs else 0)


async def one_repetition(turns: int, directory: Path) -> dict[str, dict[str, Any]]:
    ours = Run("ConvstoreSaver", directory / "convstore.db", directory / "blobs")
    theirs = Run("AsyncSqliteSaver", directory / "langgraph.db", None)
    url = f"sqlite+aiosqlite:///{ours.db}"
    async with (
        ConversationStore(url, blobs=str(ours.blobs)) as store,
        AsyncSqliteSaver.from_conn_string(str(theirs.db)) as sqlite_saver,
    ):
        ours.graph = build(ConvstoreSaver(store=store))
        theirs.graph = build(sqlite_saver)
        for turn in range(1, turns + 1):
            # Interleaved, alternating which goes first.
            runs = (ours, theirs) if turn % 2 else (theirs, ours)
            for run in runs:
                await run.turn(turn)
        results = {}
        for run in (ours, theirs):
            results[run.name] = {
                "bytes": dict(run.bytes),
                "ms per step (first 50 turns)": statistics.median(run.step_ms[:50]),
                "ms per step (last 50 turns)": statistics.median(run.step_ms[-50:]),
                "ms per step (all)": statistics.median(run.step_ms),
            }
        # A cold read: a new graph on a new saver that has seen nothing of the thread (median
        # of 5, alternating which saver goes first), then the last of them again (warm).
        savers: dict[str, Callable[[], Any]] = {
            ours.name: lambda: ConvstoreSaver(store=store),
            theirs.name: lambda: AsyncSqliteSaver(sqlite_saver.conn),
        }
        cold_ms: dict[str, list[float]] = {name: [] for name in savers}
        graphs: dict[str, Any] = {}
        for rep in range(5):
            for name in sorted(savers, reverse=bool(rep % 2)):
                graphs[name] = build(savers[name]())
                start = time.perf_counter()
                await graphs[name].aget_state(config(THREAD))
                cold_ms[name].append((time.perf_counter() - start) * 1000)
        for name, graph in graphs.items():
            results[name]["aget_state ms (cold)"] = statistics.median(cold_ms[name])
            warm = functools.partial(graph.aget_state, config(THREAD))
            results[name]["aget_state ms (warm)"] = await median_ms(warm)
    return results


async def counted(saver: str, counter: Counter, turns: int, counted_turns: int) -> None:
    """Inside valgrind: ``turns`` uncounted, then the counted steps and reads of one saver."""
    with tempfile.TemporaryDirectory(prefix="lg-bench-cg-") as tmp:
        db = Path(tmp) / "saver.db"
        async with contextlib.AsyncExitStack() as stack:
            if saver == "ConvstoreSaver":
                url = f"sqlite+aiosqlite:///{db}"
                store = await stack.enter_async_context(
                    ConversationStore(url, blobs=str(Path(tmp) / "blobs"))
                )

                def new_graph() -> Any:
                    return build(ConvstoreSaver(store=store))
            else:
                peer = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(db)))

                def new_graph() -> Any:
                    return build(AsyncSqliteSaver(peer.conn))

            graph = new_graph()
            for turn in range(1, turns + 1):
                await graph.ainvoke({"messages": [question(turn)]}, config(THREAD))
            with counter.section("steps"):
                for turn in range(turns + 1, turns + counted_turns + 1):
                    await graph.ainvoke({"messages": [question(turn)]}, config(THREAD))
            cold = new_graph()
            with counter.section("aget_state_cold"):
                await cold.aget_state(config(THREAD))
            with counter.section("aget_state_warm"):
                await cold.aget_state(config(THREAD))


def instructions(turns: int, counted_turns: int) -> dict[str, dict[str, float]] | str:
    """Instructions per step and per ``aget_state``, by saver (or why they were not counted)."""
    reason = unavailable()
    if reason is not None:
        return reason
    results: dict[str, dict[str, float]] = {}
    for saver in ("ConvstoreSaver", "AsyncSqliteSaver"):
        arguments = ["--inside", saver, "--callgrind-turns", str(turns),
                     "--counted-turns", str(counted_turns)]  # fmt: skip
        totals, failure = counted_run("bench.langgraph_bench", arguments, timeout=3600)
        if failure is not None or len(totals) < 3:
            return f"{saver} under callgrind: {failure or f'only {sorted(totals)} counted'}"
        if dry_run():
            return "dry run: nothing counted"
        results[saver] = {
            "instructions per step": totals["steps"] / (counted_turns * STEPS_PER_TURN),
            "aget_state instructions (cold)": totals["aget_state_cold"],
            "aget_state instructions (warm)": totals["aget_state_warm"],
        }
    return results


def _median_of(reps: list[dict[str, dict[str, Any]]], saver: str, key: str) -> Any:
    values = [rep[saver][key] for rep in reps]
    if isinstance(values[0], dict):
        return {mark: statistics.median(v[mark] for v in values) for mark in values[0]}
    return statistics.median(values)


async def main_async(turns: int, reps: int) -> dict[str, dict[str, Any]]:
    results = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="lg-bench-") as tmp:
            results.append(await one_repetition(turns, Path(tmp)))
    return {
        saver: {key: _median_of(results, saver, key) for key in results[0][saver]}
        for saver in results[0]
    }


def report(
    summary: dict[str, dict[str, Any]],
    turns: int,
    counts: dict[str, dict[str, float]] | str | None = None,
    counted_at: int = 0,
) -> str:
    ours, theirs = summary["ConvstoreSaver"], summary["AsyncSqliteSaver"]
    marks = [m for m in MARKS if m <= turns]
    lines = [
        f"LangGraph agent, {turns} turns ({STEPS_PER_TURN} checkpoints and 4 messages a turn)",
        f"{'':32}{'ConvstoreSaver':>18}{'AsyncSqliteSaver':>18}{'ratio':>10}",
    ]
    for mark in marks:
        a, b = int(ours["bytes"][mark]), int(theirs["bytes"][mark])
        lines.append(f"{f'database bytes, {mark} turns':32}{a:>18,}{b:>18,}{b / a:>9.1f}x")
    for key in (
        "ms per step (first 50 turns)",
        "ms per step (last 50 turns)",
        "ms per step (all)",
        "aget_state ms (cold)",
        "aget_state ms (warm)",
    ):
        a, b = ours[key], theirs[key]
        lines.append(f"{key:32}{a:>18.2f}{b:>18.2f}{b / a:>9.2f}x")
    if marks and marks[0] == 50 and turns >= 200:
        growth = ours["bytes"][200] / ours["bytes"][50]
        lines.append(f"ConvstoreSaver bytes(200) / bytes(50) = {growth:.2f} (linear: 4)")
    if isinstance(counts, str):
        lines.append(f"callgrind: not counted ({counts})")
    elif counts:
        lines.append(f"callgrind, after {counted_at} turns (instructions, every thread):")
        a_counts, b_counts = counts["ConvstoreSaver"], counts["AsyncSqliteSaver"]
        for key in a_counts:
            ours_n, theirs_n = a_counts[key], b_counts[key]
            lines.append(
                f"{key:32}{ours_n / 1e6:>17.2f}M{theirs_n / 1e6:>17.2f}M{theirs_n / ours_n:>9.2f}x"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--callgrind-turns", type=int, default=100)
    parser.add_argument("--counted-turns", type=int, default=5)
    parser.add_argument("--inside", help=argparse.SUPPRESS)
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        counter = Counter(args.library)
        asyncio.run(counted(args.inside, counter, args.callgrind_turns, args.counted_turns))
        return
    summary: dict[str, Any] = asyncio.run(main_async(args.turns, args.reps))
    counts = (
        instructions(args.callgrind_turns, args.counted_turns) if args.callgrind_turns else None
    )
    print(report(summary, args.turns, counts, args.callgrind_turns))
    if args.json_out is not None:
        if counts is not None:
            summary = {**summary, "callgrind": counts}
        args.json_out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
