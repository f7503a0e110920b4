"""``pop``, ``truncate``, ``switch_branch`` and a new branch, at 1,000 and 100,000 messages.

Run by `bench.scale_bench` on the conversations it has just written (a 1,000-message chain and
a 100,000-message conversation with 100 branches), plus a 100,000-message chain it makes by
forking the large one at its head (a fork is one chain). Each move is timed at the end of each
conversation, as an application does it (undo the last message or turn, edit and regenerate,
flip between the last two answers), conversations interleaved, repetitions ``--moves-reps``:

- ``pop``: the five messages of the last turn, one at a time (an answer, two results, the
  calling message, the user message), then the turn is appended again (not timed);
- ``truncate``: the last turn in one call (``after_seq`` = the message before it), appended
  again;
- ``switch_branch``: to the message five back (the path root → there) and back to the tip,
  each timed (the first switch is what makes a chain branched);
- ``branch``: ``append(parent_seq=tip - 3)`` of one user message (an edit), then back to the
  tip (not timed).

Medians in milliseconds (keys ``{conversation}_{move}_ms``). With valgrind
(`bench.callgrind_bench.unavailable`), the same moves run again in a process of their own under
callgrind, on the same file, instrumentation on around each timed call only: instructions per
move, every thread counted (``{conversation}_{move}_instructions``, medians; ``moves_callgrind``
says whether they ran).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.harness.callgrind import Counter, counted_run, unavailable
from bench.workload import turn_messages

MOVES = ("pop", "truncate", "switch_branch", "branch")
TURN = 2 * 10**8
"""Turn numbers of the re-appended turns (far from those the fill used)."""

Timer = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[None]]


async def _tip(store: Any, cid: str, back: int) -> tuple[int, int]:
    """The head's seq and the seq ``back`` messages before it on the path."""
    window = (await store.load(cid, last=back + 1)).messages
    return window[-1].seq, window[-1 - back].seq


async def _one_round(store: Any, cid: str, turn: int, timed: Timer) -> None:
    """Every move once, leaving the conversation as long as it was."""
    for _ in range(5):
        await timed("pop", lambda: store.pop(cid))
    await store.append(cid, turn_messages(turn))
    _, before_turn = await _tip(store, cid, 5)
    await timed("truncate", lambda: store.truncate(cid, after_seq=before_turn))
    await store.append(cid, turn_messages(turn + 1))
    tip, earlier = await _tip(store, cid, 5)
    await timed("switch_branch", lambda: store.switch_branch(cid, head_seq=earlier))
    await timed("switch_branch", lambda: store.switch_branch(cid, head_seq=tip))
    _, edited = await _tip(store, cid, 3)
    edit = turn_messages(turn + 2)[:1]
    await timed("branch", lambda: store.append(cid, edit, parent_seq=edited))
    await store.switch_branch(cid, head_seq=tip)


async def measure(store: Any, conversations: dict[str, str], reps: int) -> dict[str, float]:
    """Median milliseconds per move and conversation, conversations interleaved."""
    samples: dict[str, dict[str, list[float]]] = {n: {m: [] for m in MOVES} for n in conversations}
    for rep in range(reps + 1):  # the first round warms statements and caches: not recorded
        for name, cid in conversations.items():

            async def timed(
                move: str, call: Callable[[], Awaitable[Any]], name: str = name, rep: int = rep
            ) -> None:
                start = time.perf_counter()
                await call()
                if rep:
                    samples[name][move].append((time.perf_counter() - start) * 1e3)

            await _one_round(store, cid, TURN + 10 * rep, timed)
    return {
        f"{name}_{move}_ms": statistics.median(times)
        for name, moves in samples.items()
        for move, times in moves.items()
    }


async def chain_of(store: Any, cid: str) -> str:
    """A one-chain copy of ``cid``'s active path (a fork of it at its head)."""
    head, _ = await _tip(store, cid, 0)
    return str((await store.fork(cid, at_seq=head, title="chain")).id)


# -- the same moves under callgrind ---------------------------------------------------------------


async def _counted(db: Path, conversations: dict[str, str], counter: Counter, reps: int) -> None:
    import convstore

    async with convstore.ConversationStore(f"sqlite+aiosqlite:///{db}") as store:
        for rep in range(reps + 1):
            for name, cid in conversations.items():

                async def timed(
                    move: str, call: Callable[[], Awaitable[Any]], name: str = name, rep: int = rep
                ) -> None:
                    if not rep:
                        await call()
                        return
                    with counter.section(f"{name}.{move}.{rep}"):
                        await call()

                await _one_round(store, cid, TURN + 1000 + 10 * rep, timed)


def callgrind(db: Path, conversations: dict[str, str], reps: int, timeout: float) -> dict[str, Any]:
    """Instructions per move and conversation (median over calls), or why there are none."""
    reason = unavailable()
    if reason is not None:
        return {"moves_callgrind": f"skipped: {reason}"}
    arguments = ["--inside", str(db), "--reps", str(reps), "--conversations",
                 json.dumps(conversations)]  # fmt: skip
    totals_by_call, failure = counted_run("bench.moves_bench", arguments, timeout)
    if failure is not None or not totals_by_call:
        return {"moves_callgrind": f"failed: {failure or 'nothing counted'}"}
    counts: dict[str, list[int]] = {}
    for section, total in totals_by_call.items():  # name.move.rep: one call each
        counts.setdefault(section.rsplit(".", 1)[0], []).append(total)
    result: dict[str, Any] = {"moves_callgrind": "ok"}
    for key, totals in counts.items():
        name, move = key.split(".", 1)
        result[f"{name}_{move}_instructions"] = statistics.median(totals)
    return result


SHAPES = (("small", "1,000, one chain"), ("large_chain", "{n}, one chain"),
          ("large", "{n}, 100 branches"))  # fmt: skip


def moves_table(run: dict[str, Any]) -> str:
    """Markdown: each move's median time (and instructions) on each conversation of a run."""
    n = f"{run.get('messages', 0):,}"
    lines = [
        "| move | " + " | ".join(label.format(n=n) for _, label in SHAPES) + " |",
        "|---|" + "---:|" * len(SHAPES),
    ]
    for move in MOVES:
        cells = []
        for name, _ in SHAPES:
            ms, count = run.get(f"{name}_{move}_ms"), run.get(f"{name}_{move}_instructions")
            cell = "n/a" if ms is None else f"{ms:.2f} ms"
            if count is not None:
                cell += f" ({count / 1e6:.2f} M instr.)"
            cells.append(cell)
        lines.append(f"| `{move}` | " + " | ".join(cells) + " |")
    status = run.get("moves_callgrind")
    if status and status != "ok":
        lines.append(f"\nInstructions: {status}.")
    return "\n".join(lines)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inside", type=Path, required=True, help="the database file")
    parser.add_argument("--library", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--conversations", required=True, help="JSON: name -> conversation id")
    args = parser.parse_args()
    conversations = json.loads(args.conversations)
    asyncio.run(_counted(args.inside, conversations, Counter(args.library), args.reps))


if __name__ == "__main__":
    main()
