"""openai-agents sessions stored in convstore: `ConvstoreSession`.

``ConvstoreSession`` implements the openai-agents ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``, ``session_settings``, and the ``wrapper``
keyword the runner passes to sessions that accept it). Install with
``pip install convstore[openai-agents]``; this package is the only one that imports ``agents``.

Invariants:

- One session item is one stored message of the conversation whose id is the session id
  (created on the first write, so ``store.load(session_id)`` works).
- Items come back exactly as added (JSON equality): the SDK fingerprints items to rewind
  retries. The item is kept as the message's `NativeRecord` (format ``openai-agents``); every
  inline ``data:`` URL that becomes a canonical file (``input_image``, ``input_file``, a
  computer screenshot, in messages and tool outputs) is cut out of the record and its bytes
  stored once as a blob, then put back as the same data URL on read. Image bytes added through
  a session never reach the database.
- The canonical parts drive everything else: ``function_call`` / ``function_call_output``
  (and computer and custom tool calls) are tool calls and results, so tool lifecycles,
  ``store.render`` to any other provider, ``fork`` and ``compact`` work; reasoning items are
  thinking parts; items with no canonical form (hosted tool calls, compaction, references)
  are assistant messages with no parts, kept for the SDK only.
- The session refuses nothing a list would keep: a repeated call id (a replayed turn) is
  stored with its record and no second canonical call, and a second, different output for a
  call is kept as history while the call keeps its first result (``on_conflict="keep-first"``).
- ``get_items`` and ``pop_item`` read the stored items themselves (`ConversationStore.load_native`:
  one JSON column per message); only from the first message whose record is missing or had
  bytes cut out do they take the typed path, which finds those files.
- Sessions opened with ``url=`` share one store per URL in the process (a blocking
  `convstore.sync.SyncConversationStore` on a background loop thread, leased from
  `convstore.integrations._core.store_handle`), so they work from any event loop or thread the
  SDK runs them on (``Runner.run_sync`` makes its own loop); ``close()`` gives the lease back and is
  synchronous like ``SQLiteSession.close()``; the last session's closes the store. A session
  given ``store=`` uses that open async store on the caller's loop and never closes it.
- Writes (``add_items``, ``pop_item``, ``clear_session``) run to completion even when the
  caller is cancelled, which is then re-raised: the outcome of a mutation is never unknown.

Its modules:

- ``_items``: session items ⇄ canonical messages (framework-free: no ``agents`` import).
- ``_reads``: ``get_items`` and ``pop_item`` read from the stored records, the typed path only
  where a record is missing or had bytes cut out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from convstore.errors import MissingDependencyError

try:
    from agents.memory.session_settings import SessionSettings, coerce_session_settings
except ImportError as _missing:
    raise MissingDependencyError(__name__, "openai-agents", "openai-agents") from _missing

from convstore.db import DEFAULT_URL
from convstore.errors import (
    ConversationNotFoundError,
    InvalidInputError,
    ToolCallConflictError,
)
from convstore.integrations._core.store_handle import ThreadedStoreHandle
from convstore.integrations.openai_agents._items import (
    NATIVE_FORMAT,
    Item,
    first_calls_only,
    to_message,
)
from convstore.integrations.openai_agents._reads import pop_newest, read_items
from convstore.model import Message
from convstore.store import ConversationStore

__all__ = ["NATIVE_FORMAT", "ConvstoreSession", "TenantResolver"]

TenantResolver = Callable[[Any], str | None]
"""Given a run's context object (``wrapper.context``), the tenant its session belongs to."""

_T = TypeVar("_T")


