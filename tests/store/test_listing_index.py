"""Listing and metadata filters as index ranges: exact under every write, one query per page.

The plans the databases choose are read from ``EXPLAIN`` and compared with what
``docs/scaling.md`` says they are, so the document cannot drift from the databases.
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Select, insert, text
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import ConversationStore, Message
from convstore.db.schema import conversation_tags, conversations
from convstore.db.statements.conversations import list_page
from convstore.imports import import_file
from convstore.store.conversations.metadata_tags import (
    PAIRED_ENTRIES,
    WIDE,
    filter_tags,
    tag,
    tags_of,
)
from tests.support.postgres import PostgresCluster

ROOT = Path(__file__).resolve().parents[2]


async def _ids(store: ConversationStore, **kwargs: Any) -> list[str]:
    return [c.id for c in await store.list_conversations(**kwargs)]


async def test_filters_follow_every_write(store: ConversationStore) -> None:
    t = uuid.uuid4().hex  # the PostgreSQL database is shared by the session's tests
    a = await store.create_conversation(tenant=t, metadata={"project": "p7", "user": "ann"})
    b = await store.create_conversation(tenant=t, metadata={"project": "p7"})
    assert await _ids(store, tenant=t, metadata={"project": "p7"}) == [b.id, a.id]
    assert await _ids(store, tenant=t, metadata={"project": "p7", "user": "ann"}) == [a.id]

    # get_or_create of an existing conversation keeps its own metadata and tags.
    same = await store.get_or_create_conversation(a.id, tenant=t, metadata={"project": "p9"})
    assert same.metadata == {"project": "p7", "user": "ann"}
    assert await _ids(store, tenant=t, metadata={"project": "p9"}) == []

    await store.update_conversation(a.id, tenant=t, metadata={"project": "p8"})
    assert await _ids(store, tenant=t, metadata={"project": "p7"}) == [b.id]
    assert await _ids(store, tenant=t, metadata={"project": "p8"}) == [a.id]
    assert await _ids(store, tenant=t, metadata={"user": "ann"}) == []

    await store.append(b.id, Message.user("hello"), tenant=t)
    fork = await store.fork(b.id, at_seq=1, tenant=t)
    assert await _ids(store, tenant=t, metadata={"project": "p7"}) == [fork.id, b.id]
    # Without a tenant the caller is trusted with every conversation: the same answer.
    assert [c for c in await _ids(store, metadata={"project": "p7"}) if c in (fork.id, b.id)] == [
        fork.id,
        b.id,
    ]

    await store.delete_conversation(b.id, tenant=t)
    assert await _ids(store, tenant=t, metadata={"project": "p7"}) == [fork.id]
    assert await _ids(store, tenant="other", metadata={"project": "p7"}) == []


async def test_values_compare_as_json_values(store: ConversationStore) -> None:
    t = uuid.uuid4().hex
    one = await store.create_conversation(tenant=t, metadata={"n": 1, "obj": {"a": 1, "b": [1, 2]}})
    await store.create_conversation(tenant=t, metadata={"n": True, "obj": {"a": 1}})
    assert await _ids(store, tenant=t, metadata={"n": 1.0}) == [one.id]
    assert await _ids(store, tenant=t, metadata={"obj": {"b": [1, 2], "a": 1}}) == [one.id]
    assert await _ids(store, tenant=t, metadata={"obj": {"b": [2, 1], "a": 1}}) == []


async def test_filters_of_several_entries_find_narrow_and_wide_conversations(
    store: ConversationStore,
) -> None:
    # A pair of entries is one tag of its own (metadata_tags.PAIRED_ENTRIES entries at most);
    # wider metadata holds none, and is found by checking every entry instead.
    t = uuid.uuid4().hex
    wide_extra = {f"x{i}": i for i in range(PAIRED_ENTRIES)}
    made = []
    for i in range(24):
        meta: dict[str, Any] = {"project": f"p{i % 2}", "user": f"u{i % 3}", "n": i % 4}
        if i % 5 == 0:
            meta.update(wide_extra)  # more than PAIRED_ENTRIES entries
        made.append(await store.create_conversation(title=str(i), tenant=t, metadata=meta))
    newest_first = sorted(made, key=lambda c: (c.created_at, c.id), reverse=True)

    def matching(**wanted: Any) -> list[str]:
        return [
            c.id for c in newest_first if all(c.metadata.get(k) == v for k, v in wanted.items())
        ]

    async def walked(limit: int, **kwargs: Any) -> list[str]:
        seen, cursor = [], None
        while True:
            page = await store.list_conversations(limit=limit, cursor=cursor, **kwargs)
            seen += [c.id for c in page]
            if page.next_cursor is None:
                return seen
            cursor = page.next_cursor

    for wanted in (
        {"project": "p0", "user": "u0"},
        {"user": "u0", "project": "p0"},  # either order
        {"project": "p1", "user": "u2", "n": 3},
        {"user": "u1", "x3": 3},  # only wide conversations hold x3
        {"x1": 1, "x2": 2.0},  # numbers by value, in a pair too
    ):
        expected = matching(**wanted)
        assert expected, wanted  # the case tests something
        assert await _ids(store, tenant=t, metadata=wanted) == expected, wanted
        assert await walked(2, tenant=t, metadata=wanted) == expected, wanted
        found = [c for c in await walked(3, metadata=wanted) if c in expected]
        assert found == expected, wanted
    assert await _ids(store, tenant=t, metadata={"project": "p0", "user": "u9"}) == []

    # Narrow to wide and back: the pairs follow the metadata.
    first = made[1]
    await store.update_conversation(
        first.id, metadata={"project": "p0", "user": "u1", **wide_extra}
    )
    assert first.id in await _ids(store, tenant=t, metadata={"project": "p0", "user": "u1"})
    assert first.id not in await _ids(store, tenant=t, metadata={"project": "p1", "user": "u1"})
    await store.update_conversation(first.id, metadata={"project": "p1", "user": "u1"})
    assert first.id in await _ids(store, tenant=t, metadata={"project": "p1", "user": "u1"})
    assert first.id not in await _ids(store, tenant=t, metadata={"user": "u1", "x3": 3})


async def test_a_restored_archive_without_pair_tags_is_found_by_pairs(
    store: ConversationStore, tmp_path: Path
) -> None:
    # Archives written before pair tags existed hold one tag per entry only: a restore
    # rebuilds the tags from the metadata instead of trusting the archive's.
    t = uuid.uuid4().hex
    meta = {"project": "p7", "user": "ann", "n": 2}
    made = await store.create_conversation(tenant=t, metadata=meta)
    exported, older = tmp_path / "now.zip", tmp_path / "older.zip"
    await store.export(exported, tenant=t)
    await store.erase_tenant(t, now=True)
    entries = {tag(key, value) for key, value in meta.items()}
    with zipfile.ZipFile(exported) as src, zipfile.ZipFile(older, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            document = json.loads(data) if item.filename.endswith(".json") else None
            if isinstance(document, dict) and "archive" in document:
                tags = document["archive"]["tables"]["conversation_tags"]
                at = tags["columns"].index("tag")
                assert len(tags["rows"]) > len(entries)  # pairs were exported
                tags["rows"] = [row for row in tags["rows"] if row[at] in entries]
                data = json.dumps(document).encode()
            dst.writestr(item, data)
    await import_file(store, older, "convstore")
    assert await _ids(store, tenant=t, metadata={"user": "ann", "project": "p7"}) == [made.id]
    assert await _ids(store, tenant=t, metadata={"n": 2, "user": "ann"}) == [made.id]


async def test_filtered_paging_sees_each_match_once_while_others_write(
    store: ConversationStore,
) -> None:
    t = uuid.uuid4().hex
    made = [
        await store.create_conversation(title=str(i), tenant=t, metadata={"p": i % 3})
        for i in range(40)
    ]
    newest_first = sorted(made, key=lambda c: (c.created_at, c.id), reverse=True)
    wanted = [c.id for c in newest_first if c.metadata["p"] == 0]
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list_conversations(tenant=t, limit=4, cursor=cursor, metadata={"p": 0})
        seen += [c.id for c in page]
        # Writers meanwhile: new conversations (newer than the walk), changed metadata of
        # conversations the walk does not list, appends.
        await store.create_conversation(tenant=t, metadata={"p": 0})
        await store.update_conversation(made[1].id, metadata={"p": 1, "touched": True})
        await store.append(made[0].id, Message.user("meanwhile"))
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == wanted


# -- plans --------------------------------------------------------------------------------------

_VARIANTS: dict[str, dict[str, Any]] = {
    "first page": {"tenant_scoped": False, "after_cursor": False, "tags": 0},
    "deep page": {"tenant_scoped": False, "after_cursor": True, "tags": 0},
    "tenant, deep page": {"tenant_scoped": True, "after_cursor": True, "tags": 0},
    "one metadata entry, deep page": {"tenant_scoped": False, "after_cursor": True, "tags": 1},
    "tenant, two metadata entries, deep page": {
        "tenant_scoped": True,
        "after_cursor": True,
        "tags": 2,
    },
}


def _documented_plans() -> dict[tuple[str, str], str]:
    """(variant, database) -> the index docs/scaling.md says the plan walks."""
    rows = re.findall(
        r"^\| (.+?) \| `(\w+)` \| `(\w+)` \|$",
        (ROOT / "docs" / "scaling.md").read_text(),
        re.MULTILINE,
    )
    plans = {}
    for variant, on_sqlite, on_postgres in rows:
        plans[(variant, "sqlite")] = on_sqlite
        plans[(variant, "postgresql")] = on_postgres
    return plans


def _params(shape: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"for_tenant": "t1", "limit": 21, "after_id": "zzz"}
    params["after_created"] = datetime(2026, 11, 26, tzinfo=UTC)
    wanted = {f"k{i}": "v" for i in range(shape["tags"])}
    found = filter_tags(wanted)
    params.update({f"tag{i}": tag for i, tag in enumerate(found.entries)})
    if found.pair is not None:
        params.update(pair=found.pair, wide=WIDE)
    return params


def test_sqlite_plans_are_the_documented_index_ranges(tmp_path: Path) -> None:
    import asyncio
    import sqlite3

    url = f"sqlite+aiosqlite:///{tmp_path / 'plans.db'}"

    async def create() -> None:
        async with ConversationStore(url, blobs="memory://plans"):
            pass

    asyncio.run(create())
    documented = _documented_plans()
    dialect = sqlite_dialect.dialect(paramstyle="named")
    with sqlite3.connect(tmp_path / "plans.db") as conn:
        for variant, shape in _VARIANTS.items():
            stmt: Select[Any] = list_page(**shape)
            compiled = stmt.compile(dialect=dialect)
            params = {**compiled.params, **_params(shape)}
            params["after_created"] = "2026-11-26 00:00:00.000000"
            plan = " / ".join(
                row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {compiled.string}", params)
            )
            # With metadata the page is settled among the tags, and only that page (LIMIT rows)
            # may be sorted again after the join; nothing else is ever sorted.
            assert "TEMP B-TREE" not in plan or (shape["tags"] and "MATERIALIZE" in plan), (
                variant,
                plan,
            )
            assert f"USING INDEX {documented[(variant, 'sqlite')]}" in plan or (
                f"USING COVERING INDEX {documented[(variant, 'sqlite')]}" in plan
            ), (variant, plan)


@pytest.mark.postgres
async def test_postgresql_plans_are_the_documented_index_ranges(
    pg_cluster: PostgresCluster,
) -> None:
    url = pg_cluster.create_database(f"plans_{uuid.uuid4().hex[:12]}")
    async with ConversationStore(url, blobs="memory://plans", auto_migrate=True):
        pass
    # Enough rows (written directly: the store's API is not what is measured) that a scan and
    # sort would cost more than the index range, as in any store worth listing by index.
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows, tag_rows = [], []
    for i in range(20_000):
        cid = f"c{i:06d}"
        created = start + timedelta(seconds=i)
        # 10 tenants; in each, one conversation in 10 has k0=v and one in 100 also k1=v.
        meta = {
            "k0": "v" if (i // 10) % 10 == 0 else "w",
            "k1": "v" if (i // 100) % 10 == 0 else "w",
        }
        tenant = f"t{i % 10}"
        rows.append(
            {"id": cid, "tenant": tenant, "metadata": meta, "created_at": created,
             "updated_at": created, "last_seq": 0, "revision": "1", "branched": False}
        )  # fmt: skip
        tag_rows += [
            {"conversation_id": cid, "tag": tag, "tenant": tenant, "created_at": created}
            for tag in tags_of(meta)
        ]
    engine = create_async_engine(url)
    documented = _documented_plans()
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(conversations), rows)
            await conn.execute(insert(conversation_tags), tag_rows)
            await conn.execute(text("ANALYZE"))
        async with engine.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            for variant, shape in _VARIANTS.items():
                compiled = list_page(**shape).compile(dialect=pg_dialect.asyncpg.dialect())
                values = {**compiled.params, **_params(shape)}
                args = [values[name] for name in compiled.positiontup or ()]
                plan = "\n".join(r[0] for r in await raw.fetch(f"EXPLAIN {compiled.string}", *args))
                # (The message count's subquery may scan the test's empty messages table.)
                scans = re.findall(r"Seq Scan on (\w+)", plan)
                assert not set(scans) - {"messages"}, (variant, plan)
                # Without metadata nothing is sorted; with it, PostgreSQL may sort the first
                # entry's matching tag rows when it expects few (docs/scaling.md says so).
                assert shape["tags"] or "Sort" not in plan, (variant, plan)
                assert documented[(variant, "postgresql")] in plan, (variant, plan)
    finally:
        await engine.dispose()
