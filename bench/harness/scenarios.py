"""Every benchmark as data: what it runs, at full size and at smoke size, and where.

A `Scenario` is a module run as ``python -m <module> <arguments>`` in the virtual environment
its `env` names (the Makefile's: ``dev`` is .venv, ``bench`` is .venv-bench with the peer
stores, the others the framework environments). ``make bench`` runs the `full` arguments (the
report's numbers; `bench.compare` drives the peers and the benchmarks the report holds);
``make bench-smoke`` runs every scenario with its `smoke` arguments, tiny sizes, so a
benchmark that no longer runs fails ``make test``. In arguments, ``{tmp}`` is a fresh
directory of the run.

Invariants: every module under ``bench/`` that can be run is a scenario here, or is named in
`NOT_SCENARIOS` with the scenario that runs it (``python -m bench.harness smoke`` checks both);
the smoke sizes exercise every phase of the full run, only smaller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

Env = Literal["dev", "bench", "langgraph", "adk", "pydantic-ai"]
Fixture = Literal["postgres", "v1"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One benchmark."""

    name: str
    module: str
    what: str
    env: Env
    smoke: tuple[str, ...]
    full: tuple[str, ...] = ()
    needs: tuple[Fixture, ...] = ()
    """``postgres``: a cluster (``BENCH_POSTGRES_DSN``); ``v1``: convstore v1's source."""
    smoke_timeout: float = 600.0


_PEER_SMOKE: Final = (
    "--reps", "1", "--turns", "6", "--loads", "1", "--lasts", "1", "--conversations", "2",
    "--conversation-turns", "2", "--loop-turns", "3", "--pops", "2", "--wal-turns", "2",
)  # fmt: skip

_PEERS: Final[tuple[tuple[str, str, tuple[Fixture, ...]], ...]] = (
    ("convstore_store", "convstore ConversationStore (every SQLite ratio's reference)", ()),
    ("convstore_nocache", "ConversationStore with its message cache off (cold loads)", ()),
    ("convstore_v1", "convstore before the schema-v2 layout (commit d7b1e98)", ("v1",)),
    ("agents_sqlite", "openai-agents SQLiteSession", ()),
    ("agents_sqlalchemy", "openai-agents SQLAlchemySession on aiosqlite", ()),
    ("convstore_session", "convstore's ConvstoreSession (openai-agents)", ()),
    ("convstore_session_url", "ConvstoreSession(url=), sessions sharing one store", ()),
    ("adk_database", "google-adk DatabaseSessionService", ()),
    ("langchain_sql", "langchain-community SQLChatMessageHistory", ()),
    ("raw_sqlite3", "the floor: sqlite3, one JSON row per item, one transaction a turn", ()),
    ("raw_sqlite3_thread", "the same floor through asyncio.to_thread", ()),
    ("convstore_pg", "ConversationStore on PostgreSQL", ("postgres",)),
    ("agents_sqlalchemy_pg", "openai-agents SQLAlchemySession on asyncpg", ("postgres",)),
    ("raw_asyncpg", "the PostgreSQL floor: convstore's rows, one statement a turn", ("postgres",)),
)

