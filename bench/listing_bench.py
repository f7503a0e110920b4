"""The conversation list and gc at scale: every listing variant at 1k, 100k and 1M conversations.

Run: ``python -m bench.listing_bench [--sizes 1000,100000,1000000] [--database sqlite,postgresql]
[--json-out F]`` (``bench.compare --listing-sizes`` runs it; PostgreSQL needs the cluster
`bench.compare` starts, or ``BENCH_POSTGRES_DSN``).

Conversations are created through the store's public API, by 64 concurrent tasks (group commit
batches them on SQLite), or with ``--bulk`` by the store's own row builders, 1,000 per
transaction (a million one at a time take ~25 minutes here, against ~8), each with metadata
``{"project": p<i % 100>, "user": u<i // 100 % 100>}`` and one of 10 tenants, so ``project``
alone matches 1 %, ``project`` and ``user`` 1 in 10,000. Each size grows the same database (1k,
then 100k, then 1M), and each variant is timed as the median of 21 calls after one warm-up: the
first page, a page 90 % deep (by cursor), the same within a tenant, a 1 % filter, a
1-in-10,000 filter. Then gc (`bench.gc_bench`): 2,000 unreferenced blobs in a local directory
collected with ``grace=0``, alone and while an application appends beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.databases import database_url, each_database, emit
from bench.gc_bench import gc_rate
from convstore import ConversationStore
from convstore.db.tx import Tx
from convstore.store import conversations
from convstore.store.arguments import now
from convstore.store.ids import new_id
from convstore.store.metadata_tags import tags_of

TENANTS = 10
CREATORS = 64
CALLS = 21


def _metadata(i: int) -> dict[str, str]:
    return {"project": f"p{i % 100}", "user": f"u{i // 100 % 100}"}


BULK = 1000
"""Conversations per transaction when creating them in bulk."""


async def _create(store: ConversationStore, start: int, stop: int, *, bulk: bool) -> float:
    """Conversations ``start`` .. ``stop`` - 1; seconds taken."""
    began = time.perf_counter()
    if bulk:
        await _create_in_bulk(store, start, stop)
        return time.perf_counter() - began
    numbers = iter(range(start, stop))

    async def creator() -> None:
        for i in numbers:
            await store.create_conversation(
                title=f"conversation {i}", tenant=f"t{i % TENANTS}", metadata=_metadata(i)
            )

    await asyncio.gather(*(creator() for _ in range(CREATORS)))
    return time.perf_counter() - began


async def _create_in_bulk(store: ConversationStore, start: int, stop: int) -> None:
    """The rows `create_conversation` writes, made by its own row builders (the header row of
    `convstore.store.conversations`, the metadata tags of `convstore.store.metadata_tags`), but
    inserted `BULK` conversations per transaction instead of one: a million one-row
    transactions take ~25 minutes here, which measures group commit, not the list."""
    for first in range(start, stop, BULK):

        def insert(tx: Tx, first: int = first) -> None:
            headers, tags = [], []
            for i in range(first, min(first + BULK, stop)):
                cid, tenant, created = new_id(), f"t{i % TENANTS}", now()
                row = conversations._row(
                    cid, tenant, f"conversation {i}", _metadata(i), created, tx
                )
                headers.append(row)
                tags += [(cid, t, tenant, row[5]) for t in sorted(tags_of(_metadata(i)))]
            tx.insert_rows(tx.statements.insert_conversation, headers)
            tx.insert_rows(tx.statements.insert_conversation_tags, tags)

        await store.backend.write(insert)


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


async def run(database: str, sizes: list[int], directory: Path, bulk: bool) -> dict[str, Any]:
    url = await database_url(database, directory)
    result: dict[str, Any] = {"database": database, "sizes": {}, "bulk": bulk}
    async with ConversationStore(url, blobs=str(directory / "blobs"), auto_migrate=True) as store:
        made = 0
        for size in sorted(sizes):
            took = await _create(store, made, size, bulk=bulk)
            print(f"{database}: {size:,} conversations ({size - made:,} made in {took:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
            entry = {"create_s": took, "created": size - made}
            made = size
            entry.update(await _variants(store, size))
            result["sizes"][str(size)] = entry
    blobs = f"file://{directory / 'gc-blobs'}"
    result["gc_blobs_s"] = await gc_rate(url, blobs + "-alone", 2000, beside_writer=False)
    result["gc_blobs_s_beside_writer"] = await gc_rate(
        url, blobs + "-beside", 2000, beside_writer=True
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--database", default="sqlite")
    parser.add_argument(
        "--bulk",
        action="store_true",
        help=f"create conversations {BULK} per transaction (the store's own insert code)",
    )
    parser.add_argument("--tmpdir")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    output = each_database(
        args.database,
        lambda database, tmp: run(database, sizes, tmp, args.bulk),
        prefix="bench-listing-",
        tmpdir=args.tmpdir,
    )
    emit(output, args.json_out)


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
            f"**{result['database']}** (creating them"
            + (" 1,000 per transaction" if result.get("bulk") else " one call each")
            + " took "
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
