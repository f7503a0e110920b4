"""Search at 100,000 messages, and what the index costs an append.

Run: ``python -m bench.search_bench [--database sqlite,postgresql] [--messages 100000]
[--conversations 1000] [--rounds 5] [--json-out F]`` (``make bench`` runs it;
PostgreSQL runs on ``BENCH_POSTGRES_DSN``, or on a throwaway cluster like the tests' started
here).

Corpus: ``--messages`` messages in ``--conversations`` conversations, written through the
store's public append (10 messages an append, 16 writers), from a fixed random seed: chat text
drawn from a Zipf-distributed vocabulary of 8,000 words of three to ten letters drawn with
English letter frequencies, one message in eight German, one in eight
Japanese or Chinese (no spaces), one in eight an assistant tool call with a code identifier and
JSON arguments, titles from the same vocabulary.

Queries (200, a quarter of each kind, the same on both databases): common words
(vocabulary ranks 30-80: each in roughly 1-4 % of messages), rare words (ranks beyond 3,000),
two-word phrases cut from stored messages, and CJK terms of two to four characters cut from
stored messages (terms of two characters take the short-term path). The corpus is analyzed
first (``ANALYZE``: planner statistics, as PostgreSQL's autovacuum and an application's
periodic ``PRAGMA optimize`` gather them on a database in use). Each query runs once
unmeasured, then the median and p99 of all measured calls are reported, per kind and overall.

Append cost: two fresh databases per engine, one with the index and one whose search objects
were dropped (every ``search_*`` trigger and table, found in the catalog; on PostgreSQL its
appends run the one-statement append without the row it queues for the index, which has no
table there: `_no_search_writes`); the benchmark workload's
six-item turns, made before the clock starts, are appended to each in turn (``--rounds``
interleaved rounds of 50 appends, the order alternating),
items/s as the median of rounds. On SQLite the WAL frames each append writes are counted too
(a reader holds a snapshot, so the WAL only grows while the appends run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from bench.harness.callgrind import Counter, counted_run, dry_run, unavailable
from bench.harness.fixtures import postgres_cluster
from bench.workload import ITEMS_PER_TURN, turn_messages
from convstore import ConversationStore, Message, ToolCallPart

SEED = 21
PER_APPEND = 10
WRITERS = 16
APPENDS_PER_ROUND = 50

# English letter frequencies (per mille): words drawn from them have an English-like spread of
# trigrams, neither the few of a syllable vocabulary nor the uniform spread of random letters.
_LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
_LETTER_WEIGHTS = (127, 91, 82, 75, 70, 67, 63, 61, 60, 43, 40, 28, 28, 24, 24, 22, 20, 20, 19,
                   15, 10, 8, 2, 2, 1, 1)  # fmt: skip
_GERMAN = (
    "Die Größe der Äpfel ärgert den Bäcker",
    "Straßenbahn fährt über die Brücke nach Zürich",
    "Übermorgen prüfen wir die Gebühren",
    "Der Käse schmeckt köstlich",
)
_CJK = (
    "東京タワーに行きました",
    "京都の寺はきれいです",
    "我喜欢吃北京烤鸭",
    "北京是中国的首都",
    "データベースの検索は速い",
    "今天天气很好我们去公园",
)
_IDENTIFIERS = ("get_user_by_id", "parse_json_payload", "fetchOrders", "render_window", "gc_pause")


def _vocabulary(rng: random.Random, size: int = 8000) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < size:
        length = rng.randint(3, 10)
        words["".join(rng.choices(_LETTERS, _LETTER_WEIGHTS, k=length))] = None
    return list(words)


class Corpus:
    """The deterministic corpus and its query set."""

    def __init__(self, messages: int, conversations: int, per_kind: int = 50) -> None:
        rng = random.Random(SEED)
        self.words = _vocabulary(rng)
        weights = [1 / (rank + 1) for rank in range(len(self.words))]
        self.per_conversation = messages // conversations
        self.conversations: list[tuple[str, list[Message]]] = []
        texts: list[str] = []
        for c in range(conversations):
            title = " ".join(rng.choices(self.words, weights, k=3))
            batch = []
            for i in range(self.per_conversation):
                kind = rng.randrange(8)
                if kind == 0:
                    text = f"{rng.choice(_GERMAN)} {rng.choice(self.words)}"
                    batch.append(Message.user(text))
                elif kind == 1:
                    text = rng.choice(_CJK) + rng.choice(_CJK)
                    batch.append(Message.assistant(text))
                elif kind == 2:
                    text = " ".join(rng.choices(self.words, weights, k=8))
                    call = ToolCallPart(
                        id=f"call_{c}_{i}",
                        name=rng.choice(_IDENTIFIERS),
                        arguments={"query": text, "limit": rng.randint(1, 50)},
                    )
                    batch.append(Message.assistant(call))
                else:
                    text = " ".join(rng.choices(self.words, weights, k=rng.randint(10, 60)))
                    batch.append(Message.user(text) if i % 2 == 0 else Message.assistant(text))
                texts.append(text)
            self.conversations.append((title, batch))
        self.queries = self._queries(rng, texts, per_kind)

    def _queries(self, rng: random.Random, texts: list[str], per_kind: int) -> dict[str, list[str]]:
        latin = [t for t in texts if t.isascii()]
        cjk = [t for t in texts if not t.isascii() and "Ä" not in t and t[0] in "東京我北デ今"]
        phrases = []
        for text in rng.sample(latin, per_kind):
            words = text.split()
            start = rng.randrange(max(1, len(words) - 1))
            phrases.append('"' + " ".join(words[start : start + 2]) + '"')
        terms = []
        for text in rng.sample(cjk, per_kind):
            size = rng.randint(2, 4)
            start = rng.randrange(len(text) - size)
            terms.append(text[start : start + size])
        return {
            "common": rng.sample(self.words[30:80], per_kind),
            "rare": rng.sample(self.words[3000:], per_kind),
            "phrase": phrases,
            "cjk": terms,
        }


async def _fill(store: ConversationStore, corpus: Corpus) -> float:
    began = time.perf_counter()
    work = iter(corpus.conversations)

    async def writer() -> None:
        for title, messages in work:
            conv = await store.create_conversation(title=title)
            for start in range(0, len(messages), PER_APPEND):
                await store.append(conv.id, messages[start : start + PER_APPEND])

    await asyncio.gather(*(writer() for _ in range(WRITERS)))
    return time.perf_counter() - began


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _writer(store: ConversationStore, turns_per_s: float, stop: asyncio.Event) -> int:
    """Append the benchmark's turn ``turns_per_s`` times a second until ``stop``; turns written."""
    cid = (await store.create_conversation(title="writer beside the queries")).id
    loop = asyncio.get_running_loop()
    began, written = loop.time(), 0
    while not stop.is_set():
        await store.append(cid, turn_messages(written))  # tool-call ids unique per turn
        written += 1
        delay = began + written / turns_per_s - loop.time()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
    return written


