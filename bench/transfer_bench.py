"""Export, restore, erase and prune: wall time on a generated tenant.

Run from the repository root::

    .venv/bin/python -m bench.transfer_bench [--conversations 500] [--messages 20] [--url URL]
        [--repeat 3]

Each round makes a fresh database (SQLite by default; ``--url`` names a PostgreSQL database,
which is dropped of the tenant's rows first) holding ``--conversations`` conversations of
``--messages`` messages for tenant ``bench`` (every tenth with a 30 KB image, every fifth with
a regeneration branch), then times, in this order: ``export`` of the tenant, ``erase_tenant``,
the restore (``import_file(..., "convstore")``) and ``prune(older_than=0)``. Rounds are run
``--repeat`` times; each operation's times and median are printed, with conversations per
second. Nothing here is a hot path of an application, so no instruction counts: the numbers
say how long an operator waits. Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from tests.support.images import noise_png

from convstore import ConversationStore, FilePart, Message
from convstore.imports import import_file

TENANT = "bench"


async def _seed(store: ConversationStore, conversations: int, messages: int) -> None:
    rng = random.Random(1)
    image = noise_png(1, 100, 100)
    for n in range(conversations):
        conv = await store.create_conversation(title=f"bench {n}", tenant=TENANT)
        batch = []
        for m in range(messages):
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(60))
            if m % 2 == 0:
                parts: list[object] = [words]
                if m == 0 and n % 10 == 0:
                    parts.append(FilePart.from_bytes(image, filename="x.png"))
                batch.append(Message.user(*parts))  # type: ignore[arg-type]
            else:
                batch.append(Message.assistant(words, provider="openai", model="gpt-5"))
        stored = await store.append(conv.id, batch, tenant=TENANT)
        if n % 5 == 0:
            await store.append(
                conv.id, [Message.assistant("again")], tenant=TENANT, parent_seq=stored[-2].seq
            )


async def _round(url: str | None, conversations: int, messages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        db = url or f"sqlite+aiosqlite:///{root / 'bench.db'}"
        async with ConversationStore(db, blobs=str(root / "blobs"), auto_migrate=True) as store:
            await store.erase_tenant(TENANT)
            await _seed(store, conversations, messages)
            times: dict[str, float] = {}
            start = time.perf_counter()
            await store.export(root / "out.zip", tenant=TENANT)
            times["export"] = time.perf_counter() - start
            start = time.perf_counter()
            await store.erase_tenant(TENANT, now=True)
            times["erase (now)"] = time.perf_counter() - start
            start = time.perf_counter()
            await import_file(store, root / "out.zip", "convstore")
            times["restore"] = time.perf_counter() - start
            start = time.perf_counter()
            report = await store.prune(older_than=timedelta(0), tenant=TENANT)
            times["prune"] = time.perf_counter() - start
            assert report.deleted == conversations
            return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--url")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rounds = [
        asyncio.run(_round(args.url, args.conversations, args.messages)) for _ in range(args.repeat)
    ]
    print(
        f"{args.conversations} conversations x {args.messages} messages, "
        f"{args.url or 'SQLite'}, {args.repeat} rounds"
    )
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        median = statistics.median(values)
        each = ", ".join(f"{v:.2f}" for v in values)
        rate = args.conversations / median
        print(f"  {name:12} median {median:6.2f} s  ({each})  {rate:,.0f} conversations/s")


if __name__ == "__main__":
    main()
