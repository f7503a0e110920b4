"""A conversation read from an export: its nodes (each one or more messages) as a tree.

Invariants:

- Node keys are the export's ids; a node's messages carry stable ids derived from them, so a
  re-import finds what it already wrote. A node's messages form a chain: the first follows
  the parent node's last message, and the node's children follow its last.
- `in_tree_order` puts parents before children (depth first, siblings in export order, except
  that the sibling leading to the head comes last, so the last path written ends at the head
  and no move of the head is needed after it) and refuses a cycle: `ConversationShapeError`,
  and the conversation is not written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from convstore.model import Message

__all__ = ["ConversationShapeError", "ConversationTree", "Node", "add_keyed", "in_tree_order"]


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


def add_keyed(
    tree: ConversationTree,
    nodes: dict[str, Any],
    *,
    parent_key: str,
    head: Any,
    what: str,
    messages: Callable[[str, dict[str, Any]], list[Message]],
    unmapped: Counter[str],
) -> None:
    """The nodes of an export's ``{key: node}`` map, and the head when it names one of them.

    A node's parent key is its ``parent_key`` field (when a string); a value that is not an
    object is no node, counted in ``unmapped`` as ``what``.
    """
    for key, raw in nodes.items():
        if not isinstance(raw, dict):
            unmapped[what] += 1
            continue
        parent = raw.get(parent_key)
        tree.nodes.append(
            Node(key, parent if isinstance(parent, str) else None, messages(key, raw))
        )
    tree.head = head if isinstance(head, str) and head in nodes else None


def in_tree_order(tree: ConversationTree) -> list[Node]:
    """The nodes, parents before children; a parent the export lacks makes a root."""
    by_key = {n.key: n for n in tree.nodes}
    children: dict[str | None, list[Node]] = {}
    for node in tree.nodes:
        parent = node.parent if node.parent in by_key and node.parent != node.key else None
        children.setdefault(parent, []).append(node)
    on_head_path: set[str] = set()
    key = tree.head
    while key is not None and key in by_key and key not in on_head_path:
        on_head_path.add(key)
        key = by_key[key].parent

    def pushed(kids: list[Node]) -> list[Node]:
        """``kids`` in the order to push them: popped in export order, the head's side last."""
        last = [k for k in kids if k.key in on_head_path]
        return [*last, *reversed([k for k in kids if k.key not in on_head_path])]

    ordered: list[Node] = []
    stack = pushed(children.get(None, []))
    while stack:
        node = stack.pop()
        ordered.append(node)
        stack.extend(pushed(children.get(node.key, [])))
    if len(ordered) != len(tree.nodes):
        raise ConversationShapeError(
            f"{len(tree.nodes) - len(ordered)} node(s) form a cycle of parents"
        )
    return ordered
