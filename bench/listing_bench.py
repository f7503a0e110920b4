"""The conversation list and gc at scale: every listing variant at 1k, 100k and 1M conversations.

Run: ``python -m bench.listing_bench [--sizes 1000,100000,1000000] [--database sqlite,postgresql]
[--bulk] [--keep DIR] [--no-gc] [--json-out F]`` (``bench.compare --listing-sizes`` runs it;
PostgreSQL needs the cluster `bench.compare` starts, or ``BENCH_POSTGRES_DSN``).

Each size has a database of its own: conversations created through the store's public API, by
64 concurrent tasks (group commit batches them on SQLite), or with ``--bulk`` by the store's
own row builders, 1,000 per transaction (a million one at a time take ~25 minutes here), each
with metadata ``{"project": p<i % 100>, "user": u<i // 100 % 100>}`` and one of 10 tenants, so
``project`` alone matches 1 %, ``project`` and ``user`` 1 in 10,000. ``--keep DIR`` keeps the
databases (SQLite files in DIR, PostgreSQL databases ``listing_<size>``) and reuses them,
migrated to the current schema. The variants: the first page, a page 90 % deep (by cursor),
the same within a tenant, a 1 % filter, a 1-in-10,000 filter, 20 conversations a page. They
run interleaved (each round calls every variant at every size once; 21 rounds after one
warm-up) and each is reported as its median, beside the pages one call reads, counted by the
database (SQLite's page cache hits and misses, PostgreSQL's shared buffers): the figure the
machine's load does not move. Then gc (`bench.gc_bench`, unless ``--no-gc``): 2,000
unreferenced blobs in a local directory collected with ``grace=0``, alone and while an
application appends beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.databases import database_url, each_database, emit
from bench.gc_bench import gc_rate
from bench.harness.callgrind import Counter, counted_run, unavailable
from bench.peers.runner import postgres_dsn
from convstore import ConversationStore, migrate

if TYPE_CHECKING:
    from convstore.db.tx import Tx

TENANTS = 10
CREATORS = 64
CALLS = 21


def _metadata(i: int) -> dict[str, str]:
    return {"project": f"p{i % 100}", "user": f"u{i // 100 % 100}"}


VARIANTS = (
    ("first_page_ms", "first page"),
    ("deep_page_ms", "page 90 % deep"),
    ("tenant_first_page_ms", "tenant, first page"),
    ("tenant_deep_page_ms", "tenant, page 90 % deep"),
    ("filter_1_percent_ms", "`project` filter (1 %)"),
    ("filter_1_in_10000_ms", "`project` + `user` filter (1 in 10,000)"),
)
VARIANT_KEYS = tuple(key for key, _ in VARIANTS)

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
    `convstore.store.conversations.headers`, the metadata tags of
    `convstore.store.conversations.metadata_tags`), but inserted `BULK` conversations per
    transaction instead of one: a million one-row transactions take ~25 minutes here, which measures
    group commit, not the list."""
    # The package's own row builders and statements: the only internals a benchmark uses,
    # imported here so that importing this module (its report) needs none of them.
    from convstore.store._arguments import now
    from convstore.store.conversations.headers import _row
    from convstore.store.conversations.metadata_tags import tags_of
    from convstore.store.ids import new_id

    for first in range(start, stop, BULK):

        def insert(tx: Tx, first: int = first) -> None:
            headers, tags = [], []
            for i in range(first, min(first + BULK, stop)):
                cid, tenant, created = new_id(), f"t{i % TENANTS}", now()
                row = _row(cid, tenant, f"conversation {i}", _metadata(i), created, tx)
                headers.append(row)
                tags += [(cid, t, tenant, row[5]) for t in sorted(tags_of(_metadata(i)))]
            tx.insert_rows(tx.statements.insert_conversation, headers)
            tx.insert_rows(tx.statements.insert_conversation_tags, tags)

        await store.backend.write(insert)


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