class ConvstoreSession:
    """An openai-agents ``Session`` whose history is a convstore conversation.

    Args:
        session_id: the session, and the id of its conversation (1 to 64 characters).
        store: an open async `ConversationStore` to share (used on the caller's event loop,
            never closed by the session).
        url: without ``store``, the database URL whose store the session leases: one store per
            URL in the process, shared by every session on it, opened on first use; `close`
            gives it back (the last session's closes it). Default: convstore's default SQLite
            file.
        tenant: the tenant the conversation belongs to; or a function of the run context
            (``wrapper.context``) returning it, for one session object shared by tenants.
        session_settings: ``SessionSettings`` (or a dict of its fields); ``limit`` is the
            default of ``get_items``.
    """

    def __init__(
        self,
        session_id: str,
        store: ConversationStore | None = None,
        url: str | None = None,
        tenant: str | TenantResolver | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if store is not None and url is not None:
            raise InvalidInputError("pass store= or url=, not both")
        self.session_id = session_id
        if isinstance(session_settings, Mapping):
            session_settings = dict(session_settings)
        self.session_settings: SessionSettings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        # Without either, the default database (as SQLiteSession defaults to its own file).
        self._handle = ThreadedStoreHandle(
            store=store, url=url if store is not None else url or DEFAULT_URL
        )
        self._tenant = tenant

    # -- the Session protocol -------------------------------------------------------------------

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Item]:
        """The session's items, oldest first; with ``limit``, only the newest ``limit``."""
        if limit is None:
            limit = self.session_settings.limit
        if limit is not None and limit == 0:
            return []
        last = limit if limit is not None and limit > 0 else None
        tenant = self._tenant_for(wrapper)

        async def read(store: ConversationStore) -> list[Item]:
            return await read_items(store, self.session_id, tenant, last)

        return await self._handle.run(read)

    async def add_items(self, items: list[Item], *, wrapper: Any = None) -> None:
        """Append items (atomically: all of them or none)."""
        if not items:
            return
        messages = first_calls_only([to_message(item) for item in items], set())
        tenant = self._tenant_for(wrapper)

        async def write(store: ConversationStore) -> None:
            try:
                await _append(store, self.session_id, messages, tenant)
            except ToolCallConflictError:
                # An item repeats a stored call id: that item keeps its record only.
                stored = await store.load(self.session_id, tenant=tenant)
                known = {call.id for call in stored.tool_calls}
                await _append(store, self.session_id, first_calls_only(messages, known), tenant)

        await _complete(self._handle.run(write))

    async def pop_item(self, *, wrapper: Any = None) -> Item | None:
        """Remove the newest item and return it; ``None`` when the session is empty."""
        tenant = self._tenant_for(wrapper)

        async def pop(store: ConversationStore) -> Item | None:
            return await pop_newest(store, self.session_id, tenant)

        return await _complete(self._handle.run(pop))

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Delete every item (the conversation itself; the next write starts it again)."""
        tenant = self._tenant_for(wrapper)

        async def clear(store: ConversationStore) -> None:
            with contextlib.suppress(ConversationNotFoundError):
                await store.delete_conversation(self.session_id, tenant=tenant)

        await _complete(self._handle.run(clear))

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Give back the store leased on ``url`` (the last session on it closes it); idempotent."""
        self._handle.close()

    async def __aenter__(self) -> ConvstoreSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------------

    def _tenant_for(self, wrapper: Any) -> str | None:
        if not callable(self._tenant):
            return self._tenant
        if wrapper is None:
            raise InvalidInputError(
                "this session resolves its tenant from the run context: "
                "call it through the Runner, or pass wrapper="
            )
        return self._tenant(wrapper.context)


async def _append(
    store: ConversationStore, session_id: str, messages: list[Message], tenant: str | None
) -> None:
    # keep-first: a second, different output for a call is kept as history, as a list-backed
    # session would keep it, instead of refusing the batch.
    try:
        await store.append(session_id, messages, tenant=tenant, on_conflict="keep-first")
    except ConversationNotFoundError:
        await store.get_or_create_conversation(session_id, tenant=tenant)
        await store.append(session_id, messages, tenant=tenant, on_conflict="keep-first")


async def _complete(operation: Awaitable[_T]) -> _T:
    """Await a write to its end even if the caller is cancelled meanwhile; then re-raise."""
    task = asyncio.ensure_future(operation)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # the caller is gone: mark the outcome seen, report the cancel
        raise cancelled
    return task.result()