async def _queries(
    store: ConversationStore, corpus: Corpus, writer_turns_per_s: float = 0.0
) -> dict[str, Any]:
    stop = asyncio.Event()
    writer = (
        asyncio.create_task(_writer(store, writer_turns_per_s, stop))
        if writer_turns_per_s
        else None
    )
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        out = await _timed_queries(store, corpus)
    finally:
        stop.set()
        written = await writer if writer is not None else 0
    if writer is not None:
        out["writer"] = {
            "turns": written,
            "turns_per_s": round(written / (loop.time() - began), 1),
        }
    return out


async def _timed_queries(store: ConversationStore, corpus: Corpus) -> dict[str, Any]:
    out: dict[str, Any] = {}
    every: list[float] = []
    for kind, queries in corpus.queries.items():
        samples, hits = [], []
        for query in queries:
            await store.search(query)
            began = time.perf_counter()
            page = await store.search(query)
            samples.append((time.perf_counter() - began) * 1000)
            hits.append(len(page))
        every += samples
        out[kind] = {
            "median_ms": round(statistics.median(samples), 2),
            "p99_ms": round(_percentile(samples, 0.99), 2),
            "queries": len(samples),
            "mean_hits": round(statistics.mean(hits), 1),
        }
    out["all"] = {
        "median_ms": round(statistics.median(every), 2),
        "p99_ms": round(_percentile(every, 0.99), 2),
        "queries": len(every),
    }
    return out


