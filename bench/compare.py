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
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.listing_bench import markdown as listing_markdown
from bench.moves_bench import moves_table
from bench.peers import BASELINE, POSTGRES_BASELINE, POSTGRES_STORES, STORES
from bench.peers.convstore_v1 import V1_COMMIT
from bench.peers.runner import OFFLINE_ENVIRONMENT, spread, sqlite_default_synchronous
from bench.render_bench import markdown as render_markdown
from bench.targets import targets_table
from bench.workload import ITEMS_PER_TURN

ROOT = Path(__file__).resolve().parents[1]

METRICS: tuple[tuple[str, str, str], ...] = (
    ("append_items_s", "append items/s", ",.0f"),
    ("full_load_ms", "full load ms", ".1f"),
    ("last_ms", "last-50 ms", ".2f"),
    ("concurrent_items_s", "concurrent items/s", ",.0f"),
    ("pop_ms", "pop ms", ".2f"),
)
"""The main tables: result key, column title, number format."""

WAL_METRIC = ("wal_pages_per_append", "WAL pages/append", ".2f")

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
- **WAL pages/append**: WAL frames (pages) each append writes and fsyncs, over 50 appends to a
  fresh file while a reader holds the WAL open (so no checkpoint restarts it).
- **concurrent items/s**: 20 conversations x 50 turns written by 20 asyncio tasks at once on
  one fresh file (synchronous APIs through `asyncio.to_thread`); **errors**: appends that
  raised, plus turns that were reported written but are missing on reload.
- Each store ran in its own process, each repetition on fresh SQLite files (created in WAL
  mode, so every store wrote a WAL file); what each store sets on its connections is listed.
  Numbers from a shared or busy machine are noisy: compare ratios from one run, not absolute
  numbers across runs, and re-run on a quiet machine before quoting them."""

FAIRNESS = """\
- **Work per append differs by design.** convstore validates canonical messages, writes
  relational rows (messages with their parts as JSON, tool calls, a per-conversation sequence
  and revision) and tracks each tool call's lifecycle; the JSON-row stores write one opaque
  text row per item or message and understand nothing of it; the raw sqlite3 floors write rows
  and nothing else; the raw asyncpg floor writes convstore's rows, planned without validation.
- **PostgreSQL runs without durability** (`fsync=off`, like the test suite's cluster) and on
  TCP loopback: the numbers measure round trips and CPU, not the disk.
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
conversation's sequence counter and revision and writes two tables (seven rows a turn: five
messages with their parts as one JSON column, two tool calls with their lifecycle) where a
JSON-row store writes six opaque rows; a typed load builds frozen models (messages, parts,
tool calls with their lifecycles) where `SQLiteSession` `json.loads` one column per item. The
callgrind table below splits each path into instructions, which do not move with the machine's
load; where a wall-time ratio and the instruction ratio disagree, the machine was busy."""


# -- running ------------------------------------------------------------------------------------


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


def v1_environment(v1_src: Path | None) -> dict[str, str]:
    """What puts the v1 code first on the import path of a subprocess."""
    if v1_src is None:
        return {}
    path = os.pathsep.join(p for p in (str(v1_src), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "BENCH_V1_SRC": str(v1_src)}


@contextmanager
def v1_source() -> Iterator[Path | None]:
    """``git archive V1_COMMIT src migrations``, extracted; its ``src`` (None without git)."""
    with tempfile.TemporaryDirectory(prefix="bench-v1-") as tmp:
        try:
            archive = subprocess.run(
                ["git", "archive", "--format=tar", V1_COMMIT, "src", "migrations"],
                cwd=ROOT, capture_output=True, check=True, timeout=120,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"convstore v1 unavailable: {exc}", file=sys.stderr)
            yield None
            return
        target = Path(tmp) / "v1"
        target.mkdir()
        with tarfile.open(fileobj=__import__("io").BytesIO(archive.stdout)) as tar:
            tar.extractall(target, filter="data")
        yield target / "src"


@contextmanager
def postgres_cluster(wanted: bool) -> Iterator[tuple[dict[str, str], str]]:
    """A throwaway cluster like the tests' (environment for the peers, or why there is none)."""
    if not wanted:
        yield {}, "not selected"
        return
    from tests.support.postgres import find_bindir, running_cluster

    if find_bindir() is None:
        yield {}, "PostgreSQL binaries (initdb, pg_ctl) not found"
        return
    with running_cluster() as cluster:
        dsn = f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}"
        yield {"BENCH_POSTGRES_DSN": dsn}, ""


def run_stores(
    args: argparse.Namespace, stores: Sequence[str], envs: dict[str, dict[str, str]]
) -> dict[str, dict[str, Any]]:
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


def run_scale(args: argparse.Namespace, v1_src: Path | None) -> dict[str, Any]:
    """`bench.scale_bench` for the current code and for v1 (issue 11, criterion 4)."""
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
    from bench.callgrind_bench import unavailable

    reason = unavailable()
    if reason is not None:
        print(f"callgrind skipped: {reason}", file=sys.stderr)
        return {"skipped": reason, "results": []}
    results: list[dict[str, Any]] = []
    peers = ("convstore_store", "convstore_nocache", "convstore_session", "convstore_v1",
             "agents_sqlite", "raw_sqlite3")  # fmt: skip
    for peer in peers:
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


