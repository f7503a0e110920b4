"""Writing one imported conversation tree: all of it in one transaction, or nothing.

The public `ConversationStore.append` writes one path segment per transaction; an export's
tree needs many (one per branch tip), and a failure between them would leave part of a
conversation. So the tree goes through the store's one operation for whole trees,
`convstore.store.append.tree_writes.write_tree`: the header and every message checked as
``create_conversation`` and ``append`` check them, files stored first (assets streamed from
the export) in the tenant's own namespace, the rows in one transaction, retried when garbage
collection races the files. Each path segment is then written by the store's own append step
(`convstore.store.append.writes.append_messages`, through `TreeBlobs.plan`), so nothing here writes
a row of its own and nothing in an export can name another conversation, tenant or namespace.

Invariants:

- Messages whose id the conversation already holds are skipped, so re-importing an export
  writes nothing and a newer export of the same conversation adds only its new messages,
  under the parents they had. The head moves to the export's active node only when
  something was written.
- Times come from the export where it has them (the importers keep them as ``created_at`` in
  the conversation's metadata and each message's ``provider_details``): a conversation this
  import creates gets the export's creation time, so the list orders imported history as
  the product did, and each message written gets its own (`AppendPlan.created_at`). Nothing
  is dated after the import, and ``updated_at`` is the import's time: retention
  (`convstore.store.maintenance._prune`) counts from the last write to this store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from convstore.db.tx import Tx
from convstore.model import Message
from convstore.store.append import header_lock, writes
from convstore.store.append.tree_writes import TreeBlobs, TreeHeader
from convstore.store.append.tree_writes import write_tree as write_checked_tree
from convstore.store.attachments import BlobContext
from convstore.store.conversations import headers
from convstore.store.history import branches
from convstore.store.load import reads

from ._tree import ConversationTree, in_tree_order

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["Written", "write_tree"]


@dataclass(frozen=True, slots=True)
class Written:
    created: bool
    messages: int
    present: int
    attachments: int


@dataclass(frozen=True, slots=True)
class _Entry:
    message: Message
    parent_id: str | None  # the id of the message it follows


def _entries(tree: ConversationTree) -> tuple[list[_Entry], str | None]:
    """Messages in tree order with the id each follows; the id the head should end at."""
    last_of: dict[str, str] = {}
    entries: list[_Entry] = []
    for node in in_tree_order(tree):
        before = last_of.get(node.parent) if node.parent is not None else None
        for message in node.messages:
            assert message.id is not None  # importers give every message its stable id
            entries.append(_Entry(message, before))
            before = message.id
        if before is not None:
            last_of[node.key] = before
    head = last_of.get(tree.head) if tree.head is not None else None
    return entries, head


async def write_tree(
    store: ConversationStore, tree: ConversationTree, tenant: str | None
) -> Written:
    """Store ``tree`` (what is not stored yet) in one transaction."""
    entries, head_id = _entries(tree)
    header = TreeHeader(id=tree.id, tenant=tenant, title=tree.title, metadata=tree.metadata)

    def write(tx: Tx, stored: list[Message], blobs: TreeBlobs) -> Written:
        return _write(tx, _Target(tree, tenant, head_id, blobs), entries, stored)

    return await write_checked_tree(
        BlobContext.of(store), header, [e.message for e in entries], write
    )


@dataclass(frozen=True, slots=True)
class _Target:
    tree: ConversationTree
    tenant: str | None
    head_id: str | None
    blobs: TreeBlobs
    """What this attempt stored, and its time."""


def _write(tx: Tx, target: _Target, entries: list[_Entry], stored: Sequence[Message]) -> Written:
    tree, tenant, head_id, blobs = target.tree, target.tenant, target.head_id, target.blobs
    now = blobs.now
    cid = tree.id
    began = _source_time(tree.metadata, now) or now
    # A message the export gives no time (a placeholder node) takes the one it follows.
    times: dict[str, datetime] = {}
    for entry in entries:
        assert entry.message.id is not None
        own = _source_time(entry.message.provider_details, now)
        times[entry.message.id] = own or times.get(entry.parent_id or "", began)
    # Proves the id is free or this tenant's (`ConversationNotFoundError` otherwise). A new
    # conversation is dated from the export but updated now, even when it has no messages.
    _, created = headers.create_if_absent(
        tx, cid, tenant, tree.title, tree.metadata, now, created_at=began
    )
    held = [seq for seq, _parent, _role, _created in reads.tree(tx, cid)]
    seqs = {m.id: m.seq for m in reads.messages_at(tx, cid, held) if m.id and m.seq}
    chain: list[Message] = []
    chain_parent: str | None = None
    written = files = 0

    def flush() -> None:
        nonlocal written, files
        if not chain:
            return
        parent_seq = seqs[chain_parent] if chain_parent is not None else None
        if parent_seq is None:
            lock = header_lock.lock(tx, cid, tenant, None)
            if lock.head_seq is not None:
                # A second root: the batch must follow nothing, so the path is emptied first.
                branches.move_head(tx, lock, None, now)
                header_lock.advance(tx, lock, now)
        plan = blobs.plan(
            tenant,
            list(chain),
            conversation_id=cid,
            on_conflict="keep-first",
            parent_seq=parent_seq,
            created_at=[times[m.id or ""] for m in chain],
        )
        for message in writes.append_messages(tx, plan):
            assert message.id is not None
            assert message.seq is not None
            seqs[message.id] = message.seq
        written += len(chain)
        files += sum(f.attachment is not None for m in chain for f in m.files)
        chain.clear()

    present = 0
    for entry, message in zip(entries, stored, strict=True):
        assert message.id is not None
        if message.id in seqs:
            present += 1
            continue
        if not chain or entry.parent_id != chain[-1].id:
            flush()
            chain_parent = entry.parent_id
        chain.append(message)
    flush()
    head = seqs.get(head_id) if written and head_id is not None else None
    # Usually the last path written ends at the head already (see `in_tree_order`).
    if head is not None and header_lock.lock(tx, cid, tenant, None).head_seq != head:
        branches.switch_branch(tx, cid, tenant, head, None, now)
    return Written(created=created, messages=written, present=present, attachments=files)


def _source_time(details: dict[str, Any] | None, now: datetime) -> datetime | None:
    """The export's ``created_at`` in ``details`` (never later than ``now``), if it has one."""
    value = (details or {}).get("created_at")
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return min(when, now) if when.tzinfo is not None else None