async def _analyze(url: str) -> None:
    """Gather planner statistics, as autovacuum does within a minute of such a load."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("ANALYZE")
    finally:
        await engine.dispose()


def _drop_search_objects(conn: Connection) -> None:
    """Every search trigger and table, found in the catalog by name (``search_*``), so that no
    module of the package is needed to name them (functions stay: nothing calls them then)."""
    run = conn.exec_driver_sql
    if conn.dialect.name == "sqlite":
        pattern = "name LIKE 'search\\_%' ESCAPE '\\'"
        listed = f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND {pattern}"
        for (name,) in list(run(listed)):
            run(f'DROP TRIGGER "{name}"')
        # The FTS5 table first: dropping it drops its shadow tables (search_fts_data, ...).
        virtual = "type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        for (name,) in list(run(f"SELECT name FROM sqlite_master WHERE {virtual} AND {pattern}")):
            run(f'DROP TABLE "{name}"')
        for (name,) in list(
            run(f"SELECT name FROM sqlite_master WHERE type = 'table' AND {pattern}")
        ):
            run(f'DROP TABLE "{name}"')
        run(f"DELETE FROM sqlite_sequence WHERE {pattern}")
        return
    triggers = run(
        "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "WHERE NOT t.tgisinternal AND t.tgname LIKE 'search\\_%'"
    ).all()
    for trigger, table in triggers:
        run(f'DROP TRIGGER "{trigger}" ON "{table}"')
    found = run(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
        "AND tablename LIKE 'search\\_%'"
    ).all()
    for (name,) in found:
        run(f'DROP TABLE "{name}" CASCADE')


async def _drop_index(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_drop_search_objects)
    finally:
        await engine.dispose()


async def _wal_lsn(url: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            lsn = (await conn.exec_driver_sql("SELECT pg_current_wal_lsn()::text")).scalar_one()
    finally:
        await engine.dispose()
    high, low = str(lsn).split("/")
    return (int(high, 16) << 32) | int(low, 16)


def _wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def _append_round(
    store: ConversationStore, cid: str, first_turn: int, appends: int = APPENDS_PER_ROUND
) -> float:
    # The turns are made before the clock starts: making one costs about as much as storing it.
    turns = [turn_messages(n) for n in range(first_turn, first_turn + appends)]
    began = time.perf_counter()
    for messages in turns:
        await store.append(cid, messages)
    return appends * ITEMS_PER_TURN / (time.perf_counter() - began)


@contextlib.contextmanager
def _no_search_writes(url: str) -> Iterator[None]:
    """For the database without search objects: PostgreSQL's one-statement append without the
    row it queues for the index (revision 0017: the writes queue what they insert), i.e. the
    append as it would be with no search at all. SQLite's append writes nothing for search."""
    if url.startswith("sqlite"):
        yield
        return
    from convstore.db.postgres.append import QUEUE_CTE
    from convstore.store.append import _one_statement

    shipped: str = getattr(_one_statement, "SQL")  # noqa: B009 (imported there, not exported)
    bare = shipped.replace(QUEUE_CTE, "")
    if bare == shipped:
        raise SystemExit("the append statement's search queue CTE has changed: update the bench")
    setattr(_one_statement, "SQL", bare)  # noqa: B010
    try:
        yield
    finally:
        setattr(_one_statement, "SQL", shipped)  # noqa: B010


async def _append_cost(
    urls: dict[str, str],
    paths: dict[str, Path | None],
    rounds: int,
    appends: int = APPENDS_PER_ROUND,
) -> Any:
    await _drop_index(urls["without"])
    stores = {k: ConversationStore(u, blobs=f"memory://search-bench-{k}") for k, u in urls.items()}
    rates: dict[str, list[float]] = {k: [] for k in urls}
    frames: dict[str, list[float]] = {k: [] for k in urls}
    wal_bytes: dict[str, list[float]] = {k: [] for k in urls}
    try:
        cids = {}
        for key, store in stores.items():
            await store.open()
            cids[key] = (await store.create_conversation()).id
            with _no_search_writes(urls[key]) if key == "without" else contextlib.nullcontext():
                await _append_round(store, cids[key], 0, appends)  # warm-up
        for r in range(rounds):
            order = ["with", "without"] if r % 2 == 0 else ["without", "with"]
            for key in order:
                path = paths[key]
                holder = None
                if path is not None:  # a snapshot held open: the WAL only grows meanwhile
                    holder = sqlite3.connect(path)
                    holder.execute("BEGIN")
                    holder.execute("SELECT count(*) FROM conversations").fetchone()
                    before = _wal_bytes(path)
                lsn = await _wal_lsn(urls[key]) if path is None else None
                first = (r + 1) * appends
                unqueued = _no_search_writes(urls[key]) if key == "without" else None
                with unqueued or contextlib.nullcontext():
                    rate = await _append_round(stores[key], cids[key], first, appends)
                rates[key].append(rate)
                if lsn is not None:
                    grown = await _wal_lsn(urls[key]) - lsn
                    wal_bytes[key].append(grown / appends)
                if holder is not None and path is not None:
                    page = holder.execute("PRAGMA page_size").fetchone()[0]
                    grown = _wal_bytes(path) - before
                    frames[key].append(grown / (page + 24) / appends)
                    holder.close()
    finally:
        for store in stores.values():
            await store.close()
    result: dict[str, Any] = {
        key: {"items_per_s": round(statistics.median(values))} for key, values in rates.items()
    }
    for key, values in frames.items():
        if values:
            result[key]["wal_frames_per_append"] = round(statistics.median(values), 2)
    for key, values in wal_bytes.items():
        if values:  # PostgreSQL: WAL bytes per append (the whole cluster's; nothing else runs)
            result[key]["wal_bytes_per_append"] = round(statistics.median(values))
    result["ratio"] = round(result["with"]["items_per_s"] / result["without"]["items_per_s"], 3)
    return result


