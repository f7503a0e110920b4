"""A populated v1 database survives the migrations: up to head, down to 0001, up again.

The fixture in ``fixtures/v1/`` was written by the v1 code itself (commit d7b1e98, see
``fixtures/make_v1_fixture.py``): its table rows, what v1's ``load`` and ``list_conversations``
returned, the idempotent appends it replayed, and the attachment blobs. Each test starts from
an empty database migrated to revision 0001, inserts those rows exactly, and then:

- at head, every conversation loads equal to its v1 load (the fields v1 had; fields added
  later are not compared), every attachment is readable, and every idempotency key still
  replays without writing;
- after a downgrade to 0001, every table holds exactly the fixture rows again;
- after upgrading once more, the loads are still equal, and the models show no drift.

The v1 tables are described here from the fixture (``rows.json`` records each column's kind),
never from ``convstore.db.schema``, which describes the current schema.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pytest
import sqlalchemy as sa
from alembic import command
from pydantic_core import to_jsonable_python
from sqlalchemy import Connection

from convstore import ConversationStore, Message
from convstore.db import migrate
from convstore.db.migrations import alembic_config, downgrade_connection, head_revision
from convstore.db.types import UTCDateTime
from tests.db.test_migrations import _drift, _run
from tests.support.postgres import PostgresCluster

FIXTURE: Final = Path(__file__).resolve().parent / "fixtures" / "v1"
ROWS: Final[dict[str, Any]] = json.loads((FIXTURE / "rows.json").read_text(encoding="utf-8"))
LOADS: Final[dict[str, Any]] = json.loads((FIXTURE / "loads.json").read_text(encoding="utf-8"))
TABLES: Final[dict[str, Any]] = ROWS["tables"]
V1: Final = "0001"
MISSING: Final = "<missing after the upgrade>"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"v1fix_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'v1.db'}"


@pytest.fixture
def blobs_dir(tmp_path: Path) -> Path:
    """A blob location holding the fixture's blobs, in the store's layout."""
    target = tmp_path / "blobs"
    shutil.copytree(FIXTURE / "blobs", target)
    return target


# -- the v1 tables, as the fixture describes them ----------------------------------------------


def _column_type(kind: str) -> sa.types.TypeEngine[Any]:
    match kind:
        case "text":
            return sa.Text()
        case "integer":
            return sa.BigInteger()
        case "json":
            # SQL NULL stays SQL NULL (v1 never stores a JSON null).
            return sa.JSON(none_as_null=True)
        case "timestamp":
            return UTCDateTime()
    raise AssertionError(f"unknown column kind {kind!r}")


def _v1_table(name: str) -> sa.Table:
    columns = TABLES[name]["columns"]
    return sa.Table(
        name, sa.MetaData(), *(sa.Column(c, _column_type(k)) for c, k in columns.items())
    )


def _to_db(name: str, row: dict[str, Any]) -> dict[str, Any]:
    kinds = TABLES[name]["columns"]
    return {
        c: datetime.fromisoformat(v) if v is not None and kinds[c] == "timestamp" else v
        for c, v in row.items()
    }


def _normalised(name: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row as comparable values: timestamps as UTC ISO text, JSON as parsed values."""
    kinds = TABLES[name]["columns"]
    out: dict[str, Any] = {}
    for column, value in row.items():
        if value is not None and kinds[column] == "timestamp":
            parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value)
            assert parsed.tzinfo is not None, (name, column, value)
            out[column] = parsed.isoformat()
        else:
            out[column] = value
    return out


