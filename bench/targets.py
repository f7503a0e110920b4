"""The speed targets convstore holds itself to, judged from one `bench.compare` run.

Every row names its target, the two medians it compares (from the same interleaved run), the
ratio, and whether it was met. A figure the run did not measure (a store left out, an older
peer module without that phase) is reported as not measured, never guessed. The callgrind
counts of the same run stand beside the wall-time ratios where they exist: instruction counts
do not move with the machine's load, wall times do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import median
from typing import Any

__all__ = ["targets_table"]

Results = dict[str, dict[str, Any]]


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


class _Table:
    def __init__(self, results: Results, callgrind: dict[str, Any] | None) -> None:
        self.results = results
        self.rows: list[_Row] = []
        self.counts = {
            row["peer"]: row for row in (callgrind or {}).get("results", []) if "error" not in row
        }

    def _instructions(self, ours: str, theirs: str, count: str | None) -> str:
        if count is None:
            return ""
        a, b = self.counts.get(ours, {}).get(count), self.counts.get(theirs, {}).get(count)
        if not a or not b:
            return ""
        return f"; callgrind {a / 1e6:.2f} M vs {b / 1e6:.2f} M = {a / b:.2f}x"

    def ratio(
        self,
        what: str,
        key: str,
        ours: str,
        theirs: str,
        bound: float,
        *,
        count: str | None = None,
    ) -> None:
        """``ours``/``theirs`` medians of ``key``: rates must reach ``bound``, times stay under."""
        a, b = _median(self.results.get(ours), key), _median(self.results.get(theirs), key)
        if a is None or b is None:
            self.rows.append(_Row(what, "n/a", "not measured"))
            return
        rate = key.endswith("_s") and not key.endswith("_ms")
        value = a / b
        met = value >= bound if rate else value <= bound
        need = f"{value:.2f}x, needs {'≥' if rate else '≤'} {bound:.1f}x"
        shown = f"{a:,.2f} vs {b:,.2f} = {value:.2f}x" + self._instructions(ours, theirs, count)
        self.rows.append(_Row(what, shown, _verdict(met, need)))

    def no_errors(self, what: str, store: str) -> None:
        result = self.results.get(store)
        if not result or not result.get("repetitions"):
            self.rows.append(_Row(what, "n/a", "not measured"))
            return
        errors = sum(
            r["concurrent_errors"] + r["concurrent_lost_turns"] for r in result["repetitions"]
        )
        self.rows.append(_Row(what, f"{errors} errors", _verdict(not errors, "errors surfaced")))

    def bound(self, what: str, value: float | None, limit: float, unit: str) -> None:
        if value is None:
            self.rows.append(_Row(what, "n/a", "not measured"))
            return
        met = value <= limit
        self.rows.append(
            _Row(what, f"{value:,.2f} {unit}", _verdict(met, f"{value:,.2f} {unit} > {limit}"))
        )

    def markdown(self) -> str:
        lines = ["| target | this run (medians) | |", "|---|---|---|"]
        lines += [f"| {r.what} | {r.value} | {r.verdict} |" for r in self.rows]
        return "\n".join(lines)


def _scale_rows(table: _Table, scale: dict[str, Any]) -> None:
    """Flat in length: the scale run's 1k vs large-conversation figures (when it ran)."""
    run = scale.get("v2") if isinstance(scale, dict) else None
    if not isinstance(run, dict):
        table.rows.append(_Row("SQLite: cost flat at 100,000 messages", "n/a", "not measured"))
        return
    large = f"{run.get('messages', 0):,}"
    pairs: tuple[tuple[str, str, str], ...] = (
        ("append", "small_append_ms", "large_append_ms"),
        ("`load(last=50)`", "small_last_ms", "large_last_ms"),
    )
    for name, small_key, large_key in pairs:
        small, big = run.get(small_key), run.get(large_key)
        what = f"SQLite: {name} at {large} messages ≤ 1.1x its cost at 1,000"
        if small is None or big is None:
            table.rows.append(_Row(what, "n/a", "not measured"))
            continue
        value = big / small
        table.rows.append(
            _Row(
                what,
                f"{big:.2f} ms vs {small:.2f} ms = {value:.2f}x",
                _verdict(value <= 1.1, f"{value:.2f}x"),
            )
        )
    for operation in ("pop", "truncate", "switch_branch"):
        # Both shapes of the large conversation (one chain, 100 branches): the slower counts.
        shapes = [run.get(f"{shape}_{operation}_ms") for shape in ("large_chain", "large")]
        measured = [v for v in shapes if v is not None]
        table.bound(
            f"SQLite: `{operation}` at {large} messages (chain and 100 branches) ≤ 5 ms",
            max(measured) if measured else None,
            5.0,
            "ms",
        )


