"""Export -> erase -> import: a tenant's data leaves whole, is erased fully, comes back exactly.

Every check scans the whole database (every table the database has, not only the ones the
schema module names) and the whole blob storage, before and after.
"""

from __future__ import annotations

import base64
import json
import uuid
import zipfile
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import (
    ContentOutput,
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    NativeRecord,
    TextPart,
    ToolCallPart,
    Usage,
)
from convstore.db.search_ddl import SEARCH_PREFIXES
from convstore.errors import ConversationNotFoundError, InvalidInputError, MalformedExportError
from convstore.imports import import_file
from convstore.store import collect_garbage
from convstore.store.attachments import namespace_of
from convstore.store.checkpoints import ChannelValue, PendingWrite
from convstore.store.transfer.documents import conversation_document
from tests.support.images import noise_png
from tests.support.postgres import PostgresCluster

MARKER = "acmesecretmarker"
"""A word only the erased tenant's data holds: no table may hold it after the erase."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Two new empty databases: the source, and one to restore into."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        tag = uuid.uuid4().hex[:12]
        return cluster.create_database(f"src_{tag}"), cluster.create_database(f"dst_{tag}")
    return (
        f"sqlite+aiosqlite:///{tmp_path / 'source.db'}",
        f"sqlite+aiosqlite:///{tmp_path / 'restored.db'}",
    )


@pytest.fixture
async def source(fresh_urls: tuple[str, str], blobs_url: str) -> AsyncIterator[ConversationStore]:
    async with ConversationStore(fresh_urls[0], blobs=blobs_url, auto_migrate=True) as store:
        yield store


PNG = noise_png(7, 48, 40)
PHOTO = noise_png(8, 64, 64)


async def _seed_acme(store: ConversationStore) -> list[str]:
    """Two conversations of tenant acme with every kind of row a conversation can have."""
    conv = await store.create_conversation(
        title=f"Plans {MARKER}", tenant="acme", metadata={"team": "red", "tier": 2}
    )
    cid = conv.id
    first = await store.append(
        cid,
        [
            Message.system("Be brief."),
            Message.user(f"Look {MARKER}", FilePart.from_bytes(PNG, filename="a.png"), id="u1"),
            Message.assistant(
                ToolCallPart(id="call_1", name="lookup", arguments={"q": MARKER}),
                ToolCallPart(id="call_2", name="render", arguments={}),
                provider="openai",
                model="gpt-5",
                usage=Usage(input_tokens=120, output_tokens=30),
            ),
            Message.tool_result("call_1", JsonOutput(value={"hits": [1, 2]})),
            Message.tool_result(
                "call_2",
                ContentOutput(parts=[TextPart(text="chart"), FilePart.from_bytes(PHOTO)]),
            ),
            Message.assistant(
                f"Done {MARKER}", native=NativeRecord(format="app", data={"k": [MARKER, 1.5]})
            ),
        ],
        tenant="acme",
    )
    user_seq = first[1].seq
    assert user_seq is not None
    # A regeneration: a second branch from the user turn; then back to the first one.
    regen = await store.append(
        cid, [Message.assistant(f"Other {MARKER}")], tenant="acme", parent_seq=user_seq
    )
    await store.switch_branch(cid, head_seq=first[-1].seq or 0, tenant="acme")
    # A popped message leaves a gap in the seqs; a pending call stays open at the end.
    await store.append(cid, [Message.user("oops")], tenant="acme")
    await store.pop(cid, tenant="acme")
    await store.append(
        cid,
        [
            Message.user("go on"),
            Message.assistant(ToolCallPart(id="call_3", name="slow", arguments={"n": 1})),
        ],
        tenant="acme",
    )
    await store.update_state(cid, {"step": 3, "notes": {"a": MARKER}}, tenant="acme")
    await store.compact(cid, through_seq=first[3].seq or 0, summary=f"summary {MARKER}")
    assert regen[0].seq is not None

    graph = await store.create_conversation(title="graph", tenant="acme")
    await store.append(graph.id, [Message.user(f"thread {MARKER}")], tenant="acme")
    await store.checkpoints.put(
        graph.id,
        checkpoint_ns="",
        checkpoint_id="1ef0000000000001",
        parent_checkpoint_id=None,
        checkpoint_type="msgpack",
        checkpoint=b"\x81\xa1v\x01" + MARKER.encode(),
        channel_versions={"plan": "1"},
        metadata={"step": 1},
        values=[ChannelValue("plan", "1", "msgpack", MARKER.encode())],
        tenant="acme",
    )
    await store.checkpoints.put_writes(
        graph.id,
        checkpoint_ns="",
        checkpoint_id="1ef0000000000001",
        writes=[PendingWrite("task-1", 0, "plan", "msgpack", b"\x01\x02")],
        tenant="acme",
    )
    return [cid, graph.id]


async def _seed_globex(store: ConversationStore) -> str:
    """Another tenant holding the same image bytes (and its own)."""
    conv = await store.create_conversation(title="Globex", tenant="globex", metadata={"team": "x"})
    await store.append(
        conv.id,
        [
            Message.user("same picture", FilePart.from_bytes(PNG, filename="b.png")),
            Message.assistant("nice", provider="anthropic", model="claude-sonnet-4-5"),
            Message.user("mine", FilePart.from_bytes(noise_png(9, 20, 20))),
        ],
        tenant="globex",
    )
    await store.update_state(conv.id, {"globex": True}, tenant="globex")
    return conv.id


def _cell(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "b64:" + base64.b64encode(bytes(value)).decode()
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return repr(value)


Scan = dict[str, tuple[list[str], list[tuple[str, ...]]]]
INDEX = "index:"


def _tables(scan: Scan) -> Scan:
    """The scan without the search index's tables."""
    return {name: body for name, body in scan.items() if not name.startswith(INDEX)}