SCENARIOS: Final[tuple[Scenario, ...]] = (
    *(
        Scenario(f"peer:{name}", f"bench.peers.{name}", what, "bench", _PEER_SMOKE, needs=needs)
        for name, what, needs in _PEERS
    ),
    Scenario(
        "compare", "bench.compare",
        "every peer interleaved, the callgrind counts, search, scale and listing: "
        "docs/performance.md",
        "bench",
        smoke=("--reps", "1", "--turns", "6", "--loop-turns", "3", "--stores",
               "convstore_store,convstore_pg", "--skip-scale", "--skip-callgrind",
               "--search-messages", "400", "--listing-sizes", "", "--skip-render",
               "--output", "{tmp}/performance.md", "--save-json", "{tmp}/performance.json"),
        full=("--save-json", "docs/performance.json", "--search-json", "docs/search-bench.json",
              "--frameworks-json", "docs/frameworks-adk.json,docs/frameworks-pydantic-ai.json"),
        needs=("postgres",), smoke_timeout=900,
    ),
    Scenario(
        "callgrind", "bench.callgrind_bench",
        "instructions per append, full load, last-50, request and pop of each SQLite peer",
        "bench",
        smoke=("--peers", "convstore_store,convstore_session", "--turns", "3",
               "--appends", "2", "--lasts", "2"),
    ),
    Scenario(
        "search", "bench.search_bench",
        "search p50/p99 at 100k messages beside a writer at 20 turns/s; append with vs without "
        "search objects (items/s, WAL frames, callgrind)",
        "dev",
        smoke=("--messages", "400", "--conversations", "8", "--rounds", "1",
               "--appends-per-round", "3", "--queries-per-kind", "4", "--callgrind",
               "--json-out", "{tmp}/search.json"),
        full=("--callgrind",),
        needs=("postgres",), smoke_timeout=900,
    ),
    Scenario(
        "render", "bench.render_bench", "render of a 500-turn history to every target", "dev",
        smoke=("--reps", "1", "--turns", "10"),
    ),
    Scenario(
        "scale", "bench.scale_bench",
        "append, last-50, pop, truncate and switch at 1k vs 100k messages", "dev",
        smoke=("--messages", "300", "--branches", "3", "--lasts", "2", "--moves-reps", "1"),
    ),
    Scenario(
        "listing", "bench.listing_bench", "the conversation list and gc at 1k-1M conversations",
        "dev",
        smoke=("--sizes", "50", "--database", "sqlite,postgresql", "--no-gc", "--bulk"),
        needs=("postgres",),
    ),
    Scenario(
        "store", "bench.store_bench", "ConversationStore append and load throughput", "dev",
        smoke=("--turns", "10", "--repeat", "1"),
    ),
    Scenario(
        "cold_load", "bench.cold_load_bench", "a cold typed load in a fresh process", "bench",
        smoke=("--turns", "6", "--repeat", "1", "--peers", "convstore_nocache"),
    ),
    Scenario(
        "reload", "bench.reload_bench", "a reload after the cache was dropped", "bench",
        smoke=("--turns", "6", "--repeat", "1", "--peers", "convstore_store"),
    ),
    Scenario(
        "concurrent", "bench.concurrent_bench", "many writers on one store", "dev",
        smoke=("--turns", "2", "--repeat", "1", "--processes", "2"), needs=("postgres",),
    ),
    Scenario(
        "contention", "bench.contention_bench", "listing and gc beside writers", "dev",
        smoke=("--conversations", "20", "--listing-seconds", "0.5", "--gc-seconds", "1",
               "--gc-grace", "0.2", "--gc-interval", "0.2"),
    ),
    Scenario(
        "gc", "bench.gc_bench", "blob garbage collection, alone and beside a writer", "dev",
        smoke=("--blobs", "20", "--reps", "1", "--callgrind-blobs", "5"),
    ),
    Scenario(
        "blobs", "bench.blobs_bench", "attachment streaming and dedupe", "dev",
        smoke=("--stream-mib", "2", "--blobs", "10"),
    ),
    Scenario(
        "import", "bench.import_bench", "importing an export file", "dev",
        smoke=("--mib", "0.2",),
    ),
    Scenario(
        "transfer", "bench.transfer_bench", "export and restore", "dev",
        smoke=("--conversations", "5", "--messages", "4", "--repeat", "1"),
    ),
    Scenario(
        "cli_startup", "bench.cli_startup_bench", "`convstore` start-up time", "dev",
        smoke=("--rounds", "1", "--warm-ups", "0"),
    ),
    Scenario(
        "web", "bench.web_bench", "the inspector's pages on long conversations", "dev",
        smoke=("--sizes", "300", "--rounds", "1", "--callgrind"),
    ),
    Scenario(
        "mcp", "bench.mcp_bench", "the MCP server's tools", "dev",
        smoke=("--rounds", "1", "--copies", "1", "--startups", "1", "--callgrind"),
    ),
    Scenario(
        "peer_paths", "bench.peer_paths_bench", "PostgreSQL and pop paths beside the peers",
        "bench",
        smoke=("--reps", "1", "--sections", "pg", "--turns", "6"), needs=("postgres",),
        smoke_timeout=900,
    ),
    Scenario(
        "langgraph", "bench.langgraph_bench", "ConvstoreSaver beside AsyncSqliteSaver",
        "langgraph",
        smoke=("--turns", "3", "--reps", "1", "--callgrind-turns", "2", "--counted-turns", "1"),
        full=("--json-out", "docs/langgraph-bench.json"),
    ),
    Scenario(
        "frameworks:adk", "bench.frameworks_bench", "ADK through the integration", "adk",
        smoke=("adk", "--turns", "3", "--writers", "2"),
        full=("adk", "--json-out", "docs/frameworks-adk.json"),
    ),
    Scenario(
        "frameworks:pydantic-ai", "bench.frameworks_bench",
        "pydantic-ai through the integration", "pydantic-ai",
        smoke=("pydantic-ai", "--turns", "3", "--writers", "2"),
        full=("pydantic-ai", "--json-out", "docs/frameworks-pydantic-ai.json"),
    ),
)  # fmt: skip
"""Every benchmark, in the order ``make bench-smoke`` runs them."""

NOT_SCENARIOS: Final[dict[str, str]] = {
    "bench.moves_bench": "scale (its child process, under callgrind)",
    "bench.peers.runner": "every peer:* scenario (the measuring half)",
    "bench.peers.shapes": "the openai-agents peers (item shapes)",
    "bench.workload": "every scenario (the shared workload)",
    "bench.report": "compare (the Markdown report)",
    "bench.report_tables": "compare (its tables)",
    "bench.targets": "compare (the targets table)",
    "bench.databases": "the scenarios on SQLite and PostgreSQL",
}
"""Modules that are not benchmarks themselves, and what runs them."""

ROOT = Path(__file__).resolve().parents[2]


def unlisted() -> list[str]:
    """Runnable modules under bench/ that no scenario runs and `NOT_SCENARIOS` does not name."""
    known = {s.module for s in SCENARIOS} | set(NOT_SCENARIOS)
    found = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] in {"__init__", "__main__"} or parts[1] == "harness":
            continue
        module = ".".join(parts)
        if module not in known:
            found.append(module)
    return found
