"""A writer killed with SIGKILL mid-stream leaves a database with no partial message in it.

A launcher process (`tests.reliability.crash_writer`) forks writer processes that append
recognisable batches with inline attachments (so blobs are written before rows) to one SQLite
conversation, from two concurrent tasks, under the default settings (WAL,
``synchronous=FULL``, a local blob directory). The test kills each writer with SIGKILL at a
random point (seeded: a random number of acknowledged writes, then a random delay) and then
checks what it left:

- the database opens and passes SQLite's ``integrity_check`` and ``foreign_key_check``;
- every batch is whole or absent (batches are single appends: all-or-nothing), every call's
  lifecycle matches the results stored (no result without its lifecycle update, no update
  without its result), sequence numbers are ``1..last_seq`` (the audit of
  `tests.reliability.workload`);
- every write the writer was told had committed is there (a process crash loses nothing
  acknowledged), and at most the one write in flight beyond them per writer task;
- every referenced blob is present and intact (`fsck`); blobs of killed appends are merely
  unreferenced.

At the end ``python -m convstore fsck`` must exit 0, garbage collection takes the orphans, and
the store keeps working.
"""

from __future__ import annotations

import asyncio
import os
import random
import selectors
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from convstore import ConversationStore, Message, collect_garbage, fsck
from tests.reliability.workload import Audit, audit_stored

REPO = Path(__file__).resolve().parents[2]
SEED = 20240605
KILLS = 24
TASKS = 2
LINE_TIMEOUT = 30.0
CONVERSATION = "crash"
TENANT = "crash-test"


