"""The measuring half of the store comparison: one store, one process, fresh SQLite files.

A peer module describes its store with a `Peer` and adapts it to `Store`; `main` measures it
exactly as it measures every other store:

1. warm-up: every phase once, small, on a throw-away file (imports, statement caches, first
   connections); not recorded;
2. append: one conversation of ``--turns`` turns (500); one `Store.append_turn` per turn
   (whatever write calls the store needs for a turn happen inside it); the whole loop is timed,
   and items/s counts the workload's six items a turn, whatever a store calls them; the
   per-turn latencies give p50 and p99;
3. full load: the whole conversation, ``--loads`` times (10), median;
4. last-N: the newest ``--last`` (50) records, in the store's own unit, ``--lasts`` times
   (50), median; a store without such an API reports none;
5. concurrent: a second fresh file; ``--conversations`` (20) conversations, each appended
   ``--conversation-turns`` (50) turns by its own asyncio task; items/s over the wall time of
   all tasks, and the appends that raised. Afterwards every conversation is counted, so lost
   writes show too.
6. turn loop (stores whose adapter has `Store.request`): what an agent or chat app does every
   turn, ``--loop-turns`` (500) times on a fresh file: read the history (all of it, or the
   newest ``--last``), turn it into the body of the next model request as the store's own
   framework does, serialise that with `json.dumps`, then append the turn; turns/s over the
   whole loop, once reading everything and once the newest ``--last``.
7. pop (stores whose adapter has `PoppingStore.pop_last`): after the loads of phase 3 and 4,
   the newest record is removed and returned ``--pops`` (20) times, one call each; median.

Every phase checks that the store gives back what was appended: a broken adapter must not
produce numbers. Payloads are built, in each store's own shape, before the clock starts.

Fresh files: every repetition gets a new temporary directory. With ``--journal wal`` (the
default) the empty database file is put in WAL mode before the store opens it: the journal
mode is a property of the file, so every store writes a WAL file. Per-connection settings, such
as ``synchronous``, stay what the store sets or SQLite's default. ``--journal native`` lets
each store create its file its own way.

A store with a synchronous API is called directly on the event loop's thread when it writes a
single conversation (no thread hop), and through `asyncio.to_thread` in the concurrent phase,
as an asyncio application would call it.

Offline: telemetry switches are set in the environment, and connections to anything but
loopback are refused and recorded (``network_attempts`` in the result).

Results go to ``--json-out`` (read by `bench.compare`) and a summary to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import inspect
import ipaddress
import json
import os
import platform
import socket
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from bench.harness.fixtures import OFFLINE_ENVIRONMENT
from bench.harness.timing import spread
from bench.workload import ITEMS_PER_TURN

_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


@dataclass(frozen=True, slots=True)
class Peer:
    """What a store is and how it is driven; shown beside its numbers."""

    name: str
    """Module name under `bench.peers`."""
    label: str
    """Name in the tables."""
    packages: tuple[str, ...]
    """Distributions whose versions are reported; the first is the store's own package."""
    unit: str
    """What the store keeps one row or object of: ``messages``, ``items``, ``events``."""
    records_per_turn: int
    """How many of them one workload turn (six items) becomes."""
    append_api: str
    """The write calls of one turn, e.g. ``1 x add_items (6 items)``."""
    load_api: str
    """The call that loads a whole conversation."""
    last_api: str | None
    """The call that loads the newest N records; `None` when the store has none."""
    shape: str
    """The item shape written, in a few words."""
    durability: str
    """The SQLite settings the store applies itself (read from its source)."""
    database: str = "sqlite"
    """``sqlite`` (a fresh file per repetition) or ``postgresql`` (a fresh database per
    repetition on the cluster `bench.compare` starts: see `postgres_dsn`)."""
    requests: str | None = None
    """How the adapter builds a model request from the history (`RequestingStore.request`),
    in a few words; `None`: the store is left out of the turn loop."""


class Store(Protocol):
    """One open store. Methods may be coroutine functions or plain (blocking) functions."""

    def payload(self, turn: int) -> Any:
        """Turn ``turn`` of the workload in the store's own shape (built before timing)."""
        ...

    def new_conversation(self, key: str) -> Any:
        """Create an empty conversation; returns the handle the other methods take."""
        ...

    def append_turn(self, conversation: Any, payload: Any) -> Any:
        """Write one turn (a `payload`) with the store's natural write calls."""
        ...

    def load_all(self, conversation: Any) -> Any:
        """Load the whole conversation; returns how many records it got."""
        ...

    def load_last(self, conversation: Any, n: int) -> Any:
        """Load the newest ``n`` records; returns how many it got."""
        ...


