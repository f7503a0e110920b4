"""The connections behind `ConversationStore`: the database backend and the blob store.

Invariants:

- A store is usable only between `open` (or ``async with``) and `close`; `_require_open` raises
  `ClosedError` outside it. `close` is idempotent and may race an `open` in progress.
- The blob location is recorded in the database the first time a store opens it; a store
  opened without ``blobs=`` uses the recorded one (see `convstore.store._settings`).
- Blob I/O works with a narrow view of the store (`convstore.store.attachments.BlobContext`:
  backend, blob store, dedupe mode), never the store itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal, Self

from convstore.blobs import BlobStore
from convstore.db import DEFAULT_URL, create_backend, sqlite_path
from convstore.db.backend import Backend
from convstore.errors import ClosedError, InvalidInputError
from convstore.limits import check_count
from convstore.store import _arguments, _settings
from convstore.store._search_index import SearchIndex
from convstore.store.load.message_cache import MessageCache

__all__ = [
    "DEFAULT_BLOB_TIMEOUT",
    "DEFAULT_MAX_ATTACHMENT_SIZE",
    "DEFAULT_MESSAGE_CACHE",
    "StoreConnection",
]

DEFAULT_MAX_ATTACHMENT_SIZE = 20 * 1024 * 1024
DEFAULT_BLOB_TIMEOUT = 30.0
DEFAULT_MESSAGE_CACHE = 10_000


class StoreConnection:
    """One store's database backend, blob store and message cache, opened and closed.

    The arguments are `ConversationStore`'s (documented there).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        blobs: str | None = None,
        max_attachment_size: int = DEFAULT_MAX_ATTACHMENT_SIZE,
        auto_migrate: bool | None = None,
        sqlite_synchronous: Literal["full", "normal"] = "full",
        blob_options: Mapping[str, Any] | None = None,
        dedupe: Literal["tenant", "global"] = "tenant",
        blob_timeout: float | None = DEFAULT_BLOB_TIMEOUT,
        message_cache: int = DEFAULT_MESSAGE_CACHE,
    ) -> None:
        if dedupe not in ("tenant", "global"):
            raise InvalidInputError('dedupe is "tenant" or "global"')
        check_count(message_cache, "message_cache")
        self._messages = MessageCache(message_cache) if message_cache else None
        self.dedupe = dedupe
        self.url = url
        self.blobs_url = blobs if blobs is not None else _arguments.default_blobs(url)
        self._blobs_given = blobs is not None
        self._backend: Backend = create_backend(
            url, auto_migrate=auto_migrate, sqlite_synchronous=sqlite_synchronous
        )
        self._blob_args: dict[str, Any] = {
            "max_size": max_attachment_size,
            "storage_options": blob_options,
            "timeout": blob_timeout,
        }
        self._blobs: BlobStore | None = None
        self._search = SearchIndex(self._backend)
        self.recorded_blobs_url: str | None = None
        """The blob location recorded in the database (resolved to a usable path or URL), once
        open; with ``blobs=`` given it may differ from `blobs_url` (see ``convstore blobs set``)."""

    # -- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> Self:
        """Connect (and create the schema of a new SQLite database).

        The blob location is recorded in the database the first time a store opens it, and a
        store opened without ``blobs=`` uses the recorded one: `convstore gc` and ``fsck`` find
        the blobs from any directory.
        """
        if self._blobs is None:
            self._search.start()
            blobs = self._blobs = BlobStore(self.blobs_url, **self._blob_args)
            try:
                await self._backend.open()
                recorded = await self._blob_location()
            except BaseException:
                # A close() racing this open may already have taken and closed the blob store.
                if self._blobs is blobs:
                    self._blobs = None
                await blobs.close()
                raise
            if recorded is not None and recorded != self.blobs_url and not self._blobs_given:
                self.blobs_url = recorded
                self._blobs = BlobStore(recorded, **self._blob_args)
                await blobs.close()
        return self

    async def _blob_location(self) -> str | None:
        """The recorded blob location (resolved); records this store's first if there is none."""
        database = sqlite_path(self.url)
        recorded = await self._backend.read(_settings.blob_location)
        if recorded is None and _settings.recordable(self.blobs_url):
            location = _settings.to_record(self.blobs_url, database)
            recorded = await self._backend.write(lambda tx: _settings.record(tx, location))
        self.recorded_blobs_url = (
            _settings.resolve(recorded, database) if recorded is not None else None
        )
        return self.recorded_blobs_url

    async def close(self) -> None:
        """Release connections (idempotent)."""
        blobs, self._blobs = self._blobs, None
        await self._search.close()
        await self._backend.close()
        if blobs is not None:
            await blobs.close()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _check_ref(self, conversation_id: str | None, tenant: str | None) -> None:
        """The preamble of every method that names a conversation.

        The store is open, and the id and tenant are strings every database looks up alike
        (`_arguments.check_ref`).
        """
        self._require_open()
        _arguments.check_ref(conversation_id, tenant)

    def _require_open(self) -> BlobStore:
        if self._blobs is None:
            raise ClosedError("the store is not open: use `async with ConversationStore(...)`")
        return self._blobs

    @property
    def blob_store(self) -> BlobStore:
        """The blob store (open stores only)."""
        return self._require_open()

    @property
    def search_index(self) -> SearchIndex:
        """The deferred search index's upkeep (for maintenance tools and tests)."""
        return self._search

    @property
    def backend(self) -> Backend:
        """The database backend (for maintenance tools and tests)."""
        return self._backend

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the database schema to ``revision``."""
        await self._backend.migrate(revision)