class Launcher:
    """The forking launcher, and a line reader on its stdout with deadlines."""

    def __init__(self, url: str, blobs: str, stderr: Path) -> None:
        self._stderr_path = stderr
        with stderr.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.crash_writer", "--url", url,
                 "--blobs", blobs, "--conversation", CONVERSATION],
                cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                env={k: v for k, v in os.environ.items() if not k.startswith("CONVSTORE_")},
            )  # fmt: skip
        assert self.process.stdin is not None and self.process.stdout is not None
        self._stdin = self.process.stdin
        self._fd = self.process.stdout.fileno()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._fd, selectors.EVENT_READ)
        self._buffer = b""

    def send(self, line: str) -> None:
        self._stdin.write(f"{line}\n".encode())
        self._stdin.flush()

    def line(self, *, until: float | None = None) -> str | None:
        """The next line; ``None`` once ``until`` (a monotonic time) passes without one."""
        deadline = until if until is not None else time.monotonic() + LINE_TIMEOUT
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._selector.select(remaining):
                if until is not None:
                    return None
                raise AssertionError(f"no line from the launcher: {self.stderr()}")
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise AssertionError(f"the launcher exited: {self.stderr()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def stderr(self) -> str:
        return self._stderr_path.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        self._selector.close()
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(10)
        self._stdin.close()
        assert self.process.stdout is not None
        self.process.stdout.close()


@contextmanager
def launcher(url: str, blobs: str, stderr: Path) -> Iterator[Launcher]:
    running = Launcher(url, blobs, stderr)
    try:
        assert running.line() == "ready"
        yield running
    finally:
        running.close()


@dataclass
class Acknowledged:
    """Writes a killed writer was told had committed, per writer task."""

    batches: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    completions: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

    def record(self, line: str) -> bool:
        kind, writer, k = line.split()
        if kind not in ("batch", "completion"):
            return False
        (self.batches if kind == "batch" else self.completions)[writer].add(int(k))
        return True

    @property
    def writes(self) -> int:
        return sum(map(len, self.batches.values())) + sum(map(len, self.completions.values()))


def kill_mid_stream(run: Launcher, round_: int, rng: random.Random) -> Acknowledged:
    """Start writer ``round_``, kill it after a random number of writes and a random delay."""
    acked = Acknowledged()
    run.send(f"run {round_} {TASKS}")
    started = run.line()
    assert started is not None and started.startswith(f"started {round_} "), started
    pid = int(started.split()[2])
    wait_for_writes = rng.choice([0, 1, 2, 3, 5, 8])
    while acked.writes < wait_for_writes:
        line = run.line()
        assert line is not None and acked.record(line), (line, run.stderr())
    until = time.monotonic() + rng.uniform(0.0, 0.06)
    while (line := run.line(until=until)) is not None:
        assert acked.record(line), (line, run.stderr())
    os.kill(pid, signal.SIGKILL)
    while (line := run.line()) != f"exited {round_} {signal.SIGKILL}":
        assert line is not None and acked.record(line), (line, run.stderr())
    return acked


def check_sqlite_file(database: Path) -> None:
    """SQLite's own checks, and every message's parts are a JSON array (on plain sqlite3)."""
    with closing(sqlite3.connect(database)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        broken = conn.execute(
            "SELECT count(*) FROM messages "
            "WHERE NOT json_valid(parts) OR json_type(parts) != 'array' OR parts = '[]'"
        ).fetchone()
        assert broken == (0,)


def check_acknowledged(
    found: Audit, acked: Acknowledged, round_: int, earlier: dict[str, int]
) -> int:
    """Every acknowledged write is stored, and at most the one in flight beyond it per task;
    what earlier (dead) writers left is unchanged. How many batches committed unacknowledged."""
    unacknowledged = 0
    for writer in (f"r{round_:02d}t{t}" for t in range(TASKS)):
        stored = found.batches.get(writer, 0)
        told = max(acked.batches[writer], default=-1) + 1
        assert told <= stored <= told + 1, (writer, told, stored)
        unacknowledged += stored - told
        for k in acked.completions[writer]:
            assert found.positions[(writer, k)][1] is not None, (writer, k)
    assert {w: n for w, n in found.batches.items() if w in earlier} == earlier
    earlier.update(found.batches)
    return unacknowledged


@dataclass(frozen=True)
class Checked:
    """What one kill left, once checked."""

    found: Audit
    unacknowledged: int
    """Batches committed whose writer was killed before it could report them."""
    referenced: int
    unreferenced: int
    """Blobs nothing references: stored by appends the kill cut off before their commit."""


async def check_store(
    url: str, blobs: str, acked: Acknowledged, round_: int, earlier: dict[str, int]
) -> Checked:
    """Audit the conversation and what the writer was told; fsck the blobs."""
    async with ConversationStore(url, blobs=blobs) as store:
        found = await audit_stored(store, CONVERSATION, tenant=TENANT, files=True)
        unacknowledged = check_acknowledged(found, acked, round_, earlier)
        report = await fsck(store)
        assert report.ok, (report.missing, report.corrupted)
    return Checked(found, unacknowledged, report.referenced, len(report.unreferenced))


async def create_conversation(url: str, blobs: str) -> None:
    async with ConversationStore(url, blobs=blobs) as store:
        await store.create_conversation(id=CONVERSATION, tenant=TENANT)


async def collect_and_append(url: str, blobs: str) -> tuple[int, int]:
    """After the kills: gc takes the orphans, and the store still appends; (deleted, staging)."""
    async with ConversationStore(url, blobs=blobs) as store:
        report = await collect_garbage(store, grace=timedelta(0))
        after = await fsck(store)
        assert after.ok and after.unreferenced == []
        (stored,) = await store.append(CONVERSATION, Message.user("still writable"))
        listed = await store.list_conversations(tenant=TENANT)
        assert stored.seq == listed[0].message_count
    return len(report.deleted), report.staging


@pytest.mark.slow
def test_sigkill_mid_stream_leaves_no_partial_writes(tmp_path: Path) -> None:
    database, blobs = tmp_path / "crash.db", str(tmp_path / "blobs")
    url = f"sqlite+aiosqlite:///{database}"
    asyncio.run(create_conversation(url, blobs))
    rng = random.Random(SEED)
    writes = unacknowledged = 0
    earlier: dict[str, int] = {}
    traces: Counter[str] = Counter()  # what the kills left behind, kill by kill
    staging = orphans = 0
    with launcher(url, blobs, tmp_path / "launcher.err") as run:
        for round_ in range(KILLS):
            acked = kill_mid_stream(run, round_, rng)
            check_sqlite_file(database)
            checked = asyncio.run(check_store(url, blobs, acked, round_, earlier))
            writes += acked.writes
            unacknowledged += checked.unacknowledged
            # Staging files of the shared namespace and of the tenants' ones.
            now_staging = len([*Path(blobs).glob("tmp/*"), *Path(blobs).glob("tenants/*/tmp/*")])
            traces["a staging file (killed mid-upload)"] += now_staging > staging
            traces["new orphan blobs (killed before the commit)"] += checked.unreferenced > orphans
            traces["a batch committed unacknowledged"] += checked.unacknowledged > 0
            staging, orphans = now_staging, checked.unreferenced
    assert writes > KILLS  # the writers did get going before most kills
    cli = subprocess.run(
        [sys.executable, "-m", "convstore", "fsck", "--url", url, "--blobs", blobs],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert f"0 missing, 0 corrupted; {checked.unreferenced} unreferenced" in cli.stdout
    deleted, swept = asyncio.run(collect_and_append(url, blobs))
    assert deleted == checked.unreferenced
    assert swept == staging
    found = checked.found
    print(
        f"{KILLS} SIGKILLs: {writes} acknowledged writes all present, {unacknowledged} batches "
        f"committed but unacknowledged; {found.messages} messages in {sum(found.batches.values())} "
        f"batches, 0 partial; {found.unanswered} calls left without a result (pending or "
        f"interrupted, none with a stray result); {checked.referenced} referenced blobs, 0 "
        f"missing; {deleted} orphan blobs and {swept} staging files collected by gc; kills "
        f"that left {dict(traces)}"
    )
