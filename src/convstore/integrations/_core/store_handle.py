"""The store an integration writes to: one it was handed, or one shared per URL.

Every integration takes ``store=`` (an open `ConversationStore` the application shares and
closes) or ``url=``. With ``url=`` the integration leases a store from a process-wide,
reference-counted registry, so twenty sessions or services on one URL are one store (one
writer connection, one reader pool, one driver thread), not twenty:

- `StoreHandle` leases an async store per (event loop, url, blobs): a store is bound to the
  loop it was opened on, so handles used on different loops get different stores. It is opened
  by the first lease on that loop and closed when the last lease is released (`close`).
- `OwnsStore` gives an integration object holding a `StoreHandle` its lifetime: ``async with``
  leases the store, ``aclose`` gives it back.
- `ThreadedStoreHandle` is the same choice for integrations called from whatever loop or thread
  the framework runs them on: a shared store is used on the caller's loop; a URL's store is a
  `SyncStoreLease`'d blocking facade whose async store the work runs on, on its own thread.
- `SyncStoreLease` leases a blocking facade (`convstore.sync.SyncConversationStore`: its own loop
  thread) per (url, blobs), for integrations called from whatever loop or thread the framework
  runs them on. Opened by the first lease, closed (its thread joined) by the last release.

Invariants:

- A handle or lease holds at most one reference, taken on first use and given back by its
  ``close``/``release`` (idempotent); using it again afterwards takes a new one.
- A store whose opening failed is dropped from the registry at once, so the next lease retries.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Self, TypeVar

from convstore.errors import InvalidInputError
from convstore.store import ConversationStore
from convstore.sync import SyncConversationStore

__all__ = ["OwnsStore", "StoreHandle", "SyncStoreLease", "ThreadedStoreHandle"]

_T = TypeVar("_T")

_Key = tuple[str, str | None]
"""(url, blobs): what makes two leased stores the same store."""


@dataclass(eq=False)
class _AsyncShared:
    store: ConversationStore
    opening: asyncio.Task[ConversationStore]
    refs: int = 0


_async_stores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, _AsyncShared]] = (
    weakref.WeakKeyDictionary()
)


def _failed(task: asyncio.Task[ConversationStore]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def _lease_async(key: _Key) -> _AsyncShared:
    loop = asyncio.get_running_loop()
    table = _async_stores.setdefault(loop, {})
    shared = table.get(key)
    if shared is None or _failed(shared.opening):
        store = ConversationStore(key[0], blobs=key[1])
        shared = _AsyncShared(store, loop.create_task(store.open()))
        table[key] = shared
    shared.refs += 1
    try:
        # Shielded: a caller cancelled while the store opens must not cancel it for the others.
        await asyncio.shield(shared.opening)
    except BaseException:
        await _release_async(loop, key, shared)
        raise
    return shared


async def _release_async(loop: asyncio.AbstractEventLoop, key: _Key, shared: _AsyncShared) -> None:
    shared.refs -= 1
    table = _async_stores.get(loop, {})
    if (shared.refs == 0 or _failed(shared.opening)) and table.get(key) is shared:
        del table[key]
    if shared.refs == 0:
        if not shared.opening.done():
            await asyncio.wait({shared.opening})
        await shared.store.close()


class StoreHandle:
    """A shared store, or a store leased on a URL (one per event loop and URL in the process)."""

    def __init__(
        self,
        *,
        store: ConversationStore | None,
        url: str | None,
        blobs: str | None = None,
    ) -> None:
        """Keep ``store``, or remember ``url`` (and ``blobs``) to lease one on first use."""
        if (store is None) == (url is None):
            raise InvalidInputError("pass exactly one of store= and url=")
        self._store = store
        self._key: _Key = ("" if url is None else url, blobs)
        self._leased: tuple[asyncio.AbstractEventLoop, _AsyncShared] | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> ConversationStore:
        """The store, leasing the URL's one on first use (once, even under concurrent callers)."""
        if self._store is not None:
            return self._store
        if self._leased is not None:
            return self._leased[1].store
        async with self._lock:
            if self._leased is None:
                shared = await _lease_async(self._key)
                self._leased = (asyncio.get_running_loop(), shared)
            return self._leased[1].store

    async def close(self) -> None:
        """Give back the leased store (closed with its last lease); a shared one stays open."""
        leased, self._leased = self._leased, None
        if leased is not None:
            await _release_async(leased[0], self._key, leased[1])