def _pk_sorted(conn: Connection, name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Sorted in Python: PostgreSQL's collation and SQLite's byte order can differ.
    key = sa.inspect(conn).get_pk_constraint(name)["constrained_columns"]
    assert key, f"{name} has no primary key"
    return sorted(rows, key=lambda r: tuple(r[c] for c in key))


def _assert_v1_shape(conn: Connection) -> None:
    """The database has exactly the v1 tables and columns, at revision 0001."""
    inspector = sa.inspect(conn)
    assert set(inspector.get_table_names()) - {"alembic_version"} == set(TABLES)
    for name, table in TABLES.items():
        assert {c["name"] for c in inspector.get_columns(name)} == set(table["columns"]), name
    version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    assert version == V1


def _insert_fixture(conn: Connection) -> None:
    _assert_v1_shape(conn)
    for name, table in TABLES.items():  # rows.json lists parents before children
        if table["rows"]:
            conn.execute(_v1_table(name).insert(), [_to_db(name, r) for r in table["rows"]])
    if conn.dialect.name == "postgresql":
        # Explicit ids do not move a serial's sequence; a real v1 database's would have moved.
        for name in TABLES:
            for column in sa.inspect(conn).get_pk_constraint(name)["constrained_columns"]:
                sequence = conn.execute(
                    sa.text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": name, "c": column}
                ).scalar_one()
                if sequence is not None and TABLES[name]["rows"]:
                    conn.execute(
                        sa.text(f"SELECT setval(:s, (SELECT max({column}) FROM {name}))"),
                        {"s": sequence},
                    )


def _table_contents(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    contents = {}
    for name in TABLES:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(_v1_table(name)))]
        contents[name] = _pk_sorted(conn, name, [_normalised(name, r) for r in rows])
    return contents


