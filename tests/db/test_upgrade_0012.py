"""Revision 0012 (a window's calls by index, PostgreSQL) on a populated database of 0011.

0012 adds two indexes to ``tool_calls`` on PostgreSQL and changes no row; on SQLite it changes
nothing. Downgraded to 0011 the indexes are gone and every row kept; upgraded again they are
back, the models do not drift, and every load and window reads what it read before. The same
holds on a hash-partitioned database (``convstore partition``), where each index is created on
the partitioned table and so on every partition.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore
from convstore.db import migrate, partition
from convstore.db.migrations import alembic_config, downgrade_connection
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _populate, _rows
from tests.support.postgres import PostgresCluster

PREVIOUS = "0011"
INDEXES = {"ix_tool_calls_seq", "ix_tool_calls_result_seq"}
WINDOWS: list[dict[str, int]] = [{}, {"last": 1}, {"last": 2}, {"last": 3, "before_seq": 9}]


def _indexes(conn: Connection) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(conn).get_indexes("tool_calls")} & INDEXES


def _partition_indexes(conn: Connection) -> int:
    """How many partitions of ``tool_calls`` hold an index on ``result_seq``."""
    return int(
        conn.exec_driver_sql(
            "SELECT count(*) FROM pg_inherits i JOIN pg_index x ON x.indrelid = i.inhrelid"
            " JOIN pg_class c ON c.oid = x.indexrelid"
            " WHERE i.inhparent = 'tool_calls'::regclass AND c.relname LIKE '%result_seq%'"
        ).scalar_one()
    )


async def _loads(url: str, blobs: str, ids: list[str]) -> list[Any]:
    async with ConversationStore(url, blobs=blobs, message_cache=0) as store:
        return [
            await store.load(cid, **window)  # type: ignore[arg-type]
            for cid in ids
            for window in WINDOWS
        ]


async def _up_down_up(
    url: str, blobs: str, ids: list[str], expected: set[str], *, partitioned: bool = False
) -> None:
    rows = await _run(url, _rows)
    loads = await _loads(url, blobs, ids)
    assert await _run(url, _indexes) == expected

    await _run(url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert await _run(url, _indexes) == set()
    assert await _run(url, _rows) == rows

    await migrate(url)
    assert await _run(url, _indexes) == expected
    assert await _run(url, _rows) == rows
    if not partitioned:  # the partitions are no model's; `command.check` leaves them out
        assert await _run(url, _drift) == []
    await _run(url, lambda conn: command.check(alembic_config(conn)))
    assert await _loads(url, blobs, ids) == loads


async def test_a_populated_0011_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up12-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        ids = await _populate(store)
    postgres = empty_url.startswith("postgresql")
    await _up_down_up(empty_url, blobs, ids, INDEXES if postgres else set())


@pytest.mark.postgres
async def test_a_partitioned_0011_database_upgrades_downgrades_and_upgrades_again(
    pg_cluster: PostgresCluster,
) -> None:
    url = pg_cluster.create_database(f"up12p_{uuid.uuid4().hex[:12]}")
    blobs = f"memory://up12p-{uuid.uuid4().hex}"
    await migrate(url)
    async with ConversationStore(url, blobs=blobs) as store:
        ids = await _populate(store)
    assert await partition(url, 4)
    assert await _run(url, _partition_indexes) == 4
    await _up_down_up(url, blobs, ids, INDEXES, partitioned=True)
    assert await _run(url, _partition_indexes) == 4
