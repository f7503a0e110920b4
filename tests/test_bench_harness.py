"""The benchmark harness (`bench.harness`, its public API only): how numbers are summarised, how
stores are interleaved, and that every benchmark module is a scenario ``make bench-smoke`` runs.

Running the scenarios themselves is ``make bench-smoke``'s work (each in the environment it
needs); these tests check the parts that decide what a benchmark reports.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from bench.harness import NOT_SCENARIOS, SCENARIOS, quantile, rotations, spread, summary, unlisted

ROOT = Path(__file__).resolve().parents[1]


def test_p99_is_the_inclusive_percentile_earlier_reports_used() -> None:
    # The peers' append p99 was `statistics.quantiles(..., n=100, method="inclusive")[98]`.
    latencies = [(i * 37 % 101) / 7 for i in range(1, 480)]
    expected = statistics.quantiles(latencies, n=100, method="inclusive")[98]
    assert quantile(latencies, 0.99) == pytest.approx(expected)
    assert quantile([4.0], 0.99) == 4.0


def test_summary_and_spread() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert spread(values) == (3.0, 1.0, 5.0)
    s = summary(values)
    assert (s.n, s.median, s.low, s.high) == (5, 3.0, 1.0, 5.0)
    assert s.median <= s.p95 <= s.p99 <= s.high


def test_rotations_give_every_store_every_position() -> None:
    stores = ["a", "b", "c"]
    orders = list(rotations(stores, 6))
    assert [rep for rep, _ in orders] == list(range(6))
    assert all(sorted(order) == stores for _, order in orders)
    firsts = [order[0] for _, order in orders]
    assert firsts == ["a", "b", "c", "a", "b", "c"]


def test_every_benchmark_module_is_a_scenario() -> None:
    assert unlisted() == []
    modules = {s.module for s in SCENARIOS}
    for module in modules | set(NOT_SCENARIOS):
        assert (ROOT / (module.replace(".", "/") + ".py")).exists(), module


def test_scenarios_are_unique_and_runnable_small() -> None:
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names))
    for scenario in SCENARIOS:
        assert scenario.smoke, f"{scenario.name} has no smoke arguments"
        assert scenario.env in {"dev", "bench", "langgraph", "adk", "pydantic-ai"}
