"""An append that races ``erase --now`` leaves no bytes behind past the next gc (issue 32, 9).

The race is forced, not timed: the append's blob put is wrapped so that the erase (with
``now=True``, which collects what it released) runs after the bytes are stored and before the
append's transaction, which then finds the conversation gone. Before the fix those bytes were
young and referenced by nothing, so ``erase --now`` and the next gc both kept them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from convstore import ConversationStore, FilePart, Message
from convstore.errors import ConversationNotFoundError
from convstore.store import collect_garbage
from convstore.store.append import appending
from convstore.store.attachments import namespace_of
from tests.support.images import noise_png

RACED = noise_png(51, 32, 32)


async def test_an_append_racing_an_erase_leaves_no_bytes(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = await store.create_conversation(tenant="t-race")
    await store.append(conv.id, [Message.user("hello")], tenant="t-race")
    original = appending.store_files

    async def then_erase(blobs: Any, messages: Sequence[Message]) -> Any:
        stored = await original(blobs, messages)
        await store.erase_tenant("t-race", now=True)
        return stored

    monkeypatch.setattr(appending, "store_files", then_erase)
    with pytest.raises(ConversationNotFoundError):
        await store.append(
            conv.id, [Message.user("late", FilePart.from_bytes(RACED))], tenant="t-race"
        )
    monkeypatch.undo()
    sha = hashlib.sha256(RACED).hexdigest()
    blobs = store.blob_store.namespace(namespace_of(store.dedupe, "t-race"))
    assert await blobs.exists(sha)  # the put happened; the rows did not
    report = await collect_garbage(store)  # the default grace: the bytes are seconds old
    assert any(sha in deleted for deleted in report.deleted)
    assert not await blobs.exists(sha)
