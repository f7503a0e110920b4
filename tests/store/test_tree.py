"""`ConversationStore.tree`: parents, siblings, tips and the newest tip below a message."""

from __future__ import annotations

import uuid

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    Message,
    MessageTree,
    Role,
    TreeNode,
)


async def test_a_three_way_regeneration_and_an_edit(store: ConversationStore) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    conv = await store.create_conversation(tenant=tenant)
    cid = conv.id
    await store.append(cid, [Message.system("be brief"), Message.user("Plan a day in Porto.")])
    await store.append(cid, [Message.assistant("Start at Ribeira.")])  # 3
    await store.append(cid, [Message.assistant("Begin at Lello.")], parent_seq=2)  # 4
    await store.append(cid, [Message.assistant("Walk the bridge.")], parent_seq=2)  # 5
    await store.append(cid, [Message.user("And lunch?"), Message.assistant("Bifana.")])  # 6, 7
    # An edit of the question: a sibling of 2, and the head moves to its reply.
    await store.append(
        cid, [Message.user("Plan two days."), Message.assistant("Sure.")], parent_seq=1
    )
    tree = await store.tree(cid, tenant=tenant)

    assert isinstance(tree, MessageTree)
    assert [n.seq for n in tree.nodes] == list(range(1, 10))
    assert tree.head_seq == 9
    assert tree.node(3) == TreeNode(3, 2, Role.ASSISTANT, tree.node(3).created_at)
    assert tree.children(None) == [1]
    assert tree.children(2) == [3, 4, 5]
    assert tree.siblings(4) == [3, 4, 5]
    assert tree.siblings(2) == [2, 8]
    assert tree.siblings(1) == [1]
    assert tree.tips() == [3, 4, 7, 9]
    assert tree.newest_tip(2) == 7
    assert tree.newest_tip(3) == 3
    assert tree.newest_tip(1) == 9
    assert tree.path(7) == [1, 2, 5, 6, 7]
    assert 7 in tree
    assert 99 not in tree
    with pytest.raises(KeyError):
        tree.newest_tip(99)
    # The same shape branches() reports.
    assert sorted(b.head_seq for b in await store.branches(cid, tenant=tenant)) == tree.tips()
    # The stored head is reported as it is, also when it is not a tip.
    await store.switch_branch(cid, head_seq=2, tenant=tenant)
    assert (await store.tree(cid, tenant=tenant)).head_seq == 2


async def test_empty_missing_and_another_tenants(store: ConversationStore) -> None:
    conv = await store.create_conversation(tenant="mine")
    empty = await store.tree(conv.id, tenant="mine")
    assert (empty.nodes, empty.head_seq, empty.tips()) == ((), None, [])
    with pytest.raises(ConversationNotFoundError):
        await store.tree(conv.id, tenant="theirs")
    with pytest.raises(ConversationNotFoundError):
        await store.tree("no-such-conversation")
