"""`MessageTree`: the shape of a conversation's history, without the messages' contents.

What a chat UI needs to draw branches as people know them (ChatGPT's "< 2/3 >" arrows): each
message's parent, its siblings, the tips, and the newest tip below any message. Returned by
`ConversationStore.tree`.

Invariants:

- A child is always stored after its parent, so its seq is larger; the newest message below
  any message (the largest seq of its subtree) is therefore a tip.
- Siblings are ordered by seq (the order they were written: the original answer first, then
  each regeneration or edit); roots are siblings of one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from convstore.model.roles import Role

__all__ = ["MessageTree", "TreeNode"]


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One message's place in the tree."""

    seq: int
    parent_seq: int | None
    """The message before it on its path (``None``: a root)."""
    role: Role
    created_at: datetime


@dataclass(frozen=True)
class MessageTree:
    """Every message's place in a conversation's tree, and the stored head."""

    nodes: tuple[TreeNode, ...]
    """By seq."""
    head_seq: int | None
    """The stored head (the active path's end); ``None`` when the conversation is empty."""
    _children: dict[int | None, list[int]] = field(init=False, repr=False, compare=False)
    _nodes: dict[int, TreeNode] = field(init=False, repr=False, compare=False)
    _newest: dict[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        children: dict[int | None, list[int]] = {}
        by_seq: dict[int, TreeNode] = {}
        for node in self.nodes:
            by_seq[node.seq] = node
            children.setdefault(node.parent_seq, []).append(node.seq)
        newest: dict[int, int] = {}
        # Children have larger seqs than parents: one pass from the newest down folds each
        # subtree's largest seq into its parent.
        for node in reversed(self.nodes):
            top = newest.setdefault(node.seq, node.seq)
            if node.parent_seq is not None and newest.get(node.parent_seq, 0) < top:
                newest[node.parent_seq] = top
        object.__setattr__(self, "_children", children)
        object.__setattr__(self, "_nodes", by_seq)
        object.__setattr__(self, "_newest", newest)

    def __contains__(self, seq: object) -> bool:
        return seq in self._nodes

    def node(self, seq: int) -> TreeNode:
        """The node of message ``seq`` (`KeyError` when there is none)."""
        return self._nodes[seq]

    def children(self, seq: int | None) -> list[int]:
        """The seqs whose parent is ``seq`` (``None``: the roots), oldest first."""
        return list(self._children.get(seq, ()))

    def siblings(self, seq: int) -> list[int]:
        """``seq`` and the other children of its parent, oldest first."""
        return self.children(self._nodes[seq].parent_seq)

    def tips(self) -> list[int]:
        """The seqs no message follows, oldest first."""
        return [node.seq for node in self.nodes if node.seq not in self._children]

    def newest_tip(self, seq: int) -> int:
        """The newest message below ``seq`` (``seq`` itself when nothing follows it)."""
        if seq not in self._nodes:
            raise KeyError(seq)
        return self._newest[seq]

    def path(self, seq: int) -> list[int]:
        """The seqs from the root to ``seq``, in order."""
        found: list[int] = []
        at: int | None = seq
        while at is not None:
            found.append(at)
            at = self._nodes[at].parent_seq
        found.reverse()
        return found
