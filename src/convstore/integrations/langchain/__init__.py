"""LangChain chat message histories stored in convstore: `ConvstoreChatMessageHistory`.

``ConvstoreChatMessageHistory`` is a ``langchain_core.chat_history.BaseChatMessageHistory``
(``aget_messages``, ``aadd_messages``, ``aclear``). Install with
``pip install convstore[langchain]``; this package (and `convstore.integrations.langgraph`,
whose channels hold LangChain messages) are the only ones that import LangChain.

Invariants:

- A history is the convstore conversation whose id is its ``session_id`` (created on the first
  write, with ``tenant=``); each LangChain message is one stored message, in order: canonical
  parts (text, files as blobs, an ``AIMessage``'s tool calls, a ``ToolMessage`` as its call's
  result) and the message's JSON as native record, so ``store.render`` replays the history to
  any provider and ``aget_messages`` gives back messages equal to those added.
- A message whose JSON would not read back equal is refused with `InvalidInputError` and
  nothing of that call is written.
- ``aclear`` deletes the conversation (its blobs become collectable at the next gc).
- The blocking methods (``messages``, ``add_messages``, ``clear``) raise `AsyncOnlyError`.

Its modules:

- ``messages``: LangChain messages ⇄ convstore messages, shared with
  `convstore.integrations.langgraph` (whose channels hold LangChain messages).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from convstore.errors import MissingDependencyError

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage
except ImportError as _missing:
    raise MissingDependencyError(__name__, "langchain-core", "langchain") from _missing

from convstore.errors import AsyncOnlyError, ConversationNotFoundError, InvalidInputError
from convstore.integrations._core.store_handle import OwnsStore, StoreHandle
from convstore.integrations.langchain.messages import append_stored, from_stored, to_stored
from convstore.model import FilePart, Message
from convstore.store import ConversationStore

__all__ = ["ConvstoreChatMessageHistory"]


class ConvstoreChatMessageHistory(OwnsStore, BaseChatMessageHistory):
    """A LangChain chat history kept as a convstore conversation.

    Args:
        session_id: the history, and the id of its conversation (1 to 64 characters).
        store: an open `ConversationStore` to share (never closed by the history).
        url: without ``store``, the database URL of a store the history owns: opened on first
            use, closed by `aclose` (or ``async with``).
        blobs: with ``url``, where that store keeps attachment bytes.
        tenant: the tenant the conversation belongs to.
    """

    def __init__(
        self,
        session_id: str,
        *,
        store: ConversationStore | None = None,
        url: str | None = None,
        blobs: str | None = None,
        tenant: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.tenant = tenant
        self._handle = StoreHandle(store=store, url=url, blobs=blobs)

    async def aget_messages(self) -> list[BaseMessage]:
        """The history's messages, oldest first (none for a history never written)."""
        store = await self._handle.get()
        try:
            conversation = await store.load(self.session_id, tenant=self.tenant)
        except ConversationNotFoundError:
            return []

        async def fetch(part: FilePart) -> bytes:
            return await store.read_attachment(part, tenant=self.tenant)

        return await from_stored(conversation.messages, fetch)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` to the history, all or none."""
        batch: list[Message] = []
        for message in messages:
            if not isinstance(message, BaseMessage):
                raise InvalidInputError(
                    f"a history holds LangChain messages, not {type(message).__name__}"
                )
            stored = to_stored(message)
            if stored is None:
                raise InvalidInputError(
                    f"message {message.id!r} does not survive JSON: "
                    "its fields must be JSON values to be stored"
                )
            batch.append(stored)
        if not batch:
            return
        store = await self._handle.get()
        await store.get_or_create_conversation(self.session_id, tenant=self.tenant)
        await append_stored(store, self.session_id, batch, tenant=self.tenant)

    async def aclear(self) -> None:
        """Delete the history (its conversation); a history never written stays empty."""
        store = await self._handle.get()
        with contextlib.suppress(ConversationNotFoundError):
            await store.delete_conversation(self.session_id, tenant=self.tenant)

    # -- the blocking API -----------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override, unused-ignore]
        """Not available: `AsyncOnlyError` (use ``await history.aget_messages()``)."""
        raise AsyncOnlyError(
            "ConvstoreChatMessageHistory is asynchronous: await aget_messages(), not .messages"
        )

    def add_message(self, message: BaseMessage) -> None:
        """Not available: `AsyncOnlyError` (use ``aadd_messages``)."""
        raise AsyncOnlyError(
            "ConvstoreChatMessageHistory is asynchronous: await aadd_messages([...])"
        )

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Not available: `AsyncOnlyError` (use ``aadd_messages``)."""
        raise AsyncOnlyError(
            "ConvstoreChatMessageHistory is asynchronous: await aadd_messages([...])"
        )

    def clear(self) -> None:
        """Not available: `AsyncOnlyError` (use ``aclear``)."""
        raise AsyncOnlyError("ConvstoreChatMessageHistory is asynchronous: await aclear()")
