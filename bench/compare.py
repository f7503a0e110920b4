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

Nothing here uses the network; `bench.peers.runner` refuses and records any attempt.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.peers import BASELINE, STORES
from bench.peers.runner import OFFLINE_ENVIRONMENT, spread, sqlite_default_synchronous
from bench.render_bench import markdown as render_markdown
from bench.workload import ITEMS_PER_TURN

ROOT = Path(__file__).resolve().parents[1]

METRICS: tuple[tuple[str, str, str], ...] = (
    ("append_items_s", "append items/s", ",.0f"),
    ("full_load_ms", "full load ms", ".1f"),
    ("last_ms", "last-50 ms", ".2f"),
    ("concurrent_items_s", "concurrent items/s", ",.0f"),
)
"""The main table: result key, column title, number format."""

READING = """\
- Every number is the **median** of the repetitions; `[min-max]` is the spread of the
  repetition medians. Ratios (`x`) are *peer / convstore* of the medians: for items/s a ratio
  above 1 means the peer wrote faster than convstore; for milliseconds a ratio above 1 means
  the peer was slower.
- **append items/s**: one conversation, {turns} turns of 6 items ({items:,} items), one write
  call per turn where the API allows it (see "write calls per turn"); wall time of the loop.
- **full load ms**: loading the {turns}-turn conversation through the store's API into its own
  objects (median of 10 loads). **last-50 ms**: the newest 50 records *in the store's own
  unit* (messages, items or events: see the second table; median of 50 loads); n/a where the
  store has no such API.
- **concurrent items/s**: 20 conversations x 50 turns written by 20 asyncio tasks at once on
  one fresh file (synchronous APIs through `asyncio.to_thread`); **errors**: appends that
  raised, plus turns that were reported written but are missing on reload.
- Each store ran in its own process, each repetition on fresh SQLite files (created in WAL
  mode, so every store wrote a WAL file); what each store sets on its connections is listed.
  Numbers from a shared or busy machine are noisy: compare ratios from one run, not absolute
  numbers across runs, and re-run on a quiet machine before quoting them."""

FAIRNESS = """\
- **Work per append differs by design.** convstore validates canonical messages, writes
  relational rows (messages, parts, tool calls, a per-conversation sequence) and tracks each
  tool call's lifecycle; the JSON-row stores write one opaque text row per item or message and
  understand nothing of it; the raw sqlite3 floor writes rows and nothing else.
- **Durability.** All stores here commit with `synchronous=FULL` in WAL mode (one fsync per
  commit): convstore and the floor set it; the others leave SQLite's default, which is
  {synchronous} on this build. LangChain's `SQLChatMessageHistory` and ADK's
  `DatabaseSessionService` do not enable WAL themselves: left alone they would write a
  rollback journal (more fsyncs per commit), so the pre-created WAL file favours them.
  `--journal native` measures every store on a file it creates itself.
- **Write calls per turn.** ADK's API appends one event per call, one transaction each: a turn
  costs it four commits where the others pay one.
- **Synchronous APIs skip the thread hop.** LangChain (sync API) and the floor are called
  directly on the event loop's thread in the single-conversation phase, which an asyncio
  application could not do without blocking its loop; the async stores (convstore,
  both openai-agents sessions, ADK) pay a thread hop per database call. In the concurrent
  phase the synchronous ones run on the default thread pool (`min(32, cores + 4)` threads).
- **Loads return different things.** `SQLiteSession`/`SQLAlchemySession` and the floor
  return decoded JSON dicts; LangChain builds message objects; ADK builds pydantic `Event`s;
  convstore builds its validated-on-write models and the tool-call lifecycles.
- **Last-50 units differ**: 50 convstore messages are 60 items, 50 ADK events 75 items.
- **Payloads are built before timing** in every store's own types (pydantic messages, events,
  dicts): construction costs an application pays are excluded for all.
- **Shared engines.** Conversations of one store share one engine / service, as an application
  would (`SQLAlchemySession.from_url` would build a pool per conversation).
- **Concurrency models differ.** `SQLiteSession` serialises every session on a file behind one
  process-wide lock; `SQLAlchemySession` retries "database is locked" with back-off; convstore
  retries transient errors itself and commits the writes queued behind its one writer
  connection together (group commit); an error count therefore also reflects the store's
  policy.
- One-time costs (imports, schema creation or migration, first connections) are excluded by a
  warm-up run in every process and by creating conversations before the clock starts.
- **Loads are timed back to back**, for every store. On the 2-core VM this report was first
  made on, the same CPU work runs about twice as slow after an idle pause (a synchronous
  last-50 load, no threads involved: 0.50 ms back to back, 1.10 ms after a 10 ms sleep), so an
  isolated call costs more than these medians; `bench.store_bench` prints both for convstore."""


