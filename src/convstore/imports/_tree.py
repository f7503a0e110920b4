"""A conversation read from an export: its nodes (each one or more messages) as a tree.

Invariants:

- Node keys are the export's ids; a node's messages carry stable ids derived from them, so a
  re-import finds what it already wrote. A node's messages form a chain: the first follows
  the parent node's last message, and the node's children follow its last.
- `in_tree_order` puts parents before children (depth first, siblings in export order) and
  refuses a cycle: `ConversationShapeError`, and the conversation is not written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from convstore.model import Message

__all__ = ["ConversationShapeError", "ConversationTree", "Node", "in_tree_order"]


class ConversationShapeError(Exception):
    """A conversation of an otherwise readable file cannot be stored as a tree (one skipped)."""


@dataclass(slots=True)
class Node:
    key: str
    parent: str | None
    messages: list[Message]


@dataclass(slots=True)
class ConversationTree:
    id: str
    """The stored conversation id (stable: the export's, prefixed by the format)."""
    title: str | None
    metadata: dict[str, Any]
    nodes: list[Node] = field(default_factory=list)
    head: str | None = None
    """The key of the node the active path ends at."""


def in_tree_order(tree: ConversationTree) -> list[Node]:
    """The nodes, parents before children; a parent the export lacks makes a root."""
    by_key = {n.key: n for n in tree.nodes}
    children: dict[str | None, list[Node]] = {}
    for node in tree.nodes:
        parent = node.parent if node.parent in by_key and node.parent != node.key else None
        children.setdefault(parent, []).append(node)
    ordered: list[Node] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        node = stack.pop()
        ordered.append(node)
        stack.extend(reversed(children.get(node.key, [])))
    if len(ordered) != len(tree.nodes):
        raise ConversationShapeError(
            f"{len(tree.nodes) - len(ordered)} node(s) form a cycle of parents"
        )
    return ordered
