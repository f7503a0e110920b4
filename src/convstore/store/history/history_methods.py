"""`ConversationStore`'s methods that change a history other than by appending to it.

Undo (`pop`, `truncate`), `fork`, `branches`, `tree`, `switch_branch`, `cancel_tool_calls` and
`compact`. Each checks its arguments, opens one transaction and calls one function of
`convstore.store.history.branches`, `convstore.store.append.writes` or `convstore.store.load.reads`,
as every public method of the store does. Those modules are imported by the methods that use them
(see `convstore.store.conversations.conversation_methods`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convstore.limits import check_seq, check_text, check_title
from convstore.store import _arguments
from convstore.store._connection import StoreConnection

if TYPE_CHECKING:
    from convstore.db.tx import Tx
    from convstore.model import Branch, Compaction, Conversation, Message
    from convstore.model.tree import MessageTree

__all__ = ["HistoryMethods"]


class HistoryMethods(StoreConnection):
    """Undo, fork, branches, cancelling pending calls and compaction."""

    async def pop(
        self,
        conversation_id: str,
        *,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> Message:
        """Remove the newest message of the active path and return it.

        Popping a tool result makes its call unanswered again; popping the assistant message
        that made calls removes them. A message other branches run through is kept for them
        (only the head moves). An empty path raises `InvalidInputError`.
        """
        from convstore.store.history import branches

        self._check_ref(conversation_id, tenant)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: branches.pop(tx, conversation_id, tenant, expected_revision, now)
        )

    async def truncate(
        self,
        conversation_id: str,
        *,
        after_seq: int,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> list[Message]:
        """Pop every message after ``after_seq`` on the active path (``0``: all of them).

        Returns the removed messages, newest first.
        """
        from convstore.store.history import branches

        self._check_ref(conversation_id, tenant)
        check_seq(after_seq, "after_seq", minimum=0)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: branches.truncate(
                tx, conversation_id, tenant, after_seq, expected_revision, now
            )
        )

    async def fork(
        self,
        conversation_id: str,
        *,
        at_seq: int,
        title: str | None = None,
        tenant: str | None = None,
    ) -> Conversation:
        """A new conversation whose history is this one's active path up to ``at_seq``.

        Messages keep their ``seq`` and ``id``; attachments are shared by hash, never copied.
        Returns the new conversation's header (no messages loaded).
        """
        from convstore.store.history import branches

        self._check_ref(conversation_id, tenant)
        check_seq(at_seq, "at_seq")
        check_title(title)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: branches.fork(tx, conversation_id, tenant, at_seq, title, now)
        )

    async def branches(self, conversation_id: str, *, tenant: str | None = None) -> list[Branch]:
        """The tips of the conversation's message tree, by ``head_seq``; the active one marked."""
        from convstore.store.load import reads

        self._check_ref(conversation_id, tenant)
        return await self._backend.read(lambda tx: reads.branches(tx, conversation_id, tenant))

    async def tree(self, conversation_id: str, *, tenant: str | None = None) -> MessageTree:
        """The shape of the conversation's history: each message's parent, and the head.

        What a UI needs for sibling arrows and branch lists (`MessageTree.siblings`,
        `MessageTree.newest_tip`) in one read of four small columns, no message decoded.
        """
        from convstore.store.load import reads

        self._check_ref(conversation_id, tenant)
        return await self._backend.read(lambda tx: reads.message_tree(tx, conversation_id, tenant))

    async def switch_branch(
        self,
        conversation_id: str,
        *,
        head_seq: int,
        tenant: str | None = None,
        expected_revision: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Make ``head_seq`` the head: ``load`` then returns the path root → ``head_seq``.

        ``metadata``, when given, replaces the conversation's metadata in the same transaction.
        """
        from convstore.store.conversations import headers
        from convstore.store.history import branches

        self._check_ref(conversation_id, tenant)
        check_seq(head_seq, "head_seq")
        now = _arguments.now()
        also = None
        if metadata is not None:
            checked = _arguments.metadata_object(metadata)
            also = headers.metadata_setter(conversation_id, checked, now)

        def switch(tx: Tx) -> None:
            branches.switch_branch(tx, conversation_id, tenant, head_seq, expected_revision, now)
            if also is not None:
                also(tx)

        await self._backend.write(switch)

    async def cancel_tool_calls(
        self,
        conversation_id: str,
        *,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> list[str]:
        """Move every pending call of the active path to ``cancelled``; the ids it cancelled."""
        from convstore.store.append import writes

        self._check_ref(conversation_id, tenant)
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: writes.cancel_pending(tx, conversation_id, tenant, now, expected_revision)
        )

    async def compact(
        self,
        conversation_id: str,
        *,
        through_seq: int,
        summary: str,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> Compaction:
        """Record a summary standing in for messages up to ``through_seq`` when rendering.

        Non-destructive: every message stays stored and loadable.
        """
        from convstore.store.append import writes

        self._check_ref(conversation_id, tenant)
        check_seq(through_seq, "through_seq", minimum=0)
        check_text(summary, "summary")
        now = _arguments.now()
        return await self._backend.write(
            lambda tx: writes.compact(
                tx,
                conversation_id,
                tenant,
                through_seq,
                summary,
                now,
                expected_revision=expected_revision,
            )
        )