async def _variants(store: ConversationStore, size: int) -> dict[str, dict[str, Any]]:
    """``list_conversations`` arguments of each variant (a page of 20), keyed as reported."""
    deep = await _cursor_at(store, size * 9 // 10)
    deep_tenant = await _cursor_at(store, size * 9 // 10 // TENANTS, tenant="t3")
    return {
        "first_page_ms": {},
        "deep_page_ms": {"cursor": deep},
        "tenant_first_page_ms": {"tenant": "t3"},
        "tenant_deep_page_ms": {"tenant": "t3", "cursor": deep_tenant},
        "filter_1_percent_ms": {"metadata": {"project": "p7"}},
        "filter_1_in_10000_ms": {"metadata": {"project": "p7", "user": "u3"}},
    }


async def _pages_read(database: str, store: ConversationStore, kwargs: dict[str, Any]) -> int:
    """Database pages (SQLite) or buffers (PostgreSQL) one listing page reads, counted by the
    database: a figure the machine's load does not move. The statements are the ones the store
    runs for the call, as its backend reports them (`Backend.add_statement_listener`; on
    PostgreSQL with their parameters, from SQLAlchemy's cursor events): no module of the
    package is needed to rebuild them."""
    if database == "sqlite":
        statements = await _sqlite_statements(store, kwargs)
        path = Path(store.url.removeprefix("sqlite+aiosqlite:///"))
        return sum([await asyncio.to_thread(sqlite_pages_read, path, sql) for sql in statements])
    return sum(
        [
            await _postgres_buffers(store, sql, args)
            for sql, args in await _pg_statements(store, kwargs)
        ]
    )


def _reads(sql: str) -> bool:
    return sql.lstrip().upper().startswith(("SELECT", "WITH"))


async def _sqlite_statements(store: ConversationStore, kwargs: dict[str, Any]) -> list[str]:
    """The SELECTs one ``list_conversations`` call runs, parameters inlined (SQLite's trace
    reports the expanded SQL)."""
    seen: list[str] = []
    remove = store.backend.add_statement_listener(seen.append)
    try:
        await store.backend.trace_all()
        await store.list_conversations(limit=20, **kwargs)
    finally:
        remove()
    return [sql for sql in seen if _reads(sql)]


async def _pg_statements(
    store: ConversationStore, kwargs: dict[str, Any]
) -> list[tuple[str, tuple[Any, ...]]]:
    """The SELECTs one ``list_conversations`` call runs, with their parameters."""
    from sqlalchemy import event

    seen: list[tuple[str, tuple[Any, ...]]] = []

    def record(_conn: Any, _cursor: Any, sql: str, params: Any, *_rest: Any) -> None:
        seen.append((sql, tuple(params or ())))

    engine = store.backend.engine  # type: ignore[attr-defined]
    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        await store.list_conversations(limit=20, **kwargs)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)
    return [(sql, params) for sql, params in seen if _reads(sql)]


def sqlite_pages_read(path: Path, sql: str) -> int:
    """Pages SQLite fetches (from its cache or the file) to run ``sql`` once, on a fresh
    connection: ``sqlite3_db_status`` cache hits plus misses, around a second run.

    Python's ``sqlite3`` module does not expose the connection's ``sqlite3 *``; CPython keeps it
    as the first field after the object header, which is where this reads it (a benchmark's
    shortcut, checked against the library's version, never used by the store)."""
    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
        raise RuntimeError("the sqlite3 module is not linked with the system's libsqlite3")
    lib.sqlite3_db_status.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int), ctypes.c_int,
    ]  # fmt: skip
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
        conn.execute(sql).fetchall()  # the schema, parsed once

        def fetched() -> int:
            total = 0
            for op in (_CACHE_HIT, _CACHE_MISS):
                current, high = ctypes.c_int(), ctypes.c_int()
                lib.sqlite3_db_status(handle, op, ctypes.byref(current), ctypes.byref(high), 1)
                total += current.value
            return total

        fetched()
        conn.execute(sql).fetchall()
        return fetched()
    finally:
        conn.close()


