"""An id a caller chooses (a LangGraph thread, an agent session) that another tenant holds.

`get_or_create_conversation` is how every integration opens its thread or session; an id held
by another tenant is refused with `ConversationOwnedByAnotherTenantError` (a
`ConversationNotFoundError`, so existing handlers still catch it), naming the id and what to
do, and nothing of the other tenant's conversation is read or changed.
"""

from __future__ import annotations

import uuid

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationOwnedByAnotherTenantError,
    ConversationStore,
    Message,
)


async def test_an_id_held_by_another_tenant_is_refused_clearly(store: ConversationStore) -> None:
    thread = f"lg-thread-{uuid.uuid4().hex[:8]}"
    await store.get_or_create_conversation(thread, tenant="alice", title="alice's")
    await store.append(thread, Message.user("alice's secret"), tenant="alice")
    with pytest.raises(ConversationOwnedByAnotherTenantError) as refused:
        await store.get_or_create_conversation(thread, tenant="mallory")
    assert isinstance(refused.value, ConversationNotFoundError)
    assert str(refused.value).startswith(f"conversation id {thread!r} belongs to another tenant")
    assert "prefix thread or session ids with the tenant" in str(refused.value)
    with pytest.raises(ConversationOwnedByAnotherTenantError):
        await store.get_or_create_conversation(thread, tenant="bob", title="bob's")
    kept = await store.load(thread, tenant="alice")
    assert (kept.title, [m.text for m in kept.messages]) == ("alice's", ["alice's secret"])
    # A read of another tenant's conversation stays a plain, silent not-found.
    with pytest.raises(ConversationNotFoundError) as missing:
        await store.load(thread, tenant="mallory")
    assert type(missing.value) is ConversationNotFoundError