def _downgraded_contents(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    _assert_v1_shape(conn)
    contents = _table_contents(conn)
    # A v1 writer can still add rows: e.g. a compaction's generated id does not collide.
    savepoint = conn.begin_nested()
    compactions = TABLES["compactions"]["rows"]
    assert compactions, "the fixture has compactions"
    new = {k: v for k, v in _to_db("compactions", compactions[0]).items() if k != "id"}
    conn.execute(_v1_table("compactions").insert(), new)
    savepoint.rollback()
    return contents


def _expected_contents(conn: Connection) -> dict[str, list[dict[str, Any]]]:
    return {
        name: _pk_sorted(conn, name, [_normalised(name, r) for r in table["rows"]])
        for name, table in TABLES.items()
    }


async def _sync(url: str, fn: Callable[[Connection], Any]) -> Any:
    return await _run(url, fn)


# -- comparing loads: the fields v1 had --------------------------------------------------------


def _v1_view(actual: Any, expected: Any) -> Any:
    """``actual`` cut down to the keys ``expected`` (a v1 dump) has, recursively."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _v1_view(actual.get(k, MISSING), v) for k, v in expected.items()}
    if isinstance(expected, list) and isinstance(actual, list) and len(actual) == len(expected):
        return [_v1_view(a, e) for a, e in zip(actual, expected, strict=True)]
    return actual


def _without_inherited_provenance(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """Undo one documented v2 change: a thinking part may take its message's provider/model.

    Only a value v1 left unset and that equals the message's own is put back to unset.
    """
    for got_msg, want_msg in zip(actual["messages"], expected["messages"], strict=False):
        for got, want in zip(got_msg["parts"], want_msg["parts"], strict=False):
            if want.get("kind") != "thinking" or got.get("kind") != "thinking":
                continue
            for field in ("provider", "model"):
                if want[field] is None and got.get(field) == want_msg[field]:
                    got[field] = None


def _assert_loads_like_v1(dumped: dict[str, Any], expected: dict[str, Any]) -> None:
    _without_inherited_provenance(dumped, expected)
    got = _v1_view(dumped, expected)
    for field, want in expected.items():  # field by field, so a failure names the field
        assert got[field] == want, f"conversation {expected['id']}: {field}"


def _by_id(summaries: list[Any]) -> list[Any]:
    return sorted(summaries, key=lambda s: s["id"])


async def _assert_store_matches_v1(url: str, blobs: Path) -> None:
    async with ConversationStore(url, blobs=str(blobs)) as store:
        read: set[str] = set()
        for cid, expected in LOADS["conversations"].items():
            tenant = expected["tenant"]
            convo = await store.load(cid, tenant=tenant)
            _assert_loads_like_v1(convo.model_dump(mode="json"), expected)
            for message in convo.messages:
                for part in message.files:
                    if part.attachment is None:
                        assert part.uri is not None
                        continue
                    data = await store.read_attachment(part, tenant=tenant)
                    sha = part.attachment.sha256
                    assert hashlib.sha256(data).hexdigest() == sha
                    assert data == (FIXTURE / "blobs" / "sha256" / sha[:2] / sha).read_bytes()
                    read.add(sha)
        assert read == {row["sha256"] for row in TABLES["attachments"]["rows"]}

        for scope, expected_list in LOADS["list_conversations"].items():
            listed = await store.list_conversations(tenant=None if scope == "all" else scope)
            # Compared as sets: v2 may order pages by a stable key rather than by update time.
            got = _by_id([to_jsonable_python(s) for s in listed])
            want = _by_id(expected_list)
            assert _v1_view(got, want) == want, scope


async def _assert_keys_replay(url: str, blobs: Path) -> None:
    """Each idempotency key returns the messages v1 stored, and writes nothing."""
    async with ConversationStore(url, blobs=str(blobs)) as store:
        for replay in LOADS["idempotent_appends"]:
            cid, tenant = replay["conversation_id"], replay["tenant"]
            before = (await store.load(cid, tenant=tenant)).model_dump(mode="json")
            listed_before = [to_jsonable_python(s) for s in await store.list_conversations()]
            again = await store.append(
                cid,
                [Message.model_validate(m) for m in replay["messages"]],
                tenant=tenant,
                idempotency_key=replay["key"],
            )
            got = [m.model_dump(mode="json") for m in again]
            assert _v1_view(got, replay["stored"]) == replay["stored"], replay["key"]
            after = (await store.load(cid, tenant=tenant)).model_dump(mode="json")
            assert after == before, f"replaying {replay['key']!r} wrote something"
            listed_after = [to_jsonable_python(s) for s in await store.list_conversations()]
            assert listed_after == listed_before


# -- the test ------------------------------------------------------------------------------------


def test_fixture_is_small_and_complete() -> None:
    """The fixture covers what v1 can represent (a guard against a thinner regeneration)."""
    total = sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file())
    assert total < 200_000
    calls = [c for convo in LOADS["conversations"].values() for c in convo["tool_calls"]]
    assert {c["status"] for c in calls} == {
        "pending",
        "complete",
        "error",
        "cancelled",
        "interrupted",
    }
    assert {c["result_kind"] for c in calls} == {"json", "content", "error", None}
    parts = [
        p
        for convo in LOADS["conversations"].values()
        for m in convo["messages"]
        for p in m["parts"]
    ]
    assert {p["kind"] for p in parts} == {"text", "file", "thinking", "tool_call", "tool_result"}
    roles = {m["role"] for c in LOADS["conversations"].values() for m in c["messages"]}
    assert roles == {"system", "user", "assistant", "tool"}
    assert {c["tenant"] for c in LOADS["conversations"].values()} == {"acme", "globex", None}
    assert TABLES["append_keys"]["rows"]
    assert TABLES["compactions"]["rows"]
    assert len(TABLES["attachments"]["rows"]) == len(list((FIXTURE / "blobs").rglob("*/*/*")))
    assert any(p.get("raw_arguments") for p in parts)
    assert any(p.get("uri") for p in parts)


async def test_v1_database_upgrades_downgrades_and_upgrades_again(
    empty_url: str, blobs_dir: Path
) -> None:
    await migrate(empty_url, V1)
    await _sync(empty_url, _insert_fixture)

    # (i) at head: loads, attachments and idempotency keys as v1 left them.
    await migrate(empty_url)
    await _assert_store_matches_v1(empty_url, blobs_dir)
    await _assert_keys_replay(empty_url, blobs_dir)

    # (ii) back at 0001: exactly the rows v1 wrote.
    await _sync(empty_url, lambda conn: downgrade_connection(conn, V1))
    contents = await _sync(empty_url, _downgraded_contents)
    expected = await _sync(empty_url, _expected_contents)
    for name in TABLES:
        assert contents[name] == expected[name], f"table {name} changed by the round trip"

    # (iii) up again: still the same conversations.
    await migrate(empty_url)
    await _assert_store_matches_v1(empty_url, blobs_dir)

    # (iv) no drift between the models and the migrated schema.
    assert await _sync(empty_url, _drift) == []
    await _sync(empty_url, lambda conn: command.check(alembic_config(conn)))
    version = await _sync(
        empty_url, lambda c: c.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    )
    assert version == head_revision()