class RequestingStore(Store, Protocol):
    """A store whose adapter also builds the next model request (the turn-loop phase)."""

    def request(self, conversation: Any, last: int | None) -> Any:
        """Read the history (``last``: only the newest records), build the request body the
        store's framework would send to the model from it, serialise it with `json.dumps`;
        returns how many input items the body holds."""
        ...


class PoppingStore(Store, Protocol):
    """A store whose API removes and returns the newest record (the pop phase)."""

    def pop_last(self, conversation: Any) -> Any:
        """Remove the newest record and return it; returns how many it got (1)."""
        ...


OpenStore = Callable[[Path], AbstractAsyncContextManager[Store]]
"""Opens a store on an SQLite file (which may exist, empty, or not yet)."""


@dataclass(slots=True)
class Repetition:
    """The numbers of one repetition."""

    append_items_s: float
    append_p50_ms: float
    append_p99_ms: float
    full_load_ms: float
    last_ms: float | None
    concurrent_items_s: float
    concurrent_errors: int
    concurrent_lost_turns: int
    first_error: str | None
    journal_mode: str
    database_bytes: int
    wal_pages_per_append: float | None = None
    """WAL frames (pages) written, and fsynced, per append: SQLite stores only."""
    turn_loop_full_turns_s: float | None = None
    """Turns/s of the turn loop reading the whole history each turn (`RequestingStore`)."""
    turn_loop_last_turns_s: float | None = None
    """Turns/s of the turn loop reading the newest ``last`` records each turn."""
    pop_ms: float | None = None
    """Median time to remove and return the newest record (`PoppingStore`)."""


class AdapterError(AssertionError):
    """The store did not give back what was appended: the numbers would mean nothing."""


# -- helpers shared with bench.compare ----------------------------------------------------------


def sqlite_default_synchronous() -> str:
    """``synchronous`` of a fresh sqlite3 connection to a WAL file (compile-time default)."""
    with tempfile.TemporaryDirectory() as tmp, closing(sqlite3.connect(Path(tmp) / "p.db")) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        (value,) = conn.execute("PRAGMA synchronous").fetchone()
    return f"{_SYNCHRONOUS.get(value, value)} ({value})"


# -- offline guard ------------------------------------------------------------------------------

_network_attempts: list[str] = []


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in {"localhost", ""}:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _go_offline() -> None:
    for key, value in OFFLINE_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if self.family in {socket.AF_INET, socket.AF_INET6} and not _is_loopback(host):
            _network_attempts.append(f"connect {address!r}")
            raise OSError("network access is disabled in the benchmark")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and not _is_loopback(name):
            _network_attempts.append(f"resolve {name!r}")
            raise socket.gaierror(socket.EAI_NONAME, "network access is disabled")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = getaddrinfo


# -- measuring ----------------------------------------------------------------------------------


async def call(fn: Callable[..., Any], *args: Any, threaded: bool = False) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    if threaded:
        return await asyncio.to_thread(fn, *args)
    return fn(*args)


async def _median_ms(fn: Callable[[], Awaitable[int]], times: int) -> tuple[float, int]:
    samples = []
    count = 0
    for _ in range(times):
        start = time.perf_counter()
        count = await fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3, count


def _expect(what: str, got: int, expected: int) -> None:
    if got != expected:
        raise AdapterError(f"{what}: got {got} records, expected {expected}")


def _fresh_file(path: Path, journal: str) -> Path:
    path.parent.mkdir(parents=True)
    if journal == "wal":
        with closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
    return path


