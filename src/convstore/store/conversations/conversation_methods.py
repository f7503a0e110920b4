"""`ConversationStore`'s methods on conversations as a whole: their headers and deletion.

Create (`create_conversation`, `get_or_create_conversation`), read (`get_conversation`,
`list_conversations`, and `search` across them: `convstore.store.search`), change
(`update_conversation`, `update_state`) and `delete_conversation`. Each checks its arguments,
opens one transaction and calls one function of `convstore.store.conversations.headers`,
`convstore.store.append.writes`, `convstore.store.load.reads` or `convstore.store.search`.

The modules that build model values are imported by the methods that use them, so a process
that only lists or searches does not load the pydantic models or the write path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convstore.errors import ConversationNotFoundError, ConversationOwnedByAnotherTenantError
from convstore.limits import MAX_LIST_LIMIT, check_count, check_text, check_title
from convstore.store import _arguments, search
from convstore.store._arguments import UNSET
from convstore.store._connection import StoreConnection
from convstore.store.conversations import listing
from convstore.store.conversations.listing import ConversationPage, ConversationSummary
from convstore.store.search import SearchPage

if TYPE_CHECKING:
    from convstore.model import Conversation, Role

__all__ = ["ConversationMethods"]


class ConversationMethods(StoreConnection):
    """Conversation headers: create, read, change, delete."""

    async def create_conversation(
        self,
        *,
        title: str | None = None,
        tenant: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        id: str | None = None,
    ) -> Conversation:
        """A new, empty conversation. ``id`` lets the application choose the id."""
        from convstore.store.conversations import headers

        self._require_open()
        cid, meta = _arguments.new_header(id, title, tenant, metadata)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: headers.insert(tx, cid, tenant, title, meta, now)
        )

    async def get_or_create_conversation(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        tenant: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Conversation:
        """The conversation with this id, created (with ``title``/``metadata``) if absent.

        Race-free: concurrent calls for one id all return the same single conversation. An id
        held by another tenant raises `ConversationOwnedByAnotherTenantError` (every
        integration's thread and session ids come through here).
        """
        from convstore.store.conversations import headers

        self._require_open()
        cid, meta = _arguments.new_header(conversation_id, title, tenant, metadata)
        now = _arguments.now()
        try:
            return await self._backend.write(
                lambda tx: headers.get_or_create(tx, cid, tenant, title, meta, now)
            )
        except ConversationNotFoundError as exc:
            raise ConversationOwnedByAnotherTenantError(cid) from exc

    async def update_conversation(
        self,
        conversation_id: str,
        *,
        title: str | None = UNSET,
        metadata: Mapping[str, Any] | None = UNSET,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> Conversation:
        """Rename a conversation or replace its metadata; arguments left out stay as they are.

        Returns the conversation's header (no messages loaded).
        """
        from convstore.store.conversations import headers

        self._check_ref(conversation_id, tenant)
        changes: dict[str, Any] = {}
        if title is not UNSET:
            check_title(title)
            changes["title"] = title
        if metadata is not UNSET:
            changes["metadata"] = _arguments.metadata_object(metadata)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: headers.update_header(
                tx, conversation_id, tenant, expected_revision, now, **changes
            )
        )

    async def update_state(
        self,
        conversation_id: str,
        patch: Mapping[str, Any],
        *,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> Conversation:
        """Apply an RFC 7396 merge patch to the conversation's state object.

        ``null`` deletes a key, nested objects merge, anything else replaces. Returns the
        header (no messages loaded) with the new ``state`` and ``revision``.
        """
        from convstore.store.conversations import headers

        self._check_ref(conversation_id, tenant)
        checked = _arguments.state_patch(patch)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: headers.update_header(
                tx, conversation_id, tenant, expected_revision, now, state_patch=checked
            )
        )

    async def list_conversations(
        self,
        *,
        tenant: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationPage:
        """Conversations newest first (by creation), ``limit`` at a time.

        Pass ``page[-1].cursor`` (or ``page.next_cursor``) as ``cursor=`` for the next page;
        ``metadata={"k": v}`` keeps conversations whose metadata has all those keys equal.
        """
        self._require_open()
        check_text(tenant, "tenant")
        check_count(limit, "limit", maximum=MAX_LIST_LIMIT)
        wanted = None if metadata is None else _arguments.json_object(metadata, "metadata filter")
        return await self._backend.read(
            lambda tx: listing.list_conversations(tx, tenant, limit, cursor, wanted)
        )

    async def search(
        self,
        query: str,
        *,
        tenant: str | None = None,
        conversation_id: str | None = None,
        roles: Sequence[Role | str] | None = None,
        include_thinking: bool = False,
        limit: int = 20,
        cursor: str | None = None,
    ) -> SearchPage:
        """Messages and conversation titles containing ``query``'s terms, best first.

        ``query``: words, ``"phrases"`` and ``-excluded`` terms, each found as a case-folded
        substring (`convstore.store.search` describes the syntax and what is searched). Pass
        ``page.next_cursor`` as ``cursor=`` (with the same query and filters) for the next page.
        """
        self._require_open()
        request, fingerprint = search.prepare(
            query,
            tenant=tenant,
            conversation_id=conversation_id,
            roles=roles,
            include_thinking=include_thinking,
            limit=limit,
            cursor=cursor,
        )
        dialect = self._backend.dialect_name
        page = await self._backend.read(
            lambda tx: search.run_search(tx, dialect, request, fingerprint)
        )
        if page is None:  # the deferred index lacks rows committed before this search began
            await self._search.catch_up()
            page = await self._backend.read(
                lambda tx: search.run_search(tx, dialect, request, fingerprint, check_pending=False)
            )
        assert page is not None
        return page

    async def delete_conversation(
        self,
        conversation_id: str,
        *,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> None:
        """Delete a conversation and everything in it; its blobs become collectable."""
        from convstore.store.append import writes

        self._check_ref(conversation_id, tenant)
        await self._backend.write(
            lambda tx: writes.delete_conversation(tx, conversation_id, tenant, expected_revision)
        )

    async def get_conversation(
        self, conversation_id: str, *, tenant: str | None = None
    ) -> ConversationSummary:
        """The conversation's header alone (title, metadata, revision, counts), no messages.

        A missing conversation, or one of another tenant, raises `ConversationNotFoundError`.
        """
        self._check_ref(conversation_id, tenant)
        return await self._backend.read(
            lambda tx: listing.get_conversation(tx, conversation_id, tenant)
        )
