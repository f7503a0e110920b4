"""The cyclic garbage collector held off while convstore decodes a load's rows.

A load allocates thousands of objects that all survive it, so every collection the
allocations trigger scans them for nothing (about a fifth of a full load, measured with
``bench/callgrind_bench.py``).

Invariants:

- The collector is process-wide, so the pause spans convstore's own decoding only: rows are
  fetched from the driver before it starts, and nothing else (I/O, application callbacks)
  runs inside it.
- Loads may decode in several threads at once (SQLite's readers): the first one in pauses the
  collector, only if it was enabled, and the last one out re-enables it, also when a decode
  fails. A collector the application disabled stays disabled.

Assumption (``tests/test_compat.py``): ``gc.disable``/``gc.enable``/``gc.isenabled`` are the
collector's only switch (no per-thread state).
"""

from __future__ import annotations

import gc
import threading
from typing import Final

__all__ = ["collector_paused"]


class _CollectorPause:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._resume = gc.isenabled()
                if self._resume:
                    gc.disable()
            self._depth += 1

    def __exit__(self, *_exc: object) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._resume:
                self._resume = False
                gc.enable()


collector_paused: Final = _CollectorPause()
"""``with collector_paused:`` around a decode that builds many long-lived objects."""