class OwnsStore:
    """``async with`` and `aclose` for an integration holding a `StoreHandle` (``_handle``)."""

    _handle: StoreHandle

    async def __aenter__(self) -> Self:
        await self._handle.get()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Give back the store leased on ``url`` (its last user closes it); a shared one stays."""
        await self._handle.close()


@dataclass(eq=False)
class _SyncShared:
    store: SyncConversationStore
    refs: int = 0


_sync_stores: dict[_Key, _SyncShared] = {}
_sync_lock = threading.Lock()


def _release_sync(key: _Key, shared: _SyncShared) -> None:
    with _sync_lock:
        shared.refs -= 1
        last = shared.refs == 0
        if last and _sync_stores.get(key) is shared:
            del _sync_stores[key]
    if last:
        shared.store.close()


class SyncStoreLease:
    """One reference to the process's blocking store on a URL (see the module docstring).

    `acquire` and `release` block (opening may migrate a new SQLite file, closing joins the
    store's thread): call them off the event loop.
    """

    def __init__(self, url: str, blobs: str | None = None) -> None:
        self._key: _Key = (url, blobs)
        self._shared: _SyncShared | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> SyncConversationStore | None:
        """The leased store, or `None` before `acquire` and after `release`."""
        shared = self._shared
        return None if shared is None else shared.store

    def acquire(self) -> SyncConversationStore:
        """The URL's store, open; the first call takes the reference, later ones reuse it."""
        with self._lock:
            if self._shared is not None:
                return self._shared.store
            with _sync_lock:
                shared = _sync_stores.get(self._key)
                if shared is None:
                    url, blobs = self._key
                    shared = _sync_stores[self._key] = _SyncShared(
                        SyncConversationStore(url, blobs=blobs)
                    )
                shared.refs += 1
            try:
                shared.store.open()  # idempotent and thread-safe: the first lease opens it
            except BaseException:
                _release_sync(self._key, shared)
                raise
            self._shared = shared
            return shared.store

    def release(self) -> None:
        """Give the reference back (the last one closes the store); safe to call again."""
        with self._lock:
            shared, self._shared = self._shared, None
        if shared is not None:
            _release_sync(self._key, shared)


class ThreadedStoreHandle:
    """A shared store used on the caller's loop, or a URL's store run on its own thread.

    For integrations whose framework calls them from any event loop or thread (openai-agents'
    ``Runner.run``, ``run_sync``, ``run_streamed``): a leased store is bound to no caller's
    loop, so one handle serves them all.
    """

    def __init__(
        self, *, store: ConversationStore | None, url: str | None, blobs: str | None = None
    ) -> None:
        """Keep ``store``, or remember ``url`` (and ``blobs``) to lease its store on first use."""
        if (store is None) == (url is None):
            raise InvalidInputError("pass exactly one of store= and url=")
        self._store = store
        self._lease = None if url is None else SyncStoreLease(url, blobs)

    async def run(self, work: Callable[[ConversationStore], Awaitable[_T]]) -> _T:
        """``work(store)``'s result: on the caller's loop, or on the leased store's thread."""
        if self._store is not None:
            return await work(self._store)
        lease = self._lease
        assert lease is not None  # one of the two is always set
        owned = lease.store
        if owned is None:
            owned = await asyncio.to_thread(lease.acquire)  # opening may migrate: off the loop

        async def on_store_loop() -> _T:
            return await work(owned.async_store)

        future = asyncio.run_coroutine_threadsafe(on_store_loop(), owned.loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Give back the leased store (its last user closes it); idempotent."""
        if self._lease is not None:
            self._lease.release()
