"""The stored tree of a conversation, read back through the public store API only."""

from __future__ import annotations

from dataclasses import dataclass

from convstore import ConversationStore, Message


@dataclass
class StoredTree:
    parents: dict[str, str | None]
    """message id -> the id of the message before it (None: a root)."""
    messages: dict[str, Message]
    tips: set[str]
    """The ids of the messages `branches()` lists."""
    active: list[str]
    """The ids of the active path, root first."""
    revision: str


async def stored_tree(store: ConversationStore, cid: str, tenant: str | None = None) -> StoredTree:
    tips = await store.branches(cid, tenant=tenant)
    parents: dict[str, str | None] = {}
    messages: dict[str, Message] = {}
    tip_ids: set[str] = set()
    for tip in tips:
        path = (await store.load(cid, head_seq=tip.head_seq, tenant=tenant)).messages
        for before, message in zip([None, *path], path, strict=False):
            assert message.id is not None
            parents[message.id] = before.id if before is not None else None
            messages[message.id] = message
        assert path[-1].id is not None
        tip_ids.add(path[-1].id)
    active = await store.load(cid, tenant=tenant)
    return StoredTree(
        parents, messages, tip_ids, [m.id or "" for m in active.messages], active.revision or ""
    )


def path_to(parents: dict[str, str | None], node: str) -> list[str]:
    """The ids root -> ``node``."""
    path = [node]
    while (parent := parents[path[-1]]) is not None:
        path.append(parent)
    return path[::-1]


def leaves(parents: dict[str, str | None]) -> set[str]:
    has_child = {p for p in parents.values() if p is not None}
    return set(parents) - has_child