async def _found(store: ConversationStore, query: str) -> set[tuple[str, int]]:
    return {(hit.conversation_id, hit.seq) for hit in await store.search(query, limit=100)}


async def _scan(url: str) -> Scan:
    """Every row of every table of the database: table -> (columns, sorted rows).

    The full-text index's own tables (SQLite FTS5: ``search_fts`` and its shadow tables) are
    kept apart under `INDEX`: they are derived, and their layout (rowids, segments) may differ
    for equal data. The search API checks what they answer instead.
    """
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda c: inspect(c).get_table_names())
            out: Scan = {}
            for name in sorted(names):
                result = await conn.execute(text(f'SELECT * FROM "{name}"'))
                columns = list(result.keys())
                rows = sorted(tuple(_cell(v) for v in row) for row in result)
                out[INDEX + name if name.startswith(SEARCH_PREFIXES) else name] = (columns, rows)
    finally:
        await engine.dispose()
    return out


async def _blob_scan(store: ConversationStore) -> dict[tuple[str, str], bytes]:
    root = store.blob_store
    return {
        (ns, info.sha256): await root.namespace(ns).get(info.sha256)
        for ns in await root.namespaces()
        async for info in root.namespace(ns).iter_blobs()
    }


def _without(scan: Scan, conversation_ids: set[str], digests: set[str]) -> Scan:
    """``scan`` less the rows of these conversations and the catalogue rows of these blobs."""
    ids = {repr(c) for c in conversation_ids}
    shas = {repr(d) for d in digests}
    out: Scan = {}
    for name, (columns, rows) in scan.items():
        key = "id" if name == "conversations" else "conversation_id"
        kept = rows
        if key in columns:
            i = columns.index(key)
            kept = [r for r in rows if r[i] not in ids]
        elif name == "attachments":
            i = columns.index("sha256")
            kept = [r for r in rows if r[i] not in shas]
        out[name] = (columns, kept)
    return out


async def _documents(store: ConversationStore, ids: list[str]) -> dict[str, Any]:
    return {cid: conversation_document(await store.load(cid)) for cid in ids}


