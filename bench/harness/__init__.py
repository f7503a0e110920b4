"""The one harness every benchmark in `bench` runs on: its stable API.

Scripts and tests use only the names exported here (and `bench.harness.scenarios.SCENARIOS`,
the data that says what ``make bench`` and ``make bench-smoke`` run); the modules behind them
may change.

- `timing`: clocks, repetitions, medians and percentiles, interleaving of stores in one run.
- `callgrind`: instruction counts of marked sections of a child process (every thread).
- `machine`: what a run was measured on (cores, memory, load before and after).
- `report`: Markdown tables and JSON results.
- `scenarios`: every benchmark as data (module, full-size and smoke arguments, environment).
- ``python -m bench.harness smoke|list``: run every scenario at tiny sizes, or list them.

Invariants: a benchmark prints numbers and never asserts a time; the harness imports nothing
from convstore (the scenarios use the public store API only), so it survives any refactor
behind that API.
"""

from __future__ import annotations

from bench.harness.callgrind import Counter, counted_run, dry_run, unavailable
from bench.harness.machine import environment, loadavg
from bench.harness.report import markdown_table, write_json
from bench.harness.scenarios import NOT_SCENARIOS, SCENARIOS, Scenario, unlisted
from bench.harness.timing import (
    Summary,
    median_ms,
    quantile,
    rotations,
    sample_ms,
    spread,
    stopwatch,
    summary,
)

__all__ = [
    "NOT_SCENARIOS",
    "SCENARIOS",
    "Counter",
    "Scenario",
    "Summary",
    "counted_run",
    "dry_run",
    "environment",
    "loadavg",
    "markdown_table",
    "median_ms",
    "quantile",
    "rotations",
    "sample_ms",
    "spread",
    "stopwatch",
    "summary",
    "unavailable",
    "unlisted",
    "write_json",
]
