"""The report's tables, each built from one run's saved results (`bench.compare`).

Every figure in a table comes from the results it is given; a figure the run did not measure
is shown as n/a with the reason, never filled in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.harness.fixtures import V1_COMMIT
from bench.harness.timing import spread
from bench.moves_bench import moves_table
from bench.peers import BASELINE, POSTGRES_BASELINE, POSTGRES_STORES

METRICS: tuple[tuple[str, str, str], ...] = (
    ("append_items_s", "append items/s", ",.0f"),
    ("full_load_ms", "full load ms", ".1f"),
    ("last_ms", "last-50 ms", ".2f"),
    ("concurrent_items_s", "concurrent items/s", ",.0f"),
    ("pop_ms", "pop ms", ".2f"),
)
"""The main tables: result key, column title, number format."""

WAL_METRIC = ("wal_pages_per_append", "WAL pages/append", ".2f")


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
    """Before and after the schema-v2 layout change, from this run."""
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


def moves_section(scale: dict[str, Any]) -> str:
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
        f"| store | per append | search catch-up per append | per full load ({turns} turns) "
        "| per last-50 load | turn-loop request, whole history | turn-loop request, newest 50 "
        "| per pop |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def millions(value: float | None, spec: str) -> str:
        return "n/a" if value is None else f"{value / 1e6:{spec}} M"

    for row in callgrind["results"]:
        if "error" in row:
            lines.append(f"| {row['peer']} | failed: {row['error'][:120]} | | | | | | |")
            continue
        cells = (
            millions(row["append"], ".2f"),
            millions(row.get("catch_up"), ".2f"),
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


def split_stores(stores: Sequence[str]) -> tuple[list[str], list[str]]:
    return [s for s in stores if s not in POSTGRES_STORES], [
        s for s in stores if s in POSTGRES_STORES
    ]


def postgres_section(saved: dict[str, Any]) -> list[str]:
    """The PostgreSQL comparison (or why it did not run)."""
    _sqlite, pg = split_stores(saved["stores"])
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