async def test_export_erase_import_round_trip(
    source: ConversationStore, fresh_urls: tuple[str, str], blobs_url: str, tmp_path: Path
) -> None:
    acme = await _seed_acme(source)
    globex = await _seed_globex(source)
    documents = await _documents(source, acme)
    tips = {cid: await source.branches(cid) for cid in acme}
    assert len(tips[acme[0]]) == 2  # the regeneration is a branch of its own
    rows_before = await _scan(source.url)
    blobs_before = await _blob_scan(source)
    found = await _found(source, MARKER)
    assert {cid for cid, _ in found} == set(acme)
    acme_ns = namespace_of(source.dedupe, "acme")
    acme_blobs = {key for key in blobs_before if key[0] == acme_ns}
    assert {sha for _, sha in acme_blobs} == {_sha(PNG), _sha(PHOTO)}

    out = tmp_path / "acme.zip"
    exported = await source.export(out, tenant="acme")
    assert (exported.conversations, exported.blobs) == (2, 2)
    with zipfile.ZipFile(out) as archive:
        assert sorted(archive.read(f"blobs/{sha}") for _, sha in acme_blobs) == sorted(
            blobs_before[key] for key in acme_blobs
        )
        # Each conversation file is the show --json document (plus its rows).
        manifest = json.loads(archive.read("manifest.json"))
        first = json.loads(archive.read(manifest["conversations"][0]["file"]))
        assert {k: v for k, v in first.items() if k != "archive"} == documents[acme[0]]

    revision = (await source.get_conversation(acme[0])).revision
    report = await source.erase_tenant("acme")
    assert report.conversations == 2
    kept = _without(rows_before, set(acme), set())
    for table in ("messages", "tool_calls", "blob_refs", "compactions", "conversation_tags"):
        assert report.rows[table] == len(rows_before[table][1]) - len(kept[table][1]), table
    assert report.rows["checkpoints"] == 1
    assert report.rows["checkpoint_writes"] == 1
    assert sorted(report.released) == sorted(f"{ns}:{sha}" for ns, sha in acme_blobs)
    for cid in acme:
        with pytest.raises(ConversationNotFoundError):
            await source.load(cid)
    # The next garbage collection takes the released blobs, young as they are (default grace).
    # Its deletion marks (digest and hashed namespace) outlive it by two grace periods, for
    # appends in flight across the deletion; the collection after that purges them.
    collected = await collect_garbage(source)
    assert sorted(collected.deleted) == sorted(f"{ns}:{sha}" for ns, sha in acme_blobs)
    assert await _blob_scan(source) == {
        k: v for k, v in blobs_before.items() if k not in acme_blobs
    }
    marks = await _scan(source.url)
    assert sorted((r[0], r[1]) for r in marks["blob_tombstones"][1]) == sorted(
        (repr(ns), repr(sha)) for ns, sha in acme_blobs
    )
    await collect_garbage(source, grace=timedelta(0))  # as two grace periods later

    rows_after = await _scan(source.url)
    only_acme = {sha for _, sha in acme_blobs} - {sha for ns, sha in blobs_before if ns != acme_ns}
    assert _tables(rows_after) == _without(_tables(rows_before), set(acme), only_acme)
    assert await _found(source, MARKER) == set()  # search entries went with the rows
    assert await _found(source, "same picture") != set()  # and the other tenant's stayed
    traces = [MARKER, acme_ns, *acme]
    for name, (_, rows) in rows_after.items():
        for row in rows:
            assert repr("acme") not in row, (name, row)
            assert not any(t in cell for t in traces for cell in row), (name, row)
    blobs_after = await _blob_scan(source)
    assert blobs_after == {k: v for k, v in blobs_before.items() if k not in acme_blobs}
    assert (await source.load(globex)).title == "Globex"

    # Back into the same database: every row and every blob as it was before the erase.
    restored = await import_file(source, out, "convstore")
    assert restored.imported["conversation"] == 2
    assert await _documents(source, acme) == documents
    assert {cid: await source.branches(cid) for cid in acme} == tips
    assert _tables(await _scan(source.url)) == _tables(rows_before)
    assert await _found(source, MARKER) == found
    assert await _blob_scan(source) == blobs_before
    again = await import_file(source, out, "convstore")  # nothing new the second time
    assert (again.imported["conversation"], again.present["conversation"]) == (0, 2)

    # And into an empty database with other blob storage.
    async with ConversationStore(
        fresh_urls[1], blobs=f"{blobs_url}-restored", auto_migrate=True
    ) as target:
        await import_file(target, out, "convstore")
        assert await _documents(target, acme) == documents
        assert {cid: await target.branches(cid) for cid in acme} == tips
        assert await _found(target, MARKER) == found
        conv = await target.load(acme[0])
        files = [f for m in conv.messages for f in m.files]  # the user's and the result's
        assert [await target.read_attachment(f) for f in files] == [PNG, PHOTO]
        assert (await target.get_conversation(acme[0])).revision == revision


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


async def test_export_of_named_conversations_checks_the_tenant(
    store: ConversationStore, tmp_path: Path
) -> None:
    mine = await store.create_conversation(tenant="t-export-1")
    theirs = await store.create_conversation(tenant="t-export-2")
    await store.append(mine.id, [Message.user("hi")])
    with pytest.raises(ConversationNotFoundError):
        await store.export(tmp_path / "x.zip", tenant="t-export-1", conversation_ids=[theirs.id])
    assert not (tmp_path / "x.zip").exists()
    report = await store.export(tmp_path / "y.zip", tenant="t-export-1", conversation_ids=[mine.id])
    assert (report.conversations, report.messages, report.blobs) == (1, 1, 0)
    with pytest.raises(InvalidInputError, match="cannot write the export"):
        await store.export(tmp_path / "no-such-dir" / "z.zip", tenant="t-export-1")


async def test_a_damaged_archive_is_refused_naming_the_member(
    store: ConversationStore, tmp_path: Path
) -> None:
    conv = await store.create_conversation(tenant="t-damaged")
    await store.append(conv.id, [Message.user("one", FilePart.from_bytes(PNG))])
    good = tmp_path / "good.zip"
    await store.export(good, tenant="t-damaged")
    await store.erase_tenant("t-damaged", now=True)
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.startswith("blobs/"):
                data = data[:-1] + bytes([data[-1] ^ 1])  # one flipped bit
            dst.writestr(item, data)
    with pytest.raises(MalformedExportError, match="blobs/"):
        await import_file(store, damaged, "convstore")
    with pytest.raises(ConversationNotFoundError):  # nothing of it was written
        await store.load(conv.id)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(MalformedExportError):
        await import_file(store, truncated, "convstore")
    with pytest.raises(InvalidInputError):
        await store.erase_tenant("")