WHY = """\
Where convstore trails, the work differs: an append validates canonical messages, bumps the
conversation's sequence counter and writes three tables (about 13 rows a turn: messages, parts,
tool calls with their lifecycle) where a JSON-row store writes 6 opaque rows; a full load reads
about 3,000 joined message/part rows of some 15 columns and 1,000 tool-call rows and builds
some 7,500 typed objects, where `SQLiteSession` reads 3,000 one-column rows and `json.loads`
them into dicts. With many writers, group commit lets one fsync serve every append queued
behind the writer, which is where convstore leads."""


# -- running ------------------------------------------------------------------------------------


def _run_json(command: Sequence[str], timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Run a benchmark subprocess writing ``--json-out``; its JSON, or None and stderr's tail."""
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, **OFFLINE_ENVIRONMENT}
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
    command += ["--turns", str(args.turns)]
    if args.tmpdir:
        command += ["--tmpdir", args.tmpdir]
    return command


def run_stores(args: argparse.Namespace, stores: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every repetition of every store, interleaved; the merged result of each store."""
    results: dict[str, dict[str, Any]] = {}
    for rep in range(args.reps):
        shift = rep % len(stores)
        for store in [*stores[shift:], *stores[:shift]]:
            known = results.get(store)
            if known is not None and (not known["available"] or known.get("failed")):
                continue
            started = time.perf_counter()
            print(f"[{rep + 1}/{args.reps}] {store} …", end=" ", file=sys.stderr, flush=True)
            result, error = _run_json(_store_command(store, args), args.timeout)
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


# -- environment --------------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory() -> str:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    return "unknown"


def _filesystem(directory: str) -> str:
    best = ("", "unknown", "unknown")
    resolved = str(Path(directory).resolve())
    for line in _read("/proc/mounts").splitlines():
        device, mount, kind, *_ = line.split()
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best[0]):
            best = (mount, kind, device)
    return f"{best[1]} ({best[2]} on {best[0]})"


def _git(*command: str) -> str:
    try:
        proc = subprocess.run(
            ["git", *command], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip()


def environment(args: argparse.Namespace, started: str, load_before: str) -> dict[str, str]:
    """What the numbers were measured on."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--", "src"):
        commit += " (with uncommitted changes under src/)"
    tmp = args.tmpdir or tempfile.gettempdir()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": started,
        "command": shlex.join(["python", "-m", "bench.compare", *sys.argv[1:]]),
        "commit": commit,
        "machine": f"{cores} cores (nproc), {_cpu_model()}, {_memory()} RAM, {platform.machine()}",
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_version()} ({sys.executable})",
        "sqlite": f"{sqlite3.sqlite_version}; a fresh WAL connection has synchronous = "
        f"{sqlite_default_synchronous()}",
        "database files": f"{tmp}: {_filesystem(tmp)}",
        "load average": f"{load_before} before, {_loadavg()} after",
    }


def _loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# -- tables -------------------------------------------------------------------------------------


def _values(result: dict[str, Any], key: str) -> list[float]:
    return [r[key] for r in result.get("repetitions", []) if r.get(key) is not None]


def _cell(values: list[float], spec: str) -> str:
    if not values:
        return "n/a"
    mid, low, high = spread(values)
    return f"{format(mid, spec)} [{format(low, spec)}-{format(high, spec)}]"


def _ratio(values: list[float], base: list[float]) -> str:
    if not values or not base:
        return "n/a"
    return f"{spread(values)[0] / spread(base)[0]:.2f}x"


def _label(store: str, result: dict[str, Any] | None) -> str:
    if result is None or "peer" not in result:
        return store
    return str(result["peer"]["label"])


