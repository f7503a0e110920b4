"""The inspector on long conversations: opening one costs the newest page, not the history.

Opens the conversation page (newest 100 messages) and an older page (``?before=``) of
conversations of 1,000 and 10,000 messages, and the listing page (50 conversations), through
the ASGI app, interleaved, and prints the median wall time per request.
Run: ``.venv/bin/python -m bench.web_bench``; ``--callgrind`` also counts the instructions of
one request of each kind (every thread), under callgrind with instrumentation switched on only
around the request (`bench.harness.counted_run`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.harness.callgrind import Counter, counted_run, dry_run
from convstore import ConversationStore, Message
from convstore.web import create_app

SIZES = (1_000, 10_000)
ROUNDS = 7


async def run(
    sizes: tuple[int, ...] = SIZES, rounds: int = ROUNDS, counter: Counter | None = None
) -> None:
    """Build the conversations, then time (or, with ``counter``, count) each page."""
    with tempfile.TemporaryDirectory() as where:
        url = f"sqlite+aiosqlite:///{Path(where) / 'bench.db'}"
        async with ConversationStore(url, blobs=f"{where}/blobs") as store:
            ids: dict[int, str] = {}
            for size in sizes:
                conversation = await store.create_conversation(title=f"{size} messages")
                for start in range(0, size, min(size, 1_000)):
                    batch = [
                        Message.user(f"question {i}: " + "lorem ipsum " * 8)
                        if i % 2 == 0
                        else Message.assistant(f"answer {i}: " + "dolor sit amet " * 12)
                        for i in range(start, start + min(size, 1_000))
                    ]
                    await store.append(conversation.id, batch)
                ids[size] = conversation.id
            # A listing page of 50 conversations (each a few messages, one ending in a call).
            for i in range(48):
                small = await store.create_conversation(title=None if i % 3 else f"chat {i}")
                await store.append(
                    small.id, [Message.user(f"hello {i}"), Message.assistant(f"hi {i}")]
                )
            transport = httpx.ASGITransport(app=create_app(store))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                if counter is not None:
                    for name, path in _paths(ids):
                        assert (await http.get(path)).status_code == 200  # warm, unmeasured
                        with counter.section(name):
                            response = await http.get(path)
                        assert response.status_code == 200
                    return
                timings: dict[tuple[int, str], list[float]] = {}
                for _ in range(rounds):
                    for size, cid in ids.items():
                        for label, path in (
                            ("newest 100", f"/conversations/{cid}"),
                            ("older page", f"/conversations/{cid}?before={size // 2}"),
                        ):
                            began = time.perf_counter()
                            response = await http.get(path)
                            timings.setdefault((size, label), []).append(
                                time.perf_counter() - began
                            )
                            assert response.status_code == 200
                            assert response.text.count("data-seq=") == 100
                    began = time.perf_counter()
                    response = await http.get("/")
                    timings.setdefault((50, "list page"), []).append(time.perf_counter() - began)
                    assert response.status_code == 200
    print(f"{'messages':>9}  {'page':<11} {'median ms':>10}  (of {rounds}, interleaved)")
    for (size, label), values in timings.items():
        print(f"{size:>9,}  {label:<11} {statistics.median(values) * 1000:>10.1f}")


def _paths(ids: dict[int, str]) -> list[tuple[str, str]]:
    paths = [(f"page-{size}", f"/conversations/{cid}") for size, cid in ids.items()]
    return [*paths, ("list-50", "/")]


def _count(sizes: str) -> None:
    totals, failed = counted_run("bench.web_bench", ["--inside", "--sizes", sizes], timeout=3600)
    if failed:
        raise SystemExit(f"callgrind run failed: {failed}")
    if dry_run():
        print(f"callgrind dry run: {', '.join(totals)} ran, nothing counted")
        return
    print(f"{'request':<12} {'instructions':>14}  (one request, every thread)")
    for name, count in totals.items():
        print(f"{name:<12} {count:>14,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="messages (1000,10000)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"timed rounds ({ROUNDS})")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    options = parser.parse_args()
    sizes = tuple(int(s) for s in options.sizes.split(",") if s)
    if options.inside:
        asyncio.run(run(sizes, counter=Counter(options.library)))
        return
    asyncio.run(run(sizes, options.rounds))
    if options.callgrind:
        _count(options.sizes)


if __name__ == "__main__":
    main()
