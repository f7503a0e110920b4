"""Shared fixtures: the database every store test runs on, and a store per test.

`db_url` is parametrised: SQLite always, PostgreSQL through a throwaway cluster this session
starts itself. Without PostgreSQL binaries the PostgreSQL cases skip with the reason, except
under ``CI=true``, where a missing server is a failure (CI must run them).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from convstore import ConversationStore
from tests.support.postgres import PostgresCluster, find_bindir, running_cluster

if TYPE_CHECKING:  # moto and s3fs load with the first S3 test (~1.5 s of CPU a process)
    from tests.support.storage import S3Server

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first (each group in collection order), the rest after them.

    pytest-xdist's work stealing hands the idle worker the far end of the other's queue, so
    the run ends with short tests on both workers; a 30-50 s fuzzer collected late used to be
    the last test left, one core idle meanwhile. Every worker collects the same order.
    """
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def built_dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel built from it (``python -m build``'s default), once a session.

    Once for all the session's pytest-xdist workers too (~8 s of CPU each time): the first to
    need it builds it under a lock in the directory they share, the others wait and reuse it.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this session's directory, beside each worker's own
    out = shared / "dist"
    root = Path(__file__).resolve().parents[1]
    with (shared / "dist.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (out / ".built").exists():
            shutil.rmtree(out, ignore_errors=True)  # a build that failed half-way
            # --no-isolation: hatchling comes pinned with the dev extra; no registry round trip.
            subprocess.run(
                [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(root)],
                check=True,
                capture_output=True,
                timeout=240,
            )
            (out / ".built").touch()
    (sdist,) = out.glob("convstore-*.tar.gz")
    (wheel,) = out.glob("convstore-*.whl")
    return sdist, wheel


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster for the whole session (started lazily, on first use)."""
    if find_bindir() is None:
        message = "PostgreSQL binaries (initdb, pg_ctl) not found: install the postgresql package"
        if IN_CI:
            pytest.fail(f"{message}; under CI=true PostgreSQL tests must run", pytrace=False)
        pytest.skip(message)
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A local S3-compatible server (moto) on 127.0.0.1 with one bucket, for the session."""
    from tests.support.storage import running_s3_server

    with running_s3_server() as server:
        yield server


PG_PARTITIONS = int(os.environ.get("CONVSTORE_TEST_PG_PARTITIONS") or 0)
"""When set, the shared PostgreSQL database is hash-partitioned into this many partitions per
table (``convstore partition``) before the tests use it: ``make test`` runs the PostgreSQL store,
concurrency and v2-operation suites this way too."""


@pytest.fixture(scope="session")
def pg_store_url(pg_cluster: PostgresCluster) -> str:
    """A migrated PostgreSQL database shared by the store tests of this session."""
    import asyncio

    from convstore.db import partition

    url = pg_cluster.create_database("convstore_tests")

    async def migrate() -> None:
        async with ConversationStore(url, blobs="memory://migrate", auto_migrate=True):
            pass
        if PG_PARTITIONS:
            assert await partition(url, PG_PARTITIONS)

    asyncio.run(migrate())
    return url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new SQLite store's file, migrated once a session and copied for each test.

    Migrating a new file takes ~120 ms (every revision, Alembic included), a copy well under
    one: most store tests start from a new database, and the migrations have tests of their own
    (tests/db). A memory:// blob location is not recorded, so the file names no blobs.
    """
    import asyncio

    path = tmp_path_factory.mktemp("template") / "convstore.db"

    async def migrate() -> None:
        async with ConversationStore(f"sqlite+aiosqlite:///{path}", blobs="memory://template",
                                     auto_migrate=True):  # fmt: skip
            pass

    asyncio.run(migrate())
    assert not path.with_name(path.name + "-wal").exists(), "closed with its WAL still there"
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The database a store test runs on (a new, migrated one on SQLite)."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("pg_store_url")
        return url
    path = tmp_path_factory.mktemp("db") / "convstore.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
def blobs_url() -> str:
    """A fresh in-memory blob location."""
    return f"memory://convstore-test-{uuid.uuid4().hex}"


@pytest.fixture
async def store(db_url: str, blobs_url: str) -> AsyncIterator[ConversationStore]:
    """An open store on `db_url` with in-memory blobs."""
    async with ConversationStore(db_url, blobs=blobs_url, auto_migrate=True) as opened:
        yield opened
