"""The cost of `convstore.message_checks.check_messages` per append, on the shared workload.

Prints microseconds per turn (one append of the turn's five messages, six items), best of
several repeats, and, with ``--refused``, the cost of refusing a batch (the detailed check).
Numbers only: no assertion on time.

    PYTHONPATH=src python -m bench.limits_bench

Instructions per turn (stable where time is not on a shared machine): run it under callgrind
with ``--accept-only --repeat 1`` and ``--repeat 3``; the difference over ``2 * turns`` is the
cost of one turn's check (``bench/limits_instructions.sh`` does exactly that).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from bench.workload import turn_messages
from convstore.errors import InvalidMessageError
from convstore.message_checks import check_messages
from convstore.model import Message


def _best(fn: Callable[[], None], *, number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--accept-only", action="store_true", help="skip the refusal figure (for callgrind)"
    )
    args = parser.parse_args()
    batches = [turn_messages(n) for n in range(args.turns)]

    def accept_all() -> None:
        for batch in batches:
            check_messages(batch, max_attachment_size=20 * 1024 * 1024)

    per_turn = _best(accept_all, number=1, repeat=args.repeat) / args.turns
    print(f"check_messages, accepted batch: {per_turn * 1e6:8.1f} us per turn (6 items)")

    if args.accept_only:
        return
    bad = [*batches[0], Message.user("x\ud800")]

    def refuse() -> None:
        try:
            check_messages(bad)
        except InvalidMessageError:
            return
        raise AssertionError("the batch should have been refused")

    per_refusal = _best(refuse, number=200, repeat=args.repeat)
    print(f"check_messages, refused batch:  {per_refusal * 1e6:8.1f} us per batch")


if __name__ == "__main__":
    main()