def _journal_mode(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    return str(mode)


def _database_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@dataclass(frozen=True, slots=True)
class Settings:
    """The workload sizes and repetition counts (the command-line options)."""

    turns: int = 500
    loads: int = 10
    last: int = 50
    lasts: int = 50
    conversations: int = 20
    conversation_turns: int = 50
    journal: str = "wal"
    wal_turns: int = 50
    loop_turns: int = 500
    pops: int = 20


async def _single(
    peer: Peer, open_store: OpenStore, path: Path, s: Settings
) -> tuple[float, float, float, float, float | None, float | None]:
    async with open_store(path) as store:
        conversation = await call(store.new_conversation, "bench-single")
        payloads = [store.payload(n) for n in range(s.turns)]
        latencies = []
        gc.collect()
        start = time.perf_counter()
        for payload in payloads:
            began = time.perf_counter()
            await call(store.append_turn, conversation, payload)
            latencies.append(time.perf_counter() - began)
        append_s = time.perf_counter() - start

        expected = s.turns * peer.records_per_turn
        gc.collect()
        full_ms, count = await _median_ms(lambda: call(store.load_all, conversation), s.loads)
        _expect("full load", count, expected)
        last_ms: float | None = None
        if peer.last_api is not None:
            gc.collect()
            last_ms, count = await _median_ms(
                lambda: call(store.load_last, conversation, s.last), s.lasts
            )
            _expect(f"last {s.last}", count, min(s.last, expected))
        pop_ms: float | None = None
        pop_last = getattr(store, "pop_last", None)
        if pop_last is not None and s.pops:
            gc.collect()
            popped: list[int] = []

            async def pop() -> int:
                popped.append(await call(pop_last, conversation))
                return popped[-1]

            pop_ms, _ = await _median_ms(pop, s.pops)
            _expect(f"{s.pops} pops", sum(popped), s.pops)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return (
        s.turns * ITEMS_PER_TURN / append_s,
        statistics.median(latencies) * 1e3,
        cuts[98] * 1e3,
        full_ms,
        last_ms,
        pop_ms,
    )


async def _concurrent(
    peer: Peer, open_store: OpenStore, path: Path, s: Settings
) -> tuple[float, int, int, str | None]:
    async with open_store(path) as store:
        conversations = [
            await call(store.new_conversation, f"bench-{i}") for i in range(s.conversations)
        ]
        batches = [
            [store.payload(i * s.conversation_turns + t) for t in range(s.conversation_turns)]
            for i in range(s.conversations)
        ]
        errors: list[str] = []
        written = [0] * s.conversations

        async def writer(i: int) -> None:
            for payload in batches[i]:
                try:
                    await call(store.append_turn, conversations[i], payload, threaded=True)
                except Exception as exc:  # counted: errors under concurrency are a result
                    first_line = next(iter(str(exc).splitlines()), "")
                    errors.append(f"{type(exc).__name__}: {first_line}"[:200])
                else:
                    written[i] += 1

        gc.collect()
        start = time.perf_counter()
        await asyncio.gather(*(writer(i) for i in range(s.conversations)))
        elapsed = time.perf_counter() - start
        lost = 0
        for i, conversation in enumerate(conversations):
            stored = await call(store.load_all, conversation)
            lost += max(0, written[i] - stored // peer.records_per_turn)
    items_s = sum(written) * ITEMS_PER_TURN / elapsed
    return items_s, len(errors), lost, errors[0] if errors else None


async def _turn_loop(open_store: OpenStore, path: Path, s: Settings, last: int | None) -> float:
    """Turns/s of ``loop_turns`` x (read the history, build the request, append the turn)."""
    async with open_store(path) as store:
        conversation = await call(store.new_conversation, "bench-turns")
        payloads = [store.payload(n) for n in range(s.loop_turns)]
        counts = []
        gc.collect()
        start = time.perf_counter()
        for payload in payloads:
            counts.append(await call(cast("RequestingStore", store).request, conversation, last))
            await call(store.append_turn, conversation, payload)
        elapsed = time.perf_counter() - start
    for turn, count in enumerate(counts):
        before = turn * ITEMS_PER_TURN
        # A window may widen (to the start of a turn), never shrink.
        fewest = before if last is None else min(last, before)
        if not fewest <= count <= before:
            raise AdapterError(f"turn {turn}: the request held {count} items of {before}")
    return s.loop_turns / elapsed


_WAL_HEADER = 32
_WAL_FRAME_HEADER = 24


async def _wal_pages(open_store: OpenStore, path: Path, turns: int) -> float:
    """WAL frames one append writes, on average over ``turns`` appends.

    An observer holds a read transaction open meanwhile, so no checkpoint can restart the WAL:
    it only grows, by one frame (page + 24-byte header) per page each commit writes.
    """
    wal = path.with_name(path.name + "-wal")
    async with open_store(path) as store:
        conversation = await call(store.new_conversation, "bench-wal")
        payloads = [store.payload(n) for n in range(turns + 3)]
        for payload in payloads[:3]:  # frames in the WAL: the observer reads from it
            await call(store.append_turn, conversation, payload)
        with closing(sqlite3.connect(path, isolation_level=None)) as observer:
            (page_size,) = observer.execute("PRAGMA page_size").fetchone()
            observer.execute("BEGIN")
            observer.execute("SELECT count(*) FROM sqlite_master").fetchone()
            before = wal.stat().st_size
            for payload in payloads[3:]:
                await call(store.append_turn, conversation, payload)
            after = wal.stat().st_size
            observer.execute("COMMIT")
    return float((after - before) / (page_size + _WAL_FRAME_HEADER) / turns)


def postgres_dsn() -> str:
    """The cluster `bench.compare` started (``BENCH_POSTGRES_DSN``), without a database name."""
    dsn = os.environ.get("BENCH_POSTGRES_DSN")
    if not dsn:
        raise ImportError("no PostgreSQL cluster: run through `python -m bench.compare`")
    return dsn


async def fresh_postgres_database(prefix: str, dsn: str | None = None) -> str:
    """A new empty database on the benchmark's cluster (or ``dsn``'s); its name."""
    import uuid

    import asyncpg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(f"{dsn or postgres_dsn()}/postgres")
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return name


async def _repetition(
    peer: Peer, open_store: OpenStore, s: Settings, tmpdir: str | None
) -> Repetition:
    sqlite = peer.database == "sqlite"
    with tempfile.TemporaryDirectory(prefix=f"bench-{peer.name}-", dir=tmpdir) as tmp:
        single = _fresh_file(Path(tmp) / "single" / "store.db", s.journal)
        items_s, p50, p99, full_ms, last_ms, pop_ms = await _single(peer, open_store, single, s)
        journal = _journal_mode(single) if sqlite else "postgresql"
        size = _database_bytes(single) if sqlite else 0
        many = _fresh_file(Path(tmp) / "concurrent" / "store.db", s.journal)
        conc_s, errors, lost, first = await _concurrent(peer, open_store, many, s)
        wal_pages = None
        if sqlite and s.journal == "wal" and s.wal_turns:
            wal_file = _fresh_file(Path(tmp) / "wal" / "store.db", s.journal)
            wal_pages = await _wal_pages(open_store, wal_file, s.wal_turns)
        loops: dict[str, float | None] = {"full": None, "last": None}
        if peer.requests and s.loop_turns:
            for mode, last in (("full", None), ("last", s.last)):
                if last is not None and peer.last_api is None:
                    continue  # no API for the newest N records
                loop_file = _fresh_file(Path(tmp) / f"loop-{mode}" / "store.db", s.journal)
                loops[mode] = await _turn_loop(open_store, loop_file, s, last)
    return Repetition(
        append_items_s=items_s,
        append_p50_ms=p50,
        append_p99_ms=p99,
        full_load_ms=full_ms,
        last_ms=last_ms,
        concurrent_items_s=conc_s,
        concurrent_errors=errors,
        concurrent_lost_turns=lost,
        first_error=first,
        journal_mode=journal,
        database_bytes=size,
        wal_pages_per_append=wal_pages,
        turn_loop_full_turns_s=loops["full"],
        turn_loop_last_turns_s=loops["last"],
        pop_ms=pop_ms,
    )


async def _warm_up(peer: Peer, open_store: OpenStore, s: Settings, tmpdir: str | None) -> None:
    # Never larger than the measured run (a smoke run's is tiny).
    small = Settings(
        turns=min(s.turns, 20), loads=2, last=s.last, lasts=2, conversations=2,
        conversation_turns=min(s.conversation_turns, 3), journal=s.journal,
        wal_turns=min(s.wal_turns, 2), loop_turns=min(s.loop_turns, 12), pops=min(s.pops, 3),
    )  # fmt: skip
    await _repetition(peer, open_store, small, tmpdir)


def _versions(packages: Sequence[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in packages:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


async def measure(
    peer: Peer, open_store: OpenStore, settings: Settings, reps: int, tmpdir: str | None = None
) -> dict[str, Any]:
    """Warm up, then ``reps`` repetitions on fresh files; the result as plain data."""
    versions = _versions(peer.packages)
    result: dict[str, Any] = {
        "store": peer.name,
        "peer": asdict(peer),
        "available": True,
        "reason": None,
        "versions": versions,
        "python": platform.python_version(),
        "executable": sys.executable,
        "sqlite": sqlite3.sqlite_version,
        "sqlite_default_synchronous": sqlite_default_synchronous(),
        "settings": asdict(settings),
        "repetitions": [],
        "network_attempts": _network_attempts,
    }
    missing = [name for name, version in versions.items() if version is None]
    if missing:
        reason = f"not installed: {', '.join(missing)} (make bench installs it: the bench extra)"
        result.update(available=False, reason=reason)
        return result
    if tmpdir is not None:
        Path(tmpdir).mkdir(parents=True, exist_ok=True)
    try:
        await _warm_up(peer, open_store, settings, tmpdir)
    except ImportError as exc:  # installed, but without the API measured here
        result.update(available=False, reason=f"{type(exc).__name__}: {exc}")
        return result
    for _ in range(reps):
        rep = await _repetition(peer, open_store, settings, tmpdir)
        result["repetitions"].append(asdict(rep))
    return result


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _print_summary(result: dict[str, Any]) -> None:
    peer = result["peer"]
    print(f"{peer['label']}  ({', '.join(f'{k} {v}' for k, v in result['versions'].items())})")
    if not result["available"]:
        print(f"  n/a: {result['reason']}")
        return
    reps = result["repetitions"]

    def line(key: str, unit: str, spec: str) -> str:
        values = [r[key] for r in reps if r.get(key) is not None]
        if not values:
            return f"  {key:<20} n/a"
        mid, low, high = spread(values)
        return (
            f"  {key:<20} {format(mid, spec):>10} {unit:<8} "
            f"[{format(low, spec)} - {format(high, spec)}]"
        )

    for key, unit, spec in (
        ("append_items_s", "items/s", ",.0f"),
        ("append_p99_ms", "ms", ".2f"),
        ("full_load_ms", "ms", ".2f"),
        ("last_ms", "ms", ".3f"),
        ("pop_ms", "ms", ".3f"),
        ("concurrent_items_s", "items/s", ",.0f"),
        ("wal_pages_per_append", "pages", ".2f"),
        ("turn_loop_full_turns_s", "turns/s", ",.1f"),
        ("turn_loop_last_turns_s", "turns/s", ",.1f"),
    ):
        print(line(key, unit, spec))
    print(
        f"  concurrent errors    {sum(r['concurrent_errors'] for r in reps)} over {len(reps)} reps"
    )
    print(f"  journal_mode         {reps[0]['journal_mode']} (file, after the run)")
    if result["network_attempts"]:
        print(f"  NETWORK ATTEMPTS     {result['network_attempts']}")


def main(peer: Peer, open_store: OpenStore) -> None:
    """Command line of a peer module: measure ``peer`` and report."""
    _go_offline()
    defaults = Settings()
    parser = argparse.ArgumentParser(description=f"Measure {peer.label} (see bench.peers.runner)")
    parser.add_argument("--reps", type=int, default=3, help="measured repetitions (3)")
    parser.add_argument("--turns", type=int, default=defaults.turns)
    parser.add_argument("--loads", type=int, default=defaults.loads)
    parser.add_argument("--last", type=int, default=defaults.last)
    parser.add_argument("--lasts", type=int, default=defaults.lasts)
    parser.add_argument("--conversations", type=int, default=defaults.conversations)
    parser.add_argument("--conversation-turns", type=int, default=defaults.conversation_turns)
    parser.add_argument("--journal", choices=["wal", "native"], default=defaults.journal)
    parser.add_argument(
        "--loop-turns", type=int, default=defaults.loop_turns, help="turn loop length (0: skip)"
    )
    parser.add_argument("--pops", type=int, default=defaults.pops, help="pop phase (0: skip)")
    parser.add_argument("--wal-turns", type=int, default=defaults.wal_turns, help="WAL phase")
    parser.add_argument("--tmpdir", help="where the fresh databases go (default: the system's)")
    parser.add_argument("--json-out", type=Path, help="write the result here as JSON")
    args = parser.parse_args()
    settings = Settings(
        turns=args.turns, loads=args.loads, last=args.last, lasts=args.lasts,
        conversations=args.conversations, conversation_turns=args.conversation_turns,
        journal=args.journal, loop_turns=args.loop_turns, pops=args.pops,
        wal_turns=args.wal_turns,
    )  # fmt: skip
    result = asyncio.run(measure(peer, open_store, settings, args.reps, args.tmpdir))
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result, indent=1))
    _print_summary(result)
