"""What store writes hand back beyond the stored values themselves.

Invariant: a result carries the conversation's revision as the write left it, so a caller
that writes with ``expected_revision=`` never needs a second read to learn it.
"""

from __future__ import annotations

from collections.abc import Iterable

from convstore.model import Message

__all__ = ["AppendResult"]


class AppendResult(list[Message]):
    """The messages `ConversationStore.append` stored, plus the conversation's new revision.

    A ``list[Message]`` in every other respect (as `ConversationPage` is a list with a cursor).
    """

    revision: str
    """The conversation's revision after the append: pass it as ``expected_revision=`` to the
    next write. Unchanged when nothing was written (an empty batch, an idempotent replay)."""

    def __init__(self, messages: Iterable[Message] = (), *, revision: str) -> None:
        super().__init__(messages)
        self.revision = revision

    def __repr__(self) -> str:
        return f"AppendResult({list.__repr__(self)}, revision={self.revision!r})"