def main_table(results: dict[str, dict[str, Any]], stores: Sequence[str]) -> tuple[str, list[str]]:
    """The side-by-side table and its footnotes (first errors, n/a reasons)."""
    base = results.get(BASELINE, {})
    head = ["store"]
    for _, title, _spec in METRICS:
        head += [title, "x"]
    head.append("errors")
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    notes: list[str] = []
    for store in stores:
        result = results.get(store)
        label = _label(store, result)
        reason = None
        if result is None:
            reason = "not run"
        elif not result["available"]:
            reason = result["reason"]
        elif result.get("failed") and not result["repetitions"]:
            reason = f"failed: {result['failed']}"
        if reason is not None:
            notes.append(f"{label}: n/a — {reason}")
            lines.append(f"| {label} | n/a" + " | n/a" * (len(head) - 3) + " | — |")
            continue
        assert result is not None
        cells = [label]
        for key, _title, spec in METRICS:
            values = _values(result, key)
            cells += [_cell(values, spec), _ratio(values, _values(base, key))]
        reps = result["repetitions"]
        errors = sum(r["concurrent_errors"] + r["concurrent_lost_turns"] for r in reps)
        cells.append(str(errors))
        first = next((r["first_error"] for r in reps if r["first_error"]), None)
        if first:
            notes.append(f"{label}: first concurrent error: `{first}`")
        if result.get("failed"):
            notes.append(f"{label}: a later repetition failed: {result['failed']}")
        if result.get("network_attempts"):
            notes.append(f"{label}: refused network attempts: {result['network_attempts']}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), notes


def _median(result: dict[str, Any] | None, key: str) -> float | None:
    values = _values(result, key) if result and result.get("available") else []
    return spread(values)[0] if values else None


def _verdict(met: bool, shortfall: str) -> str:
    return "met" if met else f"**missed** ({shortfall})"


def targets_table(results: dict[str, dict[str, Any]], render: dict[str, Any] | str) -> str:
    """The performance targets convstore holds itself to, judged from this run's medians."""
    base = results.get(BASELINE)
    session, floor = results.get("agents_sqlite"), results.get("raw_sqlite3")
    rows: list[tuple[str, str, str]] = []

    def versus(
        what: str, key: str, peer: dict[str, Any] | None, bound: float, higher: bool
    ) -> None:
        spec = next(spec for k, _title, spec in METRICS if k == key)
        ours, theirs = _median(base, key), _median(peer, key)
        if ours is None or theirs is None:
            rows.append((what, "n/a", "not measured"))
            return
        ratio = ours / theirs
        met = ratio >= bound if higher else ratio <= bound
        gap = f"{ratio:.2f}x, needs {'≥' if higher else '≤'} {bound:.1f}x"
        rows.append((what, f"{ours:{spec}} vs {theirs:{spec}} = {ratio:.2f}x", _verdict(met, gap)))

    versus("append items/s ≥ 1.0x `SQLiteSession`", "append_items_s", session, 1.0, True)
    versus("append items/s ≥ 0.6x the raw sqlite3 floor", "append_items_s", floor, 0.6, True)
    versus("full load ms ≤ 1.0x `SQLiteSession`", "full_load_ms", session, 1.0, False)
    last = _median(base, "last_ms")
    if last is not None:
        rows.append(("last-50 load ≤ 1 ms", f"{last:.2f} ms", _verdict(last <= 1.0, "over 1 ms")))
    if base and base.get("repetitions"):
        errors = sum(
            r["concurrent_errors"] + r["concurrent_lost_turns"] for r in base["repetitions"]
        )
        rows.append(
            (
                "concurrent appends, zero errors",
                f"{errors} errors",
                _verdict(not errors, "errors surfaced"),
            )
        )
    if isinstance(render, dict):
        load = render["full_load_ms"]["median"]
        slowest = max(render["targets"], key=lambda row: row["render_ms"]["median"])
        ms = slowest["render_ms"]["median"]
        rows.append(
            (
                "render to every target < full load",
                f"slowest: {slowest['target']} {ms:.1f} ms; load {load:.1f} ms",
                _verdict(ms < load, f"{ms / load:.2f}x the load"),
            )
        )
    lines = ["| target | this run (medians) | |", "|---|---|---|"]
    lines += [f"| {what} | {value} | {verdict} |" for what, value, verdict in rows]
    return "\n".join(lines)


def details_table(results: dict[str, dict[str, Any]], stores: Sequence[str]) -> str:
    """How each store was driven, what it sets, and what it left on disk."""
    lines = [
        "| store | versions | write calls per turn | stored shape | load / last-N (unit) "
        "| SQLite settings the store applies | journal (file) | DB size | append p99 ms |",
        "|---|---|---|---|---|---|---|---:|---:|",
    ]
    for store in stores:
        result = results.get(store)
        if result is None or "peer" not in result:
            continue
        peer = result["peer"]
        versions = ", ".join(f"{k} {v or 'missing'}" for k, v in result["versions"].items())
        last = f"`{peer['last_api']}`" if peer["last_api"] else "none"
        reps = result["repetitions"]
        journal = reps[0]["journal_mode"] if reps else "-"
        sizes = [r["database_bytes"] / 1e6 for r in reps]
        size = f"{spread(sizes)[0]:.1f} MB" if sizes else "-"
        p99 = _cell(_values(result, "append_p99_ms"), ".1f")
        cells = (
            peer["label"],
            versions or "stdlib",
            peer["append_api"],
            peer["shape"],
            f"`{peer['load_api']}` / {last} ({peer['unit']})",
            peer["durability"],
            journal,
            size,
            p99,
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def interpreters(results: dict[str, dict[str, Any]]) -> list[str]:
    """One line per distinct interpreter / SQLite library the stores ran on."""
    seen: dict[tuple[str, str, str], list[str]] = {}
    for store, result in results.items():
        if "executable" in result:
            key = (result["executable"], result["python"], result["sqlite"])
            seen.setdefault(key, []).append(store)
    return [
        f"`{exe}`: Python {py}, SQLite {lib}: {', '.join(stores)}"
        for (exe, py, lib), stores in seen.items()
    ]


def document(saved: dict[str, Any]) -> str:
    """docs/performance.md, from the saved results of a run."""
    run, env, stores = saved["run"], saved["environment"], saved["stores"]
    table, notes = main_table(saved["results"], stores)
    render = saved["render"]
    out = [
        "# Performance against the stores people use today",
        "",
        f"Generated by `{env['command']}` (`make bench` runs it with the defaults) on "
        f"{env['date']}; re-running it overwrites this file.",
        "",
        "## How to read this",
        "",
        READING.format(turns=run["turns"], items=run["turns"] * ITEMS_PER_TURN),
        "",
        f"## Stores side by side (repetitions: {run['reps']}, journal: {run['journal']})",
        "",
        f"Workload: {run['turns']} turns x {ITEMS_PER_TURN} items (user text, assistant with two "
        "tool calls of ~200-byte JSON arguments, two ~1 KB tool results, ~500-character reply).",
        "",
        table,
        "",
        *[f"- {note}" for note in notes],
        *([""] if notes else []),
        "### Targets",
        "",
        targets_table(saved["results"], render),
        "",
        WHY,
        "",
        "### What each store did",
        "",
        details_table(saved["results"], stores),
        "",
        "## Rendering (convstore)",
        "",
        render_markdown(render) if isinstance(render, dict) else str(render),
        "",
        "## Known asymmetries (read before quoting a ratio)",
        "",
        FAIRNESS.format(synchronous=run["sqlite_default_synchronous"]),
        "",
        "## Environment",
        "",
        *[f"- **{key}**: {value}" for key, value in env.items()],
        *[f"- **interpreter**: {line}" for line in interpreters(saved["results"])],
        "",
    ]
    return "\n".join(out)


def measure_all(args: argparse.Namespace, stores: list[str]) -> dict[str, Any]:
    """Run every store and the render benchmark; everything the report is made from."""
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _loadavg()
    results = run_stores(args, stores)
    render: dict[str, Any] | str = "Skipped (`--skip-render`)."
    if not args.skip_render:
        rendered, error = run_render(args)
        render = rendered if rendered is not None else f"Failed: {error}"
    return {
        "run": {
            "reps": args.reps,
            "journal": args.journal,
            "turns": args.turns,
            "sqlite_default_synchronous": sqlite_default_synchronous(),
        },
        "stores": stores,
        "results": results,
        "render": render,
        "environment": environment(args, started, load_before),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions per store (5)")
    parser.add_argument("--turns", type=int, default=500, help="turns of the one conversation")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated subset")
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
        if args.save_json is not None:
            args.save_json.write_text(json.dumps(saved, indent=1))

    table, notes = main_table(saved["results"], saved["stores"])
    render = saved["render"]
    print()
    print(table)
    for note in notes:
        print(f"- {note}")
    print()
    print(targets_table(saved["results"], render))
    print()
    print(details_table(saved["results"], saved["stores"]))
    print()
    print(render_markdown(render) if isinstance(render, dict) else render)
    if args.output != "-":
        path = ROOT / args.output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(document(saved))
        print(f"\nwritten to {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