_CACHE_HIT, _CACHE_MISS = 7, 8
"""``SQLITE_DBSTATUS_CACHE_HIT`` / ``_MISS`` (sqlite3.h)."""


async def _postgres_buffers(store: ConversationStore, sql: str, args: tuple[Any, ...]) -> int:
    """Shared buffers (hit + read) of the statement, from ``EXPLAIN (ANALYZE, BUFFERS)``."""
    engine = store.backend.engine  # type: ignore[attr-defined]
    async with engine.connect() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
        plan = [r[0] for r in await raw.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", *args)]
    for line in plan:  # the first Buffers line is the top node's, children included
        found = re.search(r"Buffers: shared((?: \w+=\d+)+)", line)
        if found and "Planning" not in line:
            counts = dict(kv.split("=") for kv in found.group(1).split())
            return int(counts.get("hit", 0)) + int(counts.get("read", 0))
    return 0


CALLGRIND_CALLS = 5


async def _count_inside(counter: Counter, plan: Path) -> None:
    """Under callgrind (`bench.harness.counted_run`): each variant at each size, one
    unmeasured call, then `CALLGRIND_CALLS` counted ones (``plan``: JSON of SQLite URL ->
    variant -> ``list_conversations`` arguments, cursors included: walking to a deep cursor
    under valgrind would take minutes)."""
    for url, variants in json.loads(plan.read_text()).items():
        async with ConversationStore(url, blobs="memory://callgrind") as store:
            for key, kwargs in variants.items():
                await store.list_conversations(limit=20, **kwargs)
                with counter.section(f"{url}|{key}"):
                    for _ in range(CALLGRIND_CALLS):
                        await store.list_conversations(limit=20, **kwargs)


def _instructions(
    stores: dict[int, ConversationStore], variants: dict[int, dict[str, dict[str, Any]]]
) -> dict[tuple[int, str], float] | str:
    """Instructions per call of each variant at each size (SQLite), or why none were counted."""
    reason = unavailable()
    if reason is not None:
        return reason
    by_url = {stores[size].url: size for size in stores}
    with tempfile.TemporaryDirectory(prefix="bench-listing-cg-") as tmp:
        plan = Path(tmp) / "plan.json"
        plan.write_text(json.dumps({stores[size].url: variants[size] for size in stores}))
        totals, failure = counted_run("bench.listing_bench", ["--inside", str(plan)], timeout=1800)
    if failure is not None:
        return failure
    counted = {}
    for name, total in totals.items():
        url, key = name.rsplit("|", 1)
        counted[(by_url[url], key)] = total / CALLGRIND_CALLS
    return counted


async def _sized_store(
    database: str, size: int, directory: Path, keep: Path | None, bulk: bool
) -> tuple[ConversationStore, dict[str, Any]]:
    """An open store holding ``size`` conversations, created (or found in ``keep``)."""
    if keep is not None and database == "sqlite":
        keep.mkdir(parents=True, exist_ok=True)
        url = f"sqlite+aiosqlite:///{keep / f'listing-{size}.db'}"
    elif keep is not None:
        url = await _kept_postgres_database(f"listing_{size}")
    else:
        url = await database_url(database, directory / str(size))
    await migrate(url)
    store = ConversationStore(url, blobs=str(directory / "blobs"))
    await store.__aenter__()
    held = await _count_conversations(url)
    if held not in (0, size):
        raise SystemExit(f"{url} holds {held:,} conversations, not 0 or {size:,}")
    took = await _create(store, held, size, bulk=bulk) if held < size else 0.0
    print(f"{database}: {size:,} conversations"
          + (f" ({size - held:,} made in {took:.0f} s)" if held < size else " (kept)"),
          file=sys.stderr, flush=True)  # fmt: skip
    return store, {"create_s": took, "created": size - held}


async def _count_conversations(url: str) -> int:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            return int(
                (await conn.execute(text("SELECT count(*) FROM conversations"))).scalar_one()
            )
    finally:
        await engine.dispose()


async def _kept_postgres_database(name: str) -> str:
    import asyncpg

    dsn = postgres_dsn()
    conn = await asyncpg.connect(f"{dsn}/postgres")
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"{dsn.replace('postgresql://', 'postgresql+asyncpg://')}/{name}"


async def run(
    database: str,
    sizes: list[int],
    directory: Path,
    bulk: bool,
    keep: Path | None = None,
    gc: bool = True,
    callgrind: bool = False,
) -> dict[str, Any]:
    result: dict[str, Any] = {"database": database, "sizes": {}, "bulk": bulk}
    stores: dict[int, ConversationStore] = {}
    try:
        variants: dict[int, dict[str, dict[str, Any]]] = {}
        for size in sorted(sizes):
            stores[size], result["sizes"][str(size)] = await _sized_store(
                database, size, directory, keep, bulk
            )
            variants[size] = await _variants(stores[size], size)
        # Interleaved: each round calls every variant at every size once, so the machine's
        # load falls on all of them alike; the first round warms up.
        samples: dict[tuple[int, str], list[float]] = {}
        for round_ in range(CALLS + 1):
            for key in VARIANT_KEYS:
                for size, store in stores.items():
                    began = time.perf_counter()
                    await store.list_conversations(limit=20, **variants[size][key])
                    if round_:
                        samples.setdefault((size, key), []).append(time.perf_counter() - began)
        for size, store in stores.items():
            entry = result["sizes"][str(size)]
            for key in VARIANT_KEYS:
                entry[key] = statistics.median(samples[(size, key)]) * 1e3
                entry[key.replace("_ms", "_pages")] = await _pages_read(
                    database, store, variants[size][key]
                )
        if database == "sqlite" and callgrind:
            counted = await asyncio.to_thread(_instructions, stores, variants)
            if isinstance(counted, str):
                result["callgrind_skipped"] = counted
            else:
                for (size, key), per_call in counted.items():
                    result["sizes"][str(size)][key.replace("_ms", "_instructions")] = per_call
    finally:
        for store in stores.values():
            await store.__aexit__(None, None, None)
    if gc:
        url = await database_url(database, directory / "gc")
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
    parser.add_argument(
        "--keep",
        type=Path,
        help="keep the databases (SQLite files in this directory; PostgreSQL databases "
        "listing_<size>) and reuse them on the next run",
    )
    parser.add_argument("--no-gc", action="store_true", help="skip the gc throughput")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="also count instructions per call (SQLite, valgrind's callgrind)",
    )
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--library", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tmpdir")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if args.inside:
        asyncio.run(_count_inside(Counter(args.library), args.inside))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    output = each_database(
        args.database,
        lambda database, tmp: run(
            database, sizes, tmp, args.bulk, args.keep, not args.no_gc, args.callgrind
        ),
        prefix="bench-listing-",
        tmpdir=args.tmpdir,
    )
    emit(output, args.json_out)


if __name__ == "__main__":
    main()


def _evidence(entry: dict[str, Any], key: str) -> str:
    counts = []
    pages = entry.get(key.replace("_ms", "_pages"))
    if pages is not None:
        counts.append(f"{pages} pages")
    instructions = entry.get(key.replace("_ms", "_instructions"))
    if instructions is not None:
        counts.append(f"{instructions / 1e6:.2f} M instr.")
    return f" ({', '.join(counts)})" if counts else ""


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
            cells = " | ".join(
                f"{result['sizes'][s][key]:.2f}" + _evidence(result["sizes"][s], key) for s in sizes
            )
            lines.append(f"| {label} | {cells} | {ratio:.2f}x | {verdict} |")
        lines += [
            "",
            "(In brackets: the pages one listing page reads, counted by the database: SQLite's "
            "cache hits and misses, PostgreSQL's shared buffers; and with `--callgrind`, "
            "instructions per call on SQLite, every thread.)",
        ]
        if "gc_blobs_s" not in result:
            continue
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
