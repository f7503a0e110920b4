"""docs/performance.md: the prose around the tables, every number in it taken from the run.

The templates below hold no figures of their own: turn counts, repetitions, the SQLite default
and every measurement are filled in from the saved results (`document`), so re-running
`bench.compare` (or ``--from-json``) can never leave a stale number in the text.
"""

from __future__ import annotations

from typing import Any

from bench.listing_bench import markdown as listing_markdown
from bench.peers import STORES
from bench.render_bench import markdown as render_markdown
from bench.report_tables import (
    callgrind_table,
    details_table,
    interpreters,
    layout_table,
    main_table,
    moves_section,
    postgres_section,
    scale_notes,
    split_stores,
    turn_loop_table,
)
from bench.targets import targets_table
from bench.workload import ITEMS_PER_TURN

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
- **Loads are timed back to back**, for every store. On a small VM the same CPU work can run
  markedly slower after an idle pause (caches and frequency scaling), so an isolated call may
  cost more than these medians; `bench.store_bench` measures both for convstore."""


WHY = """\
Where convstore trails, the work differs: an append validates canonical messages, bumps the
conversation's sequence counter and revision and writes two tables (seven rows a turn: five
messages with their parts as one JSON column, two tool calls with their lifecycle) where a
JSON-row store writes six opaque rows; a typed load builds frozen models (messages, parts,
tool calls with their lifecycles) where `SQLiteSession` `json.loads` one column per item. The
callgrind table below splits each path into instructions, which do not move with the machine's
load; where a wall-time ratio and the instruction ratio disagree, the machine was busy."""


def run_scope(saved: dict[str, Any]) -> str:
    """What this run measured and left out, and how busy the machine was, from the run."""
    run, env = saved["run"], saved["environment"]
    left_out = [s for s in STORES if s not in saved["stores"]]
    skipped = [
        name
        for name, value in (
            ("the scale run", saved.get("scale")),
            ("the callgrind counts", (saved.get("callgrind") or {}).get("results")),
            ("the listing benchmark", saved.get("listing")),
            ("the render benchmark", saved.get("render")),
            ("the search benchmark", saved.get("search")),
        )
        if not value or isinstance(value, str)
    ]
    parts = [
        f"This run: {run['reps']} repetitions, a {run.get('loop_turns', 0):,}-turn turn loop, "
        f"{len(saved['stores'])} of {len(STORES)} stores"
        + (f" (left out: {', '.join(left_out)})" if left_out else "")
        + "."
    ]
    if skipped:
        parts.append(f"Not run: {', '.join(skipped)}.")
    parts.append(f"Load average: {env.get('load average', 'unknown')}.")
    return " ".join(parts)


def search_section(search: Any) -> str:
    """`bench.search_bench`'s tables (its own Markdown), or why it did not run."""
    if not isinstance(search, dict):
        return str(search or "Not run.")
    from bench.search_bench import markdown as search_markdown

    return search_markdown(search)


def document(saved: dict[str, Any]) -> str:
    """docs/performance.md, from the saved results of a run."""
    run, env = saved["run"], saved["environment"]
    stores, _pg = split_stores(saved["stores"])
    table, notes = main_table(saved["results"], stores)
    render = saved["render"]
    scale = saved.get("scale", {})
    large = f"{run.get('scale_messages', 100_000):,}"
    out = [
        "# Performance against the stores people use today",
        "",
        f"Generated by `{env['command']}` (`make bench` runs it with the defaults) on "
        f"{env['date']}; re-running it overwrites this file.",
        "",
        run_scope(saved),
        "",
        "## Targets (issue 31, performance v4)",
        "",
        "Each row: the two medians it compares, from this one interleaved run, and, where "
        "`bench.callgrind_bench` counted the same path, the instructions per call of each "
        "(every thread; they do not move with the machine's load, wall times do). The ADK rows "
        "come from `bench.frameworks_bench` (run by `make bench` in ADK's environment), the "
        "search rows from `bench.search_bench`.",
        "",
        targets_table(saved),
        "",
        WHY,
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
        "## Search beside a writer, and what the index costs an append",
        "",
        search_section(saved.get("search")),
        "",
        "## Before and after the schema-v2 layout",
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
        f"## Moving the head at 1,000 and {large} messages",
        "",
        "`bench.moves_bench` in the same scale run: medians of each move at the end of each "
        f"conversation (the {large}-message chain is a fork of the branched one at its head), "
        "with callgrind instructions per call when valgrind is installed.",
        "",
        moves_section(scale),
        "",
        "## The conversation list and gc at scale",
        "",
        "`bench.listing_bench --bulk`: conversations created by the store's own row builders, "
        "1,000 per transaction (not one `create_conversation` call each), 10 tenants, "
        "metadata `project` (100 values) and `user` (100 values); the median "
        "of 21 pages of 20 after a warm-up, each size a database of its own, the sizes and "
        "variants interleaved.",
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
