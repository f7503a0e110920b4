"""The conversation list and gc at scale: every listing variant at 1k, 100k and 1M conversations.

Run: ``python -m bench.listing_bench [--sizes 1000,100000,1000000] [--database sqlite,postgresql]
[--json-out F]`` (``bench.compare --listing-sizes`` runs it; PostgreSQL needs the cluster
`bench.compare` starts, or ``BENCH_POSTGRES_DSN``).

Conversations are created through the store's public API, by 64 concurrent tasks (group commit
batches them on SQLite), each with metadata ``{"project": p<i % 100>, "user": u<i // 100 %
100>}`` and one of 10 tenants, so ``project`` alone matches 1 %, ``project`` and ``user`` 1 in
10,000. Each size grows the same database (1k, then 100k, then 1M), and each variant is timed
as the median of 21 calls after one warm-up: the first page, a page 90 % deep (by cursor), the
same within a tenant, a 1 % filter, a 1-in-10,000 filter. Then gc: 2,000 unreferenced blobs in
a local directory collected with ``grace=0``, alone and while an application appends beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from convstore import ConversationStore, FilePart, Message
from convstore.store import collect_garbage

TENANTS = 10
CREATORS = 64
CALLS = 21


def _metadata(i: int) -> dict[str, str]:
    return {"project": f"p{i % 100}", "user": f"u{i // 100 % 100}"}


async def _create(store: ConversationStore, start: int, stop: int) -> float:
    """Conversations ``start`` .. ``stop`` - 1; seconds taken."""
    began = time.perf_counter()
    numbers = iter(range(start, stop))

    async def creator() -> None:
        for i in numbers:
            await store.create_conversation(
                title=f"conversation {i}", tenant=f"t{i % TENANTS}", metadata=_metadata(i)
            )

    await asyncio.gather(*(creator() for _ in range(CREATORS)))
    return time.perf_counter() - began


async def _median_ms(call: Any) -> float:
    await call()
    samples = []
    for _ in range(CALLS):
        began = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e3


async def _cursor_at(store: ConversationStore, depth: int, **kwargs: Any) -> str | None:
    """The cursor of the conversation ``depth`` places down the list (walked by big pages)."""
    cursor, seen = None, 0
    while seen < depth:
        page = await store.list_conversations(
            limit=min(10_000, depth - seen), cursor=cursor, **kwargs
        )
        if not page or page.next_cursor is None:
            return cursor
        seen += len(page)
        cursor = page.next_cursor
    return cursor


async def _variants(store: ConversationStore, size: int) -> dict[str, float]:
    deep = await _cursor_at(store, size * 9 // 10)
    deep_tenant = await _cursor_at(store, size * 9 // 10 // TENANTS, tenant="t3")
    rare = {"project": "p7", "user": "u3"}
    return {
        "first_page_ms": await _median_ms(lambda: store.list_conversations(limit=20)),
        "deep_page_ms": await _median_ms(lambda: store.list_conversations(limit=20, cursor=deep)),
        "tenant_first_page_ms": await _median_ms(
            lambda: store.list_conversations(tenant="t3", limit=20)
        ),
        "tenant_deep_page_ms": await _median_ms(
            lambda: store.list_conversations(tenant="t3", limit=20, cursor=deep_tenant)
        ),
        "filter_1_percent_ms": await _median_ms(
            lambda: store.list_conversations(limit=20, metadata={"project": "p7"})
        ),
        "filter_1_in_10000_ms": await _median_ms(
            lambda: store.list_conversations(limit=20, metadata=rare)
        ),
    }


async def _gc_rate(url: str, blobs: str, count: int, *, beside_writer: bool) -> float:
    """Blobs/s of one ``grace=0`` collection of ``count`` unreferenced blobs."""
    async with ConversationStore(url, blobs=blobs) as store:
        conversation = await store.create_conversation(title="gc")
        for start in range(0, count, 100):
            files = [
                FilePart.from_bytes(
                    f"blob {start + k} {blobs}".encode() * 20, media_type="text/plain"
                )
                for k in range(min(100, count - start))
            ]
            await store.append(conversation.id, [Message.user("files", *files)])
        await store.delete_conversation(conversation.id)  # every blob is garbage now
        stop = asyncio.Event()

        async def writer() -> None:
            chat = await store.create_conversation(title="beside gc")
            turn = 0
            while not stop.is_set():
                await store.append(chat.id, [Message.user(f"turn {turn}")])
                turn += 1

        task = asyncio.create_task(writer()) if beside_writer else None
        began = time.perf_counter()
        report = await collect_garbage(store, grace=timedelta(0))
        elapsed = time.perf_counter() - began
        stop.set()
        if task is not None:
            await task
    if len(report.deleted) != count:
        raise AssertionError(f"gc deleted {len(report.deleted)} of {count} blobs")
    return count / elapsed


async def run(database: str, sizes: list[int], directory: Path) -> dict[str, Any]:
    if database == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / 'listing.db'}"
    else:
        from bench.peers.runner import fresh_postgres_database, postgres_dsn

        url = f"{postgres_dsn().replace('postgresql://', 'postgresql+asyncpg://')}/"
        url += await fresh_postgres_database("listing")
    result: dict[str, Any] = {"database": database, "sizes": {}}
    async with ConversationStore(url, blobs=str(directory / "blobs"), auto_migrate=True) as store:
        made = 0
        for size in sorted(sizes):
            took = await _create(store, made, size)
            print(f"{database}: {size:,} conversations ({size - made:,} made in {took:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
            entry = {"create_s": took, "created": size - made}
            made = size
            entry.update(await _variants(store, size))
            result["sizes"][str(size)] = entry
    blobs = f"file://{directory / 'gc-blobs'}"
    result["gc_blobs_s"] = await _gc_rate(url, blobs + "-alone", 2000, beside_writer=False)
    result["gc_blobs_s_beside_writer"] = await _gc_rate(
        url, blobs + "-beside", 2000, beside_writer=True
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--tmpdir")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    for database in [d for d in args.database.split(",") if d]:
        with tempfile.TemporaryDirectory(prefix="bench-listing-", dir=args.tmpdir) as tmp:
            results.append(asyncio.run(run(database, sizes, Path(tmp))))
    output = {"results": results}
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(output, indent=1))
    print(json.dumps(output, indent=1))


if __name__ == "__main__":
    main()


VARIANTS = (
    ("first_page_ms", "first page"),
    ("deep_page_ms", "page 90 % deep"),
    ("tenant_first_page_ms", "tenant, first page"),
    ("tenant_deep_page_ms", "tenant, page 90 % deep"),
    ("filter_1_percent_ms", "`project` filter (1 %)"),
    ("filter_1_in_10000_ms", "`project` + `user` filter (1 in 10,000)"),
)


def markdown(output: dict[str, Any]) -> str:
    """The listing table (ms per page at each size, the largest size's ratio to the smallest)
    and the gc rates, with the scale targets judged."""
    lines: list[str] = []
    for result in output.get("results", []):
        sizes = sorted(result["sizes"], key=int)
        head = " | ".join(f"{int(s):,} ms" for s in sizes)
        lines += [
            f"**{result['database']}** (creating them took "
            + ", ".join(
                f"{result['sizes'][s]['create_s']:.0f} s for {result['sizes'][s]['created']:,}"
                for s in sizes
            )
            + ")",
            "",
            f"| listing | {head} | largest / smallest | |",
            "|---|" + "---:|" * len(sizes) + "---:|---|",
        ]
        for key, label in VARIANTS:
            values = [result["sizes"][s][key] for s in sizes]
            ratio = values[-1] / values[0]
            verdict = "met" if ratio <= 3 else f"**missed** ({ratio:.2f}x > 3x)"
            if key == "filter_1_in_10000_ms" and values[-1] > 50:
                verdict = f"**missed** ({values[-1]:.1f} ms > 50 ms)"
            cells = " | ".join(f"{v:.2f}" for v in values)
            lines.append(f"| {label} | {cells} | {ratio:.2f}x | {verdict} |")
        alone, beside = result["gc_blobs_s"], result["gc_blobs_s_beside_writer"]
        lines += [
            "",
            f"gc, `grace=0`, 2,000 unreferenced blobs in a local directory: {alone:,.0f} blobs/s "
            f"({'met' if alone >= 2000 else '**missed**'}: ≥ 2,000); beside an appending "
            f"application {beside:,.0f} blobs/s ({'met' if beside >= 1000 else '**missed**'}: "
            "≥ 1,000).",
            "",
        ]
    return "\n".join(lines)
