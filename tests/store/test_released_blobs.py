"""Blobs a tenant erase released go with the next garbage collection, whatever their age.

The default grace period (an hour) would keep them: these tests run every collection with it,
on blobs written moments before, so only the release record can explain a deletion.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from convstore import ConversationStore, FilePart, Message
from convstore.store import collect_garbage
from convstore.store.attachments import namespace_of
from tests.support.images import noise_png

PHOTO = noise_png(21, 96, 80)
SCAN = noise_png(22, 120, 90)


def _label(store: ConversationStore, tenant: str | None, data: bytes) -> str:
    namespace = namespace_of(store.dedupe, tenant)
    digest = hashlib.sha256(data).hexdigest()
    return f"{namespace}:{digest}" if namespace else digest


async def _stored(store: ConversationStore) -> set[str]:
    root = store.blob_store
    return {
        f"{ns}:{info.sha256}" if ns else info.sha256
        for ns in await root.namespaces()
        async for info in root.namespace(ns).iter_blobs()
    }


async def _records(store: ConversationStore, labels: set[str]) -> set[str]:
    """Which of these blobs still have a release record."""
    engine = create_async_engine(store.url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT namespace, sha256 FROM released_blobs"))
            recorded = {f"{ns}:{sha}" if ns else sha for ns, sha in rows}
    finally:
        await engine.dispose()
    return recorded & labels


async def _with_files(store: ConversationStore, tenant: str, *files: bytes) -> str:
    conv = await store.create_conversation(tenant=tenant)
    parts = [FilePart.from_bytes(data, media_type="image/png") for data in files]
    await store.append(conv.id, Message.user("what is in these?", *parts))
    return conv.id


@pytest.fixture
def tenants() -> tuple[str, str]:
    """Two tenant names no other test uses (the PostgreSQL database is shared)."""
    tag = uuid.uuid4().hex[:8]
    return f"erased-{tag}", f"kept-{tag}"


async def test_the_next_gc_deletes_an_erased_tenants_young_blobs(
    store: ConversationStore, tenants: tuple[str, str]
) -> None:
    erased, kept = tenants
    await _with_files(store, erased, PHOTO, SCAN)
    other = await _with_files(store, kept, PHOTO)  # the same bytes, another tenant's namespace
    report = await store.erase_tenant(erased)
    released = {_label(store, erased, PHOTO), _label(store, erased, SCAN)}
    assert set(report.released) == released
    assert report.deleted == []
    assert await _records(store, released) == released
    assert released <= await _stored(store)  # nothing deleted yet

    dry = await collect_garbage(store, dry_run=True)
    assert set(dry.deleted) == released
    assert released <= await _stored(store)

    collected = await collect_garbage(store)
    assert set(collected.deleted) == released
    assert await _stored(store) == {_label(store, kept, PHOTO)}
    assert await _records(store, released) == set()
    loaded = await store.load(other)
    assert await store.read_attachment(loaded.messages[0].files[0]) == PHOTO

    # Nothing released any more: the grace period rules again.
    again = await collect_garbage(store)
    assert again.deleted == []


async def test_erase_now_leaves_nothing_for_the_next_gc(
    store: ConversationStore, tenants: tuple[str, str]
) -> None:
    erased, _ = tenants
    await _with_files(store, erased, SCAN)
    report = await store.erase_tenant(erased, now=True)
    assert report.deleted == [_label(store, erased, SCAN)]
    assert await _records(store, set(report.released)) == set()
    assert await _stored(store) == set()


async def test_a_released_blob_referenced_again_before_gc_is_kept(
    db_url: str, blobs_url: str, tenants: tuple[str, str]
) -> None:
    # One shared namespace: another tenant's later append takes the released bytes back.
    erased, kept = tenants
    async with ConversationStore(
        db_url, blobs=blobs_url, dedupe="global", auto_migrate=True
    ) as store:
        await _with_files(store, erased, PHOTO)
        report = await store.erase_tenant(erased)
        assert report.released == [_label(store, None, PHOTO)]
        later = await _with_files(store, kept, PHOTO)

        collected = await collect_garbage(store)
        assert collected.deleted == []
        assert await _records(store, set(report.released)) == set()
        loaded = await store.load(later)
        assert await store.read_attachment(loaded.messages[0].files[0]) == PHOTO