async def _urls(database: str, directory: Path, name: str) -> tuple[str, Path | None]:
    if database == "sqlite":
        path = directory / f"{name}.db"
        return f"sqlite+aiosqlite:///{path}", path
    from bench.peers.runner import fresh_postgres_database, postgres_dsn

    dsn = postgres_dsn().replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{dsn}/{await fresh_postgres_database(name)}", None


async def run(database: str, args: argparse.Namespace, corpus: Corpus) -> dict[str, Any]:
    """One engine's numbers."""
    with tempfile.TemporaryDirectory(prefix="search-bench-") as tmp:
        directory = Path(tmp)
        url, _ = await _urls(database, directory, "search_corpus")
        async with ConversationStore(
            url, blobs="memory://search-bench", auto_migrate=True
        ) as store:
            print(f"{database}: writing {args.messages:,} messages …", file=sys.stderr, flush=True)
            fill_s = await _fill(store, corpus)
            await _analyze(url)
            print(
                f"{database}: {sum(map(len, corpus.queries.values()))} queries …",
                file=sys.stderr,
                flush=True,
            )
            queries = await _queries(store, corpus)
            print(
                f"{database}: the queries again, a writer appending"
                f" {args.writer_turns_per_s} turns/s beside them …",
                file=sys.stderr,
                flush=True,
            )
            beside_writer = await _queries(store, corpus, args.writer_turns_per_s)
        urls, paths = {}, {}
        for key in ("with", "without"):
            urls[key], paths[key] = await _urls(database, directory, f"search_append_{key}")
            async with ConversationStore(urls[key], blobs="memory://x", auto_migrate=True):
                pass
        append = None
        if not args.skip_append:
            print(f"{database}: append with and without the index …", file=sys.stderr, flush=True)
            append = await _append_cost(urls, paths, args.rounds, args.appends_per_round)
    return {
        "messages": args.messages,
        "conversations": args.conversations,
        "fill_messages_per_s": round(args.messages / fill_s),
        "queries": queries,
        "queries_beside_writer": beside_writer,
        "append": append,
    }


CALLGRIND_APPENDS = 30


async def _inside_callgrind(counter: Counter) -> None:
    """Under callgrind: instructions of `CALLGRIND_APPENDS` appends with and without the index."""
    with tempfile.TemporaryDirectory(prefix="search-bench-cg-") as tmp:
        keys = ("with", "with_catch_up", "without")
        urls = {k: f"sqlite+aiosqlite:///{Path(tmp) / k}.db" for k in keys}
        for url in urls.values():
            async with ConversationStore(url, blobs="memory://cg", auto_migrate=True):
                pass
        await _drop_index(urls["without"])
        for key, url in urls.items():
            async with ConversationStore(url, blobs=f"memory://cg-{key}") as store:
                # "with": the append alone (no catch-up runs); "with_catch_up": each append
                # followed by a catch-up of its turn, as an idle writer's background or a
                # search would run it (FTS5 merging, which is bounded background work, apart).
                store.search_index.background = False
                cid = (await store.create_conversation()).id
                for n in range(20):  # a history, and warm caches
                    await store.append(cid, turn_messages(n))
                if key != "without":
                    await store.search_index.catch_up()
                # One more, uncounted: the catch-up made the tenant's index table (revision
                # 0016), a schema change the writer's connection reads once, at its next
                # statement; a new tenant's first turn pays it once, no append after.
                await store.append(cid, turn_messages(20))
                turns = [turn_messages(n) for n in range(21, 21 + CALLGRIND_APPENDS)]
                with counter.section(f"append_{key}"):
                    for messages in turns:
                        await store.append(cid, messages)
                        if key == "with_catch_up":
                            await store.search_index.catch_up()


