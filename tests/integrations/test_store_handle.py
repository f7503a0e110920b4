"""Integrations opened with ``url=`` share one store per URL (and event loop) in a process.

`StoreHandle` is what the pydantic-ai, ADK and LangGraph integrations hold; these tests drive it
the way they do (``get`` on every call, ``close`` once) and check that twenty handles on one URL
are one open store, released by the last one, and that a failed open is not kept.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from convstore import ClosedError, ConvstoreError, Message
from convstore.integrations._core.store_handle import StoreHandle, SyncStoreLease


async def test_handles_on_one_url_share_one_store_until_the_last_closes(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    handles = [StoreHandle(store=None, url=url) for _ in range(20)]
    stores = await asyncio.gather(*(h.get() for h in handles))
    assert len({id(s) for s in stores}) == 1
    other = StoreHandle(store=None, url=f"sqlite+aiosqlite:///{tmp_path / 'other.db'}")
    assert await other.get() is not stores[0]
    store = stores[0]
    conv = await store.create_conversation()
    for handle in handles[:-1]:
        await handle.close()
        await handle.close()  # idempotent: gives back one reference only
    await store.append(conv.id, Message.user("still open"))
    await handles[-1].close()
    with pytest.raises(ClosedError):
        await store.load(conv.id)
    # Used again after closing, a handle leases a store again.
    reopened = await handles[0].get()
    assert (await reopened.load(conv.id)).messages[0].text == "still open"
    await handles[0].close()
    await other.close()


def test_each_event_loop_gets_its_own_store(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'loops.db'}"

    async def use() -> int:
        first, second = StoreHandle(store=None, url=url), StoreHandle(store=None, url=url)
        try:
            store = await first.get()
            assert await second.get() is store
            await store.get_or_create_conversation("c")
            await store.append("c", Message.user("hi"))
            return id(store)
        finally:
            await first.close()
            await second.close()

    assert asyncio.run(use()) != 0
    assert asyncio.run(use()) != 0


async def test_a_store_that_failed_to_open_is_not_kept(tmp_path: Path) -> None:
    broken = tmp_path / "x.db"
    broken.write_bytes(b"not an SQLite database, " * 100)
    handle = StoreHandle(store=None, url=f"sqlite+aiosqlite:///{broken}")
    with pytest.raises(ConvstoreError):
        await handle.get()
    broken.unlink()
    store = await handle.get()  # retried, not the failed store
    await store.create_conversation()
    await handle.close()


def test_blocking_leases_share_one_store_per_url(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sync.db'}"
    leases = [SyncStoreLease(url) for _ in range(5)]
    stores = {id(lease.acquire()) for lease in leases}
    assert len(stores) == 1
    store = leases[0].acquire()
    conv = store.create_conversation()
    for lease in leases[1:]:
        lease.release()
    assert store.load(conv.id).messages == []
    leases[0].release()
    leases[0].release()
    assert store.closed
    assert leases[0].store is None