def targets_table(
    results: Results, scale: dict[str, Any] | None, callgrind: dict[str, Any] | None
) -> str:
    """The targets of the performance work, judged from this run."""
    t = _Table(results, callgrind)
    r: Callable[..., None] = t.ratio
    session, peer = "convstore_session", "agents_sqlite"
    r("openai-agents: `add_items` ≥ 1.0x `SQLiteSession`", "append_items_s", session, peer, 1.0,
      count="append")  # fmt: skip
    r("openai-agents: `get_items()` ≤ 1.1x its time", "full_load_ms", session, peer, 1.1,
      count="full_load")  # fmt: skip
    r("openai-agents: `get_items(limit=50)` ≤ 1.0x", "last_ms", session, peer, 1.0,
      count="last_50")  # fmt: skip
    r("openai-agents: `pop_item` ≤ 2.0x", "pop_ms", session, peer, 2.0, count="pop")
    r("openai-agents: 20 concurrent sessions ≥ 1.0x the items/s", "concurrent_items_s", session,
      peer, 1.0)  # fmt: skip
    t.no_errors("openai-agents: 20 concurrent sessions, zero errors", session)
    by_url = "convstore_session_url"  # ConvstoreSession(id, url=...), as SQLiteSession(id, path)
    r("openai-agents: 20 concurrent `url=` sessions ≥ 1.0x the items/s", "concurrent_items_s",
      by_url, peer, 1.0)  # fmt: skip
    t.no_errors("openai-agents: 20 concurrent `url=` sessions, zero errors", by_url)
    store, cold = "convstore_store", "convstore_nocache"
    r("SQLite: `append` ≥ 1.0x `SQLiteSession`", "append_items_s", store, peer, 1.0,
      count="append")  # fmt: skip
    r("SQLite: `load(last=50)` ≤ 1.0x `get_items(limit=50)`", "last_ms", store, peer, 1.0,
      count="last_50")  # fmt: skip
    r("SQLite: cold typed full load (cache off) ≤ 1.8x `get_items()`", "full_load_ms", cold, peer,
      1.8, count="full_load")  # fmt: skip
    for key, history in (("turn_loop_full_turns_s", "whole history"),
                         ("turn_loop_last_turns_s", "newest 50")):  # fmt: skip
        count = "request_full" if key.startswith("turn_loop_full") else "request_50"
        r(f"SQLite: turn loop ({history}), cache on ≥ 1.2x the peer's turns/s", key, store, peer,
          1.2, count=count)  # fmt: skip
        r(f"SQLite: turn loop ({history}), cache off ≥ 1.0x", key, cold, peer, 1.0)
    _scale_rows(t, scale or {})
    t.no_errors("SQLite: concurrent appends, zero errors", store)
    pg = "convstore_pg"
    r("PostgreSQL: append ≥ 0.6x the raw asyncpg floor", "append_items_s", pg, "raw_asyncpg", 0.6)
    r("PostgreSQL: append ≥ 1.5x `SQLAlchemySession`", "append_items_s", pg,
      "agents_sqlalchemy_pg", 1.5)  # fmt: skip
    r("PostgreSQL: full load ≤ 1.2x `SQLAlchemySession`", "full_load_ms", pg,
      "agents_sqlalchemy_pg", 1.2)  # fmt: skip
    r("PostgreSQL: `last=50` ≤ 1.0x `SQLAlchemySession`", "last_ms", pg, "agents_sqlalchemy_pg",
      1.0)  # fmt: skip
    t.no_errors("PostgreSQL: concurrent phase, zero errors", pg)
    return t.markdown()