def main_table(
    results: dict[str, dict[str, Any]],
    stores: Sequence[str],
    baseline: str = BASELINE,
    metrics: Sequence[tuple[str, str, str]] = (*METRICS, WAL_METRIC),
) -> tuple[str, list[str]]:
    """The side-by-side table and its footnotes (first errors, n/a reasons)."""
    base = results.get(baseline, {})
    head = ["store"]
    for _, title, _spec in metrics:
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
        for key, _title, spec in metrics:
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


TURN_LOOP_METRICS = (
    ("turn_loop_full_turns_s", "whole history, turns/s"),
    ("turn_loop_last_turns_s", "newest 50, turns/s"),
)


def turn_loop_table(results: dict[str, dict[str, Any]], stores: Sequence[str]) -> str:
    """The turn loop: read history, build the next request, append; turns/s per store."""
    base = results.get(BASELINE)
    head = "| store | request built by | " + " | ".join(
        f"{label} | x" for _, label in TURN_LOOP_METRICS
    )
    lines = [head + " |", "|---|---|" + "---:|---:|" * len(TURN_LOOP_METRICS)]
    for store in stores:
        result = results.get(store)
        if result is None or not result.get("available") or not result["peer"].get("requests"):
            continue
        cells = []
        for key, _ in TURN_LOOP_METRICS:
            values = _values(result, key)
            base_values = _values(base, key) if base else []
            cells += [
                _cell(values, ",.1f") if values else "n/a",
                _ratio(values, base_values) if values and base_values else "n/a",
            ]
        lines.append(
            f"| {_label(store, result)} | {result['peer']['requests']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def _median(result: dict[str, Any] | None, key: str) -> float | None:
    values = _values(result, key) if result and result.get("available") else []
    return spread(values)[0] if values else None


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def layout_table(results: dict[str, dict[str, Any]], scale: dict[str, Any]) -> str:
    """Before and after the schema-v2 layout change (issue 11, criterion 4), from this run."""
    lines = [
        "| code | append items/s | full load ms | WAL pages/append | last-50 ms, 1k messages "
        "| last-50 ms, 100k messages | 100k conversation |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, store, label in (("v1", "convstore_v1", f"before: v1 ({V1_COMMIT})"),
                               ("v2", BASELINE, "after: v2 (this commit)")):  # fmt: skip
        result = results.get(store)
        run = scale.get(name) if isinstance(scale, dict) else None
        if isinstance(run, dict):
            small = _fmt(run["small_last_ms"], ".2f")
            large = _fmt(run["large_last_ms"], ".2f")
            shape = f"{run['messages']:,} messages, {run['branches']} branches"
            if not run["branches"]:
                shape += " (v1 has none)"
        else:
            small = large = "n/a"
            shape = str(run or "not run")
        lines.append(
            f"| {label} | {_fmt(_median(result, 'append_items_s'), ',.0f')} "
            f"| {_fmt(_median(result, 'full_load_ms'), '.1f')} "
            f"| {_fmt(_median(result, 'wal_pages_per_append'), '.2f')} | {small} | {large} "
            f"| {shape} |"
        )
    return "\n".join(lines)


def _moves(scale: dict[str, Any]) -> str:
    run = (scale or {}).get("v2")
    return moves_table(run) if isinstance(run, dict) else "Not run."


def scale_notes(scale: dict[str, Any]) -> str:
    """Cold (after a collection) last-50 times and fill times of the scale runs."""
    out = []
    for name, run in (scale or {}).items():
        if isinstance(run, dict):
            out.append(
                f"- {name}: last-50 after a `gc.collect()` (a cold call): "
                f"{run['small_last_cold_ms']:.2f} ms on 1k, {run['large_last_cold_ms']:.2f} ms on "
                f"{run['messages']:,}; writing the large conversation took {run['fill_s']:.0f} s."
            )
            if "small_append_ms" in run:  # appends alternate between the two conversations
                small, large = run["small_append_ms"], run["large_append_ms"]
                out.append(
                    f"- {name}: append of one turn (5 messages), median {small:.2f} ms on 1k, "
                    f"{large:.2f} ms on {run['messages']:,} ({large / small:.2f}x)."
                )
    return "\n".join(out)


def callgrind_table(callgrind: dict[str, Any]) -> str:
    """Instructions per call (callgrind), SQLite stores."""
    if not callgrind:
        return "Not run."
    if callgrind.get("skipped"):
        return f"Skipped: {callgrind['skipped']}."
    rows = [row for row in callgrind["results"] if "error" not in row]
    turns = rows[0]["history_turns"] if rows and "history_turns" in rows[0] else "?"
    lines = [
        f"| store | per append | per full load ({turns} turns) | per last-50 load "
        "| turn-loop request, whole history | turn-loop request, newest 50 | per pop |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def millions(value: float | None, spec: str) -> str:
        return "n/a" if value is None else f"{value / 1e6:{spec}} M"

    for row in callgrind["results"]:
        if "error" in row:
            lines.append(f"| {row['peer']} | failed: {row['error'][:120]} | | | | | |")
            continue
        cells = (
            millions(row["append"], ".2f"),
            millions(row["full_load"], ".1f"),
            millions(row["last_50"], ".2f"),
            millions(row.get("request_full"), ".1f"),
            millions(row.get("request_50"), ".2f"),
            millions(row.get("pop"), ".2f"),
        )
        lines.append(f"| {row['peer']} | " + " | ".join(cells) + " |")
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
        size = f"{spread(sizes)[0]:.1f} MB" if sizes and spread(sizes)[0] else "-"
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


def _split(stores: Sequence[str]) -> tuple[list[str], list[str]]:
    return [s for s in stores if s not in POSTGRES_STORES], [
        s for s in stores if s in POSTGRES_STORES
    ]


def postgres_section(saved: dict[str, Any]) -> list[str]:
    """The PostgreSQL comparison (or why it did not run)."""
    _sqlite, pg = _split(saved["stores"])
    if not pg:
        return ["Not selected."]
    if saved.get("postgres_unavailable"):
        return [f"Not run: {saved['postgres_unavailable']}."]
    table, notes = main_table(saved["results"], pg, POSTGRES_BASELINE, METRICS)
    return [
        "A throwaway cluster like the test suite's (`tests/support/postgres.py`: PostgreSQL on "
        "TCP loopback, `fsync=off`, `synchronous_commit=off`), a fresh database per store and "
        "repetition. Ratios are to convstore on PostgreSQL.",
        "",
        table,
        "",
        *[f"- {note}" for note in notes],
    ]


def document(saved: dict[str, Any]) -> str:
    """docs/performance.md, from the saved results of a run."""
    run, env = saved["run"], saved["environment"]
    stores, _pg = _split(saved["stores"])
    table, notes = main_table(saved["results"], stores)
    render = saved["render"]
    scale = saved.get("scale", {})
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
        "## The turn loop",
        "",
        f"{run.get('loop_turns', 500)} turns on a fresh file, each: read the history (all of it, "
        "or the newest 50 records), build the next model request from it the way the store's "
        "framework does, serialise it with `json.dumps`, append the turn. Turns/s over the "
        "whole loop; ratios are *store / convstore* (above 1: the store turned faster). "
        "convstore renders to the Responses API, the shape the openai-agents sessions store.",
        "",
        turn_loop_table(saved["results"], stores),
        "",
        "## PostgreSQL side by side",
        "",
        *postgres_section(saved),
        "",
        "## Targets",
        "",
        targets_table(saved["results"], scale, saved.get("callgrind")),
        "",
        WHY,
        "",
        "## Before and after the schema-v2 layout (issue 11)",
        "",
        "Append, full load and WAL pages from the SQLite table above (same run, same "
        "workload); last-50 from `bench.scale_bench` (one fresh file per version: a "
        f"1,000-message conversation and a {run.get('scale_messages', 100_000):,}-message one, "
        "back-to-back median of 50 loads).",
        "",
        layout_table(saved["results"], scale),
        "",
        scale_notes(scale),
        "",
        "## Moving the head at 1,000 and 100,000 messages (issue 19)",
        "",
        "`bench.moves_bench` in the same scale run: medians of each move at the end of each "
        "conversation (the 100,000-message chain is a fork of the branched one at its head), "
        "with callgrind instructions per call when valgrind is installed.",
        "",
        _moves(scale),
        "",
        "## The conversation list and gc at scale",
        "",
        "`bench.listing_bench --bulk`: conversations created by the store's own row builders, "
        "1,000 per transaction (not one `create_conversation` call each), 10 tenants, "
        "metadata `project` (100 values) and `user` (100 values); the median "
        "of 21 pages of 20 after a warm-up, each size growing the same database.",
        "",
        listing_markdown(saved["listing"])
        if isinstance(saved.get("listing"), dict)
        else str(saved.get("listing", "Not run.")),
        "",
        "## Instructions per call (callgrind)",
        "",
        "Exact counts where wall time is noisy: every thread of the process, measured calls only "
        "(`bench.callgrind_bench`).",
        "",
        callgrind_table(saved.get("callgrind", {})),
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
    """Run every store and the other benchmarks; everything the report is made from."""
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _loadavg()
    pg_wanted = any(s in POSTGRES_STORES for s in stores)
    with v1_source() as v1_src, postgres_cluster(pg_wanted) as (pg_env, pg_missing):
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
    parser.add_argument("--skip-scale", action="store_true", help="no scale run (issue 11)")
    parser.add_argument("--skip-callgrind", action="store_true", help="no callgrind counts")
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
        if args.save_json is not None:
            args.save_json.write_text(json.dumps(saved, indent=1))

    sqlite_stores, _pg = _split(saved["stores"])
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
    print(targets_table(saved["results"], saved.get("scale"), saved.get("callgrind")))
    print()
    print(layout_table(saved["results"], saved.get("scale", {})))
    print(scale_notes(saved.get("scale", {})))
    print()
    print(_moves(saved.get("scale", {})))
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
        print(f"\nwritten to {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
