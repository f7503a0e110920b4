"""Clocks, repetitions and summaries: how every benchmark turns calls into numbers.

Invariants: times come from `time.perf_counter`; a collection runs before each timed series
(`gc.collect`), so one series does not pay for another's garbage; percentiles use the
``inclusive`` method of `statistics.quantiles` (the p99 of the peers' append latencies has
always been computed that way, so numbers stay comparable with earlier reports).
"""

from __future__ import annotations

import gc
import inspect
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class Elapsed:
    """Seconds measured by `stopwatch` (set when the block ends)."""

    seconds: float = 0.0

    @property
    def ms(self) -> float:
        return self.seconds * 1e3


@contextmanager
def stopwatch(*, collect: bool = False) -> Iterator[Elapsed]:
    """Time the block; ``collect``: run a garbage collection first, outside the clock."""
    if collect:
        gc.collect()
    elapsed = Elapsed()
    start = time.perf_counter()
    try:
        yield elapsed
    finally:
        elapsed.seconds = time.perf_counter() - start


async def sample_ms(
    action: Callable[[], Any], reps: int, *, collect: bool = False
) -> tuple[list[float], Any]:
    """``reps`` timed calls of ``action`` (awaited when it returns an awaitable): the times in
    milliseconds, and what the last call returned; ``collect``: a garbage collection first."""
    if collect:
        gc.collect()
    samples: list[float] = []
    result: Any = None
    for _ in range(reps):
        start = time.perf_counter()
        value = action()
        if inspect.isawaitable(value):
            value = await value
        samples.append((time.perf_counter() - start) * 1e3)
        result = value
    return samples, result


async def median_ms(action: Callable[[], Any], reps: int = 5, *, collect: bool = False) -> float:
    """The median time of ``reps`` calls, in milliseconds."""
    samples, _ = await sample_ms(action, reps, collect=collect)
    return statistics.median(samples)


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0 < q < 1) of ``values``, inclusive method; one value: itself."""
    if len(values) == 1:
        return values[0]
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    return cuts[round(q * 1000) - 1]


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """Median, minimum and maximum."""
    return statistics.median(values), min(values), max(values)


@dataclass(frozen=True, slots=True)
class Summary:
    """A series of samples, summarised."""

    n: int
    median: float
    p95: float
    p99: float
    low: float
    high: float


def summary(values: Sequence[float]) -> Summary:
    """Median, p95, p99, minimum and maximum of ``values`` (at least one)."""
    return Summary(
        n=len(values),
        median=statistics.median(values),
        p95=quantile(values, 0.95),
        p99=quantile(values, 0.99),
        low=min(values),
        high=max(values),
    )


def rotations(names: Sequence[T], reps: int) -> Iterator[tuple[int, list[T]]]:
    """Interleave ``names`` over ``reps`` repetitions, rotating the order each time, so that a
    noisy neighbour slows every one of them rather than one: ``(repetition, order)``."""
    for rep in range(reps):
        shift = rep % len(names) if names else 0
        yield rep, [*names[shift:], *names[:shift]]
