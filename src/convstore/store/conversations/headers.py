"""Conversation headers: create, get-or-create, rename, metadata and state.

Each operation is a function of one open transaction (``fn(tx)``), like `writes`.

Invariants:

- `get_or_create` is race-free on every database: an insert that does nothing when the id
  exists, then a read, in one transaction; concurrent callers all get the one conversation.
- State changes are RFC 7396 merge patches applied under the conversation's lock, so two
  writers patching different keys both land; ``expected_revision`` turns a read-modify-write
  into a compare-and-set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from convstore.db.mapping import decode_conversation
from convstore.db.statements.conversations import RowAt
from convstore.db.tx import Tx
from convstore.errors import ConversationNotFoundError
from convstore.model import Conversation
from convstore.store._arguments import UNSET
from convstore.store.append.header_lock import Header, lock, new_revision
from convstore.store.conversations.metadata_tags import replace_tags, write_tags
from convstore.store.load.reads import conversation_tenant, header_row

__all__ = [
    "UNSET",
    "create_if_absent",
    "get_or_create",
    "insert",
    "merge_patch",
    "metadata_setter",
    "state_patcher",
    "update_header",
]


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with the RFC 7396 JSON merge ``patch`` applied (neither is modified)."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def _row(
    cid: str,
    tenant: str | None,
    title: str | None,
    metadata: Mapping[str, Any],
    now: datetime,
    tx: Tx,
) -> tuple[Any, ...]:
    codec, stamp = tx.codec, tx.codec.dump_time(now)
    return (cid, tenant, title, codec.dump_json(dict(metadata) or None), 0, stamp, stamp, None,
            None, new_revision(), False)  # fmt: skip


_CREATED, _UPDATED, _REVISION = RowAt.created_at, RowAt.updated_at, RowAt.revision
"""Where `_row` puts the new conversation's creation and update times and its revision."""


def _header(tx: Tx, cid: str, tenant: str | None) -> Conversation:
    return decode_conversation(header_row(tx, cid, tenant), tx.codec, [], [], [])


def insert(
    tx: Tx,
    cid: str,
    tenant: str | None,
    title: str | None,
    metadata: Mapping[str, Any],
    now: datetime,
) -> Conversation:
    """A new conversation (a taken id is a database uniqueness error)."""
    tx.insert_rows(tx.statements.insert_conversation, [_row(cid, tenant, title, metadata, now, tx)])
    write_tags(tx, cid, tenant, tx.codec.dump_time(now), metadata)
    return _header(tx, cid, None)


def get_or_create(
    tx: Tx,
    cid: str,
    tenant: str | None,
    title: str | None,
    metadata: Mapping[str, Any],
    now: datetime,
) -> Conversation:
    """The conversation ``cid``, created first if no conversation has that id."""
    return create_if_absent(tx, cid, tenant, title, metadata, now)[0]


def create_if_absent(
    tx: Tx,
    cid: str,
    tenant: str | None,
    title: str | None,
    metadata: Mapping[str, Any],
    now: datetime,
    *,
    created_at: datetime | None = None,
) -> tuple[Conversation, bool]:
    """The conversation ``cid`` and whether this call created it.

    ``created_at``: an earlier creation time to record (an import's, from the export); the
    new conversation's ``updated_at`` is ``now`` either way, since retention counts from the
    last write to this store.
    """
    row = list(_row(cid, tenant, title, metadata, created_at or now, tx))
    row[_UPDATED] = tx.codec.dump_time(now)
    tx.insert_rows(tx.statements.insert_conversation_if_absent, [tuple(row)])
    conversation = _header(tx, cid, tenant)
    created = conversation.revision == row[_REVISION]
    if created:
        write_tags(tx, cid, tenant, row[_CREATED], metadata)
    return conversation, created


def update_header(
    tx: Tx,
    cid: str,
    tenant: str | None,
    expected_revision: str | None,
    now: datetime,
    *,
    title: Any = UNSET,
    metadata: Any = UNSET,
    state_patch: Any = UNSET,
) -> Conversation:
    """Change the title, replace the metadata or merge-patch the state; the new header."""
    header: Header = lock(tx, cid, tenant, expected_revision)
    codec = tx.codec
    state = codec.load_json(header.state) or {}
    if state_patch is not UNSET:
        state = merge_patch(state, state_patch)
    if metadata is not UNSET:
        replace_tags(tx, cid, header.tenant, header.created_at, metadata)
    tx.execute(
        tx.statements.set_header,
        {
            "cid": cid,
            "title": header.title if title is UNSET else title,
            "metadata": header.metadata
            if metadata is UNSET
            else codec.dump_json(dict(metadata) or None),
            "state": codec.dump_json(state or None),
            "revision": new_revision(),
            "now": codec.dump_time(now),
        },
    )
    return _header(tx, cid, None)


def state_patcher(
    conversation_id: str, patches: Mapping[str, Mapping[str, Any]], now: datetime
) -> Callable[[Tx], None] | None:
    """What an append to ``conversation_id`` runs after its rows for its ``state_patches``.

    Each patched conversation must belong to the appended one's tenant; one that does not is
    reported as missing (`ConversationNotFoundError`), never as another tenant's.
    """
    if not patches:
        return None

    def patch_states(tx: Tx) -> None:
        owner = conversation_tenant(tx, conversation_id)
        for cid, patch in patches.items():
            if conversation_tenant(tx, cid) != owner:
                raise ConversationNotFoundError(cid)
            update_header(tx, cid, owner, None, now, state_patch=patch)

    return patch_states


def metadata_setter(
    cid: str,
    metadata: Mapping[str, Any],
    now: datetime,
    *,
    after: Callable[[Tx], None] | None = None,
) -> Callable[[Tx], None]:
    """What a write to ``cid`` runs last, in its transaction, to replace the metadata too.

    ``after``: a step of the write to run first (an append's state patches). The write has
    locked the header and stored its new revision; that revision stays, so the write's result
    (an append's ``revision``) still names the conversation as it now is.
    """

    def set_metadata(tx: Tx) -> None:
        if after is not None:
            after(tx)
        header = lock(tx, cid, None, None)
        replace_tags(tx, cid, header.tenant, header.created_at, metadata)
        codec = tx.codec
        tx.execute(
            tx.statements.set_header,
            {
                "cid": cid,
                "title": header.title,
                "metadata": codec.dump_json(dict(metadata) or None),
                "state": codec.dump_json(codec.load_json(header.state) or None),
                "revision": header.revision,
                "now": codec.dump_time(now),
            },
        )

    return set_metadata
