"""The store an integration writes to: one it was handed, or one it owns on a URL.

Every integration takes ``store=`` (an open `ConversationStore` the application shares and
closes) or ``url=`` (the integration opens its own store on first use and closes it in
`StoreHandle.close`). Exactly one of the two is given.
"""

from __future__ import annotations

import asyncio

from convstore.errors import InvalidInputError
from convstore.store import ConversationStore

__all__ = ["StoreHandle"]


class StoreHandle:
    """A shared store, or a store opened lazily on a URL and owned by the handle."""

    def __init__(
        self,
        *,
        store: ConversationStore | None,
        url: str | None,
        blobs: str | None = None,
    ) -> None:
        """Keep ``store``, or remember ``url`` (and ``blobs``) to open one on first use."""
        if (store is None) == (url is None):
            raise InvalidInputError("pass exactly one of store= and url=")
        self._store = store
        self._url = url
        self._blobs = blobs
        self._owned: ConversationStore | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> ConversationStore:
        """The store, opening the owned one on first use (once, even under concurrent callers)."""
        if self._store is not None:
            return self._store
        if self._owned is not None:
            return self._owned
        async with self._lock:
            if self._owned is None:
                assert self._url is not None
                store = ConversationStore(self._url, blobs=self._blobs)
                await store.open()
                self._owned = store
            return self._owned

    async def close(self) -> None:
        """Close the owned store, if one was opened; a shared store is left to its owner."""
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()
