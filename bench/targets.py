"""The speed targets convstore holds itself to (issue 31, performance v4), judged from one run.

The targets are data (`RATIOS`, `FRAMEWORK_RATIOS` and the search rows): each names the two
stores, the measure and the bound. Every row shows the two medians it compares (from the same
interleaved `bench.compare` run), the ratio, whether it was met, and beside it the callgrind
counts of the same run where they exist (instruction counts do not move with the machine's
load, wall times do). A figure the run did not measure is reported as not measured, never
guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any, Final

__all__ = ["FRAMEWORK_RATIOS", "RATIOS", "Ratio", "targets_table"]

Results = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Ratio:
    """``ours`` / ``theirs`` medians of ``key``; a rate must reach ``bound``, a time stay under."""

    what: str
    key: str
    ours: str
    theirs: str
    bound: float
    count: str | None = None
    """The callgrind count (`bench.callgrind_bench`) shown beside it, if any."""


SESSION, PEER, STORE, COLD = (
    "convstore_session",
    "agents_sqlite",
    "convstore_store",
    "convstore_nocache",
)
PG, PG_PEER, PG_FLOOR = "convstore_pg", "agents_sqlalchemy_pg", "raw_asyncpg"

RATIOS: Final[tuple[Ratio, ...]] = (
    Ratio("SQLite: store `append` ≥ 0.9x `SQLiteSession` items/s", "append_items_s", STORE, PEER,
          0.9, "append"),
    Ratio("SQLite: cold full load (cache off) ≤ 1.8x `get_items()`'s time", "full_load_ms", COLD,
          PEER, 1.8, "full_load"),
    Ratio("SQLite: `load(last=50)` ≤ 1.0x `get_items(limit=50)`", "last_ms", STORE, PEER, 1.0,
          "last_50"),
    Ratio("openai-agents: `add_items` ≥ 0.8x `SQLiteSession`", "append_items_s", SESSION, PEER,
          0.8, "append"),
    Ratio("openai-agents: `get_items()` ≤ 1.0x its time", "full_load_ms", SESSION, PEER, 1.0,
          "full_load"),
    Ratio("openai-agents: `get_items(limit=50)` ≤ 1.0x", "last_ms", SESSION, PEER, 1.0, "last_50"),
    Ratio("openai-agents: `pop_item` ≤ 2.0x", "pop_ms", SESSION, PEER, 2.0, "pop"),
    Ratio("openai-agents: 20 sessions at once ≥ 0.8x the items/s", "concurrent_items_s", SESSION,
          PEER, 0.8),
    Ratio("turn loop, whole history ≥ 1.0x `SQLiteSession`'s turns/s", "turn_loop_full_turns_s",
          STORE, PEER, 1.0, "request_full"),
    Ratio("turn loop, newest 50 ≥ 1.0x", "turn_loop_last_turns_s", STORE, PEER, 1.0,
          "request_50"),
    Ratio("PostgreSQL: append ≥ 0.9x the raw same-rows floor", "append_items_s", PG, PG_FLOOR,
          0.9),
    Ratio("PostgreSQL: append ≥ 1.0x `SQLAlchemySession`", "append_items_s", PG, PG_PEER, 1.0),
    Ratio("PostgreSQL: full load ≤ 1.0x `SQLAlchemySession`'s time", "full_load_ms", PG, PG_PEER,
          1.0),
    Ratio("PostgreSQL: `last=50` ≤ 1.2x `SQLAlchemySession`'s time", "last_ms", PG, PG_PEER, 1.2),
)  # fmt: skip
"""The store-beside-peer targets, in the order of the issue."""

FRAMEWORK_RATIOS: Final[tuple[tuple[str, str, str, bool], ...]] = (
    ("ADK: append events/s ahead of `DatabaseSessionService`", "adk", "append events/s", True),
    ("ADK: `get_session` (all) ahead", "adk", "get_session ms (all)", False),
    ("ADK: `get_session` (last 50) ahead", "adk", "get_session ms (last 50)", False),
)
"""(what, framework, measure, higher is better): `bench.frameworks_bench`'s results; ahead
means a ratio of at least 1.0 for rates and at most 1.0 for times."""

SEARCH_P99_MS: Final = 50.0
"""Search p99 at 100,000 messages with a writer at 20 turns/s beside the queries."""
SEARCH_APPEND_RATIO: Final = 0.97
"""Append with search objects ≥ this x append without them (instructions)."""


@dataclass(frozen=True, slots=True)
class _Row:
    what: str
    value: str
    verdict: str


def _median(result: dict[str, Any] | None, key: str) -> float | None:
    if not result or not result.get("available", True):
        return None
    values = [r[key] for r in result.get("repetitions", []) if r.get(key) is not None]
    return median(values) if values else None


def _verdict(met: bool, shortfall: str) -> str:
    return "met" if met else f"**missed** ({shortfall})"


def _not_measured(what: str) -> _Row:
    return _Row(what, "n/a", "not measured")


def _counts(callgrind: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    rows = (callgrind or {}).get("results", [])
    return {row["peer"]: row for row in rows if "error" not in row}


def _ratio_row(target: Ratio, results: Results, counts: dict[str, dict[str, Any]]) -> _Row:
    a = _median(results.get(target.ours), target.key)
    b = _median(results.get(target.theirs), target.key)
    if a is None or b is None:
        return _not_measured(target.what)
    rate = target.key.endswith("_s") and not target.key.endswith("_ms")
    value = a / b
    met = value >= target.bound if rate else value <= target.bound
    shown = f"{a:,.2f} vs {b:,.2f} = {value:.2f}x"
    if target.count is not None:
        ours = counts.get(target.ours, {}).get(target.count)
        theirs = counts.get(target.theirs, {}).get(target.count)
        if ours and theirs:
            shown += (
                f"; callgrind {ours / 1e6:.2f} M vs {theirs / 1e6:.2f} M = {ours / theirs:.2f}x"
            )
    need = f"{value:.2f}x, needs {'≥' if rate else '≤'} {target.bound:.1f}x"
    return _Row(target.what, shown, _verdict(met, need))


def _framework_rows(frameworks: dict[str, Any]) -> list[_Row]:
    rows = []
    for what, framework, measure, higher in FRAMEWORK_RATIOS:
        run = frameworks.get(framework)
        if not isinstance(run, dict):
            rows.append(_not_measured(what))
            continue
        ours = run["results"][run["ours"]].get(measure)
        theirs = run["results"][run["peer"]].get(measure)
        if not ours or not theirs:
            rows.append(_not_measured(what))
            continue
        value = ours / theirs
        met = value >= 1.0 if higher else value <= 1.0
        need = f"{value:.2f}x, needs {'≥' if higher else '≤'} 1.0x"
        rows.append(_Row(what, f"{ours:,.2f} vs {theirs:,.2f} = {value:.2f}x", _verdict(met, need)))
    return rows


def _search_rows(search: Any) -> list[_Row]:
    rows = []
    for database in ("sqlite", "postgresql"):
        what = f"search p99 ≤ {SEARCH_P99_MS:.0f} ms beside a writer ({database})"
        result = search.get(database) if isinstance(search, dict) else None
        beside = result.get("queries_beside_writer") if isinstance(result, dict) else None
        if not isinstance(result, dict) or not isinstance(beside, dict):
            rows.append(_not_measured(what))
            continue
        p99 = beside["all"]["p99_ms"]
        writer = beside.get("writer", {})
        shown = (f"{p99:.1f} ms at {result['messages']:,} messages, writer "
                 f"{writer.get('turns_per_s', 'n/a')} turns/s")  # fmt: skip
        rows.append(_Row(what, shown, _verdict(p99 <= SEARCH_P99_MS, f"{p99:.1f} ms")))
    what = f"append with search ≥ {SEARCH_APPEND_RATIO}x without search objects (instructions)"
    counted = search.get("callgrind") if isinstance(search, dict) else None
    if isinstance(counted, dict):
        ratio = counted["ratio"]
        without = counted["instructions_per_append_without"] / 1e6
        with_index = counted["instructions_per_append_with"] / 1e6
        shown = (f"SQLite: {without:.2f} M without vs {with_index:.2f} M with = {ratio:.2f}x "
                 f"(with each turn's catch-up: {counted['ratio_with_catch_up']:.2f}x)")  # fmt: skip
        rows.append(_Row(what, shown, _verdict(ratio >= SEARCH_APPEND_RATIO, f"{ratio:.2f}x")))
    else:
        rows.append(_not_measured(what))
    result = search.get("postgresql") if isinstance(search, dict) else None
    append = result.get("append") if isinstance(result, dict) else None
    what = "PostgreSQL: append with search vs without (wall items/s; no server count here)"
    if isinstance(append, dict):
        ratio = append["ratio"]
        rows.append(
            _Row(what, f"{ratio:.2f}x", _verdict(ratio >= SEARCH_APPEND_RATIO, f"{ratio:.2f}x"))
        )
    else:
        rows.append(_not_measured(what))
    return rows


def targets_table(saved: dict[str, Any]) -> str:
    """The targets of the performance work, judged from the saved results of one run."""
    counts = _counts(saved.get("callgrind"))
    rows = [_ratio_row(target, saved["results"], counts) for target in RATIOS]
    rows += _framework_rows(saved.get("frameworks") or {})
    rows += _search_rows(saved.get("search"))
    lines = ["| target | this run (medians) | |", "|---|---|---|"]
    lines += [f"| {r.what} | {r.value} | {r.verdict} |" for r in rows]
    return "\n".join(lines)
