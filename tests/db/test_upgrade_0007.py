"""Revision 0007 (released blobs) on a populated database of revision 0006: up, down, up.

0007 adds one table and changes no row, so a database written by this code and downgraded to
0006 holds what 0006's code would have written: conversations with files, a popped message,
an erased tenant. Each step must keep every other row; the downgrade drops the release
records (those blobs are then collected by age, as 0006 did), and after the upgrade an erase
records its released blobs again and the next collection deletes them young.
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import command
from sqlalchemy import Connection

from convstore import ConversationStore, FilePart, Message
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection
from convstore.store import collect_garbage
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows
from tests.support.images import noise_png

PREVIOUS = "0006"


def _tables(conn: Connection) -> set[str]:
    return set(sa.inspect(conn).get_table_names())


def _released(conn: Connection) -> list[tuple[str, str]]:
    rows = conn.execute(sa.text("SELECT namespace, sha256 FROM released_blobs"))
    return sorted((r[0], r[1]) for r in rows)


async def _populate(store: ConversationStore) -> list[str]:
    kept = await store.create_conversation(title="kept", tenant="stays")
    photo = FilePart.from_bytes(noise_png(31, 64, 48), media_type="image/png")
    await store.append(kept.id, [Message.user("look", photo), Message.assistant("a cat")])
    await store.append(kept.id, Message.user("again?"))
    await store.pop(kept.id)
    gone = await store.create_conversation(title="gone", tenant="leaves")
    scan = FilePart.from_bytes(noise_png(32, 80, 60), media_type="image/png")
    await store.append(gone.id, Message.user("my passport", scan))
    report = await store.erase_tenant("leaves")
    assert len(report.released) == 1
    return [kept.id]


async def test_a_populated_0006_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str,
) -> None:
    blobs = f"memory://up7-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        (kept,) = await _populate(store)
        loaded = (await store.load(kept)).model_dump(mode="json")
    rows = await _run(empty_url, _rows)
    assert len(await _run(empty_url, _released)) == 1  # type: ignore[arg-type]

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    assert "released_blobs" not in await _run(empty_url, _tables)  # type: ignore[operator]
    assert await _run(empty_url, _rows) == rows

    await migrate(empty_url)
    assert await _run(empty_url, _released) == []
    assert await _run(empty_url, _rows) == rows
    assert await _run(empty_url, _drift) == []
    await _run(empty_url, lambda conn: command.check(alembic_config(conn)))

    async with ConversationStore(empty_url, blobs=blobs) as store:
        assert (await store.load(kept)).model_dump(mode="json") == loaded
        # The record went with the downgrade: the default grace keeps the young blob now.
        assert (await collect_garbage(store)).deleted == []
        report = await store.erase_tenant("stays")
        assert len(report.released) == 1
        assert sorted((await collect_garbage(store)).deleted) == sorted(report.released)
        assert await _run(empty_url, _released) == []