def callgrind_append() -> dict[str, Any] | str:
    """Instructions per append (SQLite) with and without the index, counted by callgrind."""
    missing = unavailable()
    if missing is not None:
        return f"not run: {missing}"
    totals, failure = counted_run("bench.search_bench", ["--inside-callgrind"], timeout=1800)
    if failure is not None or len(totals) < 3:
        return f"not run: {failure or f'only {sorted(totals)} counted'}"
    if dry_run():
        return "dry run: nothing counted"
    per = {
        k: totals[f"append_{k}"] / CALLGRIND_APPENDS for k in ("with", "with_catch_up", "without")
    }
    return {
        "instructions_per_append_with": round(per["with"]),
        "instructions_per_append_with_catch_up": round(per["with_catch_up"]),
        "instructions_per_append_without": round(per["without"]),
        "ratio": round(per["without"] / per["with"], 3),
        "ratio_with_catch_up": round(per["without"] / per["with_catch_up"], 3),
    }


def markdown(results: dict[str, Any]) -> str:
    """The results as markdown tables."""
    lines = [
        "| database | kind | median ms | p99 ms | mean hits |",
        "|---|---|---:|---:|---:|",
    ]
    for database, result in results.items():
        if database == "callgrind":
            continue
        if not isinstance(result, dict):
            lines.append(f"| {database} | {result} | | | |")
            continue
        for label, key in (("", "queries"), (" (writer beside)", "queries_beside_writer")):
            for kind, numbers in result.get(key, {}).items():
                if kind == "writer":
                    continue
                lines.append(
                    f"| {database}{label} | {kind} | {numbers['median_ms']} |"
                    f" {numbers['p99_ms']} | {numbers.get('mean_hits', '')} |"
                )
    lines += [
        "",
        "| database | items/s with index | items/s without | ratio | WAL frames/append with |"
        " without | WAL bytes/append with | without |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for database, result in results.items():
        if database == "callgrind":
            continue
        if not isinstance(result, dict):
            continue
        a = result.get("append")
        if not a:
            continue
        lines.append(
            f"| {database} | {a['with']['items_per_s']} | {a['without']['items_per_s']} |"
            f" {a['ratio']} | {a['with'].get('wal_frames_per_append', 'n/a')} |"
            f" {a['without'].get('wal_frames_per_append', 'n/a')} |"
            f" {a['with'].get('wal_bytes_per_append', 'n/a')} |"
            f" {a['without'].get('wal_bytes_per_append', 'n/a')} |"
        )
    cg = results.get("callgrind")
    if isinstance(cg, dict):
        lines += [
            "",
            f"SQLite append under callgrind: {cg['instructions_per_append_with']:,} instructions"
            f" with the search objects, {cg['instructions_per_append_without']:,} without"
            f" (without/with {cg['ratio']}x); with a catch-up of each turn after it (off the"
            f" append's path) {cg['instructions_per_append_with_catch_up']:,}"
            f" ({cg['ratio_with_catch_up']}x).",
        ]
    elif cg is not None:
        lines += ["", f"callgrind: {cg}"]
    return "\n".join(lines)


@contextlib.contextmanager
def _postgres(wanted: bool) -> Iterator[None]:
    """A throwaway cluster like the tests' when PostgreSQL is wanted and none was given."""
    with postgres_cluster(wanted and not os.environ.get("BENCH_POSTGRES_DSN")) as (env, _):
        os.environ.update(env)
        try:
            yield
        finally:
            for key in env:
                del os.environ[key]


def main() -> None:
    """Run the benchmark on each database; print the tables (and write ``--json-out``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="sqlite,postgresql")
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json-out")
    parser.add_argument("--writer-turns-per-s", type=float, default=20.0)
    parser.add_argument("--skip-append", action="store_true", help="queries only")
    parser.add_argument("--callgrind", action="store_true", help="count append instructions too")
    parser.add_argument("--queries-per-kind", type=int, default=50, help="queries of each kind")
    parser.add_argument(
        "--appends-per-round", type=int, default=APPENDS_PER_ROUND, help="append cost rounds"
    )
    parser.add_argument("--inside-callgrind", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside_callgrind:
        asyncio.run(_inside_callgrind(Counter(args.library)))
        return
    corpus = Corpus(args.messages, args.conversations, args.queries_per_kind)
    results: dict[str, Any] = {}
    with _postgres("postgresql" in args.database.split(",")):
        for database in filter(None, args.database.split(",")):
            try:
                results[database] = asyncio.run(run(database, args, corpus))
            except ImportError as exc:  # no PostgreSQL cluster
                results[database] = f"not run: {exc}"
    if args.callgrind:
        print("sqlite: append under callgrind …", file=sys.stderr, flush=True)
        results["callgrind"] = callgrind_append()
    print(markdown(results))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
