"""Revision 0004 (listing indexes, metadata tags) on a populated database of revision 0003.

Conversations written at 0003, with metadata of every JSON shape, upgrade in place: every
metadata filter then finds exactly the conversations whose metadata holds those entries, and
paging is unchanged. The downgrade drops only the tags and the new indexes; upgrading again
rebuilds the tags and leaves no drift between the models and the migrations.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Connection, bindparam, inspect, text

from convstore import ConversationStore
from convstore.db.migrations import downgrade_connection, upgrade_connection
from convstore.db.types import UTCDateTime
from tests.db.test_migrations import _drift, _run, _tables

SEEDED: list[tuple[str, str | None, dict[str, Any] | None]] = [
    ("c-1", None, {"project": "p7", "user": "ann"}),
    ("c-2", "acme", {"project": "p7", "user": "bob", "n": 1}),
    ("c-3", "acme", {"project": "p8", "nested": {"b": 2, "a": [1, "x"]}}),
    ("c-4", None, None),
    ("c-5", "acme", {"project": "p7", "flag": True, "n": 1.0}),
]


def _seed(conn: Connection) -> None:
    """Rows as revision 0003 holds them, written through its own schema."""
    insert = text(
        "INSERT INTO conversations (id, tenant, title, metadata, last_seq, created_at, "
        "updated_at, revision, branched) VALUES (:id, :tenant, :title, :meta, 0, "
        ":created, :created, '1', false)"
    ).bindparams(
        bindparam("meta", type_=JSON(none_as_null=True)), bindparam("created", type_=UTCDateTime())
    )
    for index, (cid, tenant, meta) in enumerate(SEEDED):
        created = datetime(2026, 11, 25, 10, 0, index, tzinfo=UTC)
        conn.execute(
            insert,
            {
                "id": cid,
                "tenant": tenant,
                "title": f"title {cid}",
                "meta": meta,
                "created": created,
            },
        )


def _indexes(conn: Connection) -> set[str]:
    return {str(ix["name"]) for ix in inspect(conn).get_indexes("conversations")}


async def _ids(url: str, **kwargs: Any) -> list[str]:
    async with ConversationStore(url, blobs="memory://mig4") as store:
        return [c.id for c in await store.list_conversations(**kwargs)]


async def test_upgrade_from_populated_0003(empty_url: str) -> None:
    await _run(empty_url, lambda conn: upgrade_connection(conn, "0003"))
    await _run(empty_url, _seed)
    await _run(empty_url, lambda conn: upgrade_connection(conn, "head"))

    assert await _ids(empty_url) == ["c-5", "c-4", "c-3", "c-2", "c-1"]
    assert await _ids(empty_url, metadata={"project": "p7"}) == ["c-5", "c-2", "c-1"]
    assert await _ids(empty_url, metadata={"project": "p7", "user": "bob"}) == ["c-2"]
    assert await _ids(empty_url, metadata={"n": 1}) == ["c-5", "c-2"]  # 1 and 1.0 alike
    assert await _ids(empty_url, metadata={"flag": 1}) == []  # true is not 1
    nested = {"nested": {"a": [1, "x"], "b": 2}}  # another key order, the same object
    assert await _ids(empty_url, metadata=nested) == ["c-3"]
    assert await _ids(empty_url, tenant="acme", metadata={"project": "p7"}) == ["c-5", "c-2"]
    first = await _ids(empty_url, limit=2)
    assert first == ["c-5", "c-4"]

    await _run(empty_url, lambda conn: downgrade_connection(conn, "0003"))
    assert "conversation_tags" not in await _run(empty_url, _tables)  # type: ignore[operator]
    indexes = await _run(empty_url, _indexes)
    assert "ix_conversations_tenant_created_at" in indexes  # type: ignore[operator]
    assert "ix_conversations_created_at_id" not in indexes  # type: ignore[operator]
    await _run(empty_url, lambda conn: upgrade_connection(conn, "head"))
    assert await _ids(empty_url, metadata={"project": "p7"}) == ["c-5", "c-2", "c-1"]
    assert await _run(empty_url, _drift) == []
