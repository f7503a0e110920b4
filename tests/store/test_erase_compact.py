"""``erase --compact``: the erased tenant's text leaves the database's files (issue 32, 9).

A delete leaves row bytes behind: PostgreSQL keeps dead row versions in the table files until
``VACUUM FULL`` (a plain ``VACUUM`` only marks the space reusable); SQLite keeps freed pages
(unless ``secure_delete`` zeroes them) and WAL frames. The test writes a marker only the erased
tenant uses, erases, and scans the database's own files for it (PostgreSQL: every relation file
of the database after a checkpoint; SQLite: the file and its WAL) with and without compaction.
What remains by design (PostgreSQL's WAL, archives, replicas, backups) is documented in
docs/data-in-and-out.md, not scanned here.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from convstore import ConversationStore, Message
from tests.support.postgres import PostgresCluster

MARKER = "qzxcompactionmarkerqzx"


async def _fill(url: str, blobs: str) -> None:
    async with ConversationStore(url, blobs=blobs, auto_migrate=True) as store:
        for n in range(20):
            conv = await store.create_conversation(title=f"t {MARKER}", tenant="gone")
            await store.append(
                conv.id, [Message.user(f"{MARKER} {n} " * 20), Message.assistant("ok")]
            )
        keep = await store.create_conversation(tenant="kept")
        await store.append(keep.id, [Message.user("nothing to see")])


def _pg_files(cluster: PostgresCluster, database: str) -> list[Path]:
    cluster.psql("CHECKPOINT")
    root = Path(cluster.psql("SHOW data_directory").strip())
    oid = cluster.psql(f"SELECT oid FROM pg_database WHERE datname = '{database}'").strip()
    return sorted(p for p in (root / "base" / oid).iterdir() if p.is_file())


def _found(files: list[Path]) -> int:
    return sum(p.read_bytes().count(MARKER.encode()) for p in files if p.exists())


@pytest.mark.postgres
@pytest.mark.parametrize("compact", [False, True])
async def test_postgres_compaction_removes_dead_rows(
    pg_cluster: PostgresCluster, blobs_url: str, compact: bool
) -> None:
    database = f"compact_{uuid.uuid4().hex[:10]}"
    url = pg_cluster.create_database(database)
    await _fill(url, blobs_url)
    assert _found(_pg_files(pg_cluster, database)) > 0
    async with ConversationStore(url, blobs=blobs_url) as store:
        report = await store.erase_tenant("gone", now=True, compact=compact)
        assert report.conversations == 20
        assert len(await store.list_conversations(tenant="kept")) == 1
    left = _found(_pg_files(pg_cluster, database))
    if compact:
        assert left == 0
    else:
        assert left > 0  # what the documentation warns of: dead rows until VACUUM FULL


async def test_sqlite_compaction(tmp_path: Path, blobs_url: str) -> None:
    database = tmp_path / "c.db"
    url = f"sqlite+aiosqlite:///{database}"
    await _fill(url, blobs_url)
    async with ConversationStore(url, blobs=blobs_url) as store:
        await store.erase_tenant("gone", now=True, compact=True)
        assert len(await store.list_conversations(tenant="kept")) == 1
        assert _found([database, database.with_name("c.db-wal")]) == 0
