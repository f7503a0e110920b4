"""``convstore partition``: hash partitions by conversation id, in place, data-preserving,
idempotent, and invisible to Alembic's drift check (PostgreSQL only; SQLite is refused).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import (
    ConversationStore,
    FilePart,
    InvalidInputError,
    Message,
    SchemaOutOfDateError,
    ToolCallPart,
)
from convstore.cli.main import main
from convstore.db import partition
from convstore.db.migrations import alembic_config
from convstore.db.postgres._partitioning import PARTITIONED_TABLES, current_moduli
from tests.support.postgres import PostgresCluster

pytestmark = pytest.mark.postgres

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(2048)


@pytest.fixture
def empty_pg_url(pg_cluster: PostgresCluster) -> str:
    return pg_cluster.create_database(f"part_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def blobs() -> str:
    return f"memory://{uuid.uuid4().hex}"


@pytest.fixture
async def populated_url(empty_pg_url: str, blobs: str) -> str:
    """A migrated database holding every kind of per-conversation row."""
    async with ConversationStore(empty_pg_url, blobs=blobs, auto_migrate=True) as store:
        for n in range(12):
            conv = await store.create_conversation(tenant=f"t{n % 3}", title=f"c{n}")
            await store.append(
                conv.id,
                [
                    Message.user(f"question {n}", id=f"u{n}"),
                    Message.assistant(
                        ToolCallPart(id=f"call_{n}", name="lookup", arguments={"q": n})
                    ),
                ],
                tenant=f"t{n % 3}",
                idempotency_key=f"k{n}",
            )
            await store.append(
                conv.id,
                Message.tool_result(f"call_{n}", {"answer": n * 7}),
                tenant=f"t{n % 3}",
            )
            await store.append(
                conv.id,
                Message.user("look:", FilePart.from_bytes(PNG), id=f"img{n}"),
                tenant=f"t{n % 3}",
            )
            await store.compact(conv.id, through_seq=2, summary=f"summary {n}", tenant=f"t{n % 3}")
    return empty_pg_url


async def _run(url: str, fn: Any) -> Any:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def _rows(conn: Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, by column name (a rebuilt table may order its columns anew)."""
    return {
        name: sorted(
            repr(sorted(r.items())) for r in conn.execute(text(f"SELECT * FROM {name}")).mappings()
        )
        for name in (*PARTITIONED_TABLES, "conversations", "attachments")
    }


def _partitions(conn: Connection) -> dict[str, int]:
    rows = conn.execute(
        text(
            "SELECT p.relname, count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent"
            " WHERE p.relkind = 'p' GROUP BY p.relname"
        )
    ).all()
    return dict(rows)


def _check(conn: Connection) -> None:
    command.check(alembic_config(conn))  # raises when the models and the database differ


async def test_partition_keeps_every_row_and_the_schema(populated_url: str) -> None:
    before = await _run(populated_url, _rows)
    assert await partition(populated_url, 4) == list(PARTITIONED_TABLES)
    assert await _run(populated_url, _partitions) == dict.fromkeys(PARTITIONED_TABLES, 4)
    assert await _run(populated_url, current_moduli) == dict.fromkeys(PARTITIONED_TABLES, 4)
    assert await _run(populated_url, _rows) == before
    await _run(populated_url, _check)
    # Rows spread over the partitions (12 conversations in 4 partitions).
    spread = await _run(
        populated_url,
        lambda c: c.execute(text("SELECT count(DISTINCT tableoid) FROM messages")).scalar_one(),
    )
    assert spread > 1


async def test_partitioned_store_works_and_enforces_its_constraints(
    populated_url: str, blobs: str
) -> None:
    await partition(populated_url, 4)
    async with ConversationStore(populated_url, blobs=blobs) as store:
        conv = (await store.list_conversations(limit=100))[0]
        loaded = await store.load(conv.id, tenant=conv.tenant)
        assert [m.seq for m in loaded.messages] == [1, 2, 3, 4]
        assert loaded.tool_calls[0].status.value == "complete"
        with pytest.raises(InvalidInputError):  # the unique (conversation, message id) index
            await store.append(
                conv.id, Message.user("again", id=loaded.messages[0].id), tenant=conv.tenant
            )
        found = await store.get_message(loaded.messages[0].id or "", tenant=conv.tenant)
        assert found.conversation_id == conv.id
        await store.delete_conversation(conv.id, tenant=conv.tenant)  # cascades across tables
    remaining = await _run(
        populated_url,
        lambda c: c.execute(
            text("SELECT count(*) FROM messages WHERE conversation_id = :c"), {"c": conv.id}
        ).scalar_one(),
    )
    assert remaining == 0


async def test_second_run_does_nothing_and_another_modulus_repartitions(
    populated_url: str,
) -> None:
    before = await _run(populated_url, _rows)
    await partition(populated_url, 4)
    assert await partition(populated_url, 4) == []
    assert await partition(populated_url, 3) == list(PARTITIONED_TABLES)
    assert await _run(populated_url, _partitions) == dict.fromkeys(PARTITIONED_TABLES, 3)
    assert await _run(populated_url, _rows) == before
    await _run(populated_url, _check)


@pytest.mark.parametrize("modulus", [0, 1, 1025, True])
async def test_bad_modulus_is_refused_and_nothing_changes(populated_url: str, modulus: int) -> None:
    with pytest.raises(InvalidInputError, match="modulus"):
        await partition(populated_url, modulus)
    assert await _run(populated_url, current_moduli) == dict.fromkeys(PARTITIONED_TABLES)


async def test_unmigrated_database_is_refused(empty_pg_url: str) -> None:
    with pytest.raises(SchemaOutOfDateError, match="convstore migrate"):
        await partition(empty_pg_url, 4)


def test_cli(populated_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["partition", "--modulus", "2", "--url", populated_url]) == 0
    assert "into 2 hash partitions" in capsys.readouterr().out
    assert main(["partition", "--modulus", "2", "--url", populated_url]) == 0
    assert "nothing to do" in capsys.readouterr().out
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    assert main(["partition", "--modulus", "2", "--url", sqlite]) == 1
    assert "PostgreSQL" in capsys.readouterr().err
