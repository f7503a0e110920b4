"""Writing one imported conversation tree: all of it in one transaction, or nothing.

The public `ConversationStore.append` writes one path segment per transaction; an export's
tree needs many (one per branch tip), and a failure between them would leave part of a
conversation. So the segments are written here with the store's own write steps
(`convstore.store.writes.append_messages`, `convstore.store.branches.move_head`) inside one
``backend.write``.

Invariants:

- Files are stored as blobs before the transaction (content addressed: a rolled-back import
  leaves only bytes that the next gc collects), exactly as `append` does.
- Messages whose id the conversation already holds are skipped, so re-importing an export
  writes nothing and a newer export of the same conversation adds only its new messages,
  under the parents they had. The head moves to the export's active node only when
  something was written.
- Every message passes the store's limits (`convstore.message_checks.check_messages`) first.
- Times come from the export where it has them (the importers keep them as ``created_at`` in
  the conversation's metadata and each message's ``provider_details``): a conversation this
  import creates gets the export's creation time, so the list orders imported history as
  the product did, and each message written gets its own. Nothing is dated after the import,
  and ``updated_at`` is the import's time: retention (`convstore.store.prune`) counts from the
  last write to this store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Update, bindparam, update

from convstore.blobs import StoredBlob
from convstore.db import schema
from convstore.errors import BlobStorageError
from convstore.limits import check_json_object, check_text
from convstore.message_checks import check_messages
from convstore.model import Message
from convstore.store import (
    appending,
    arguments,
    branches,
    conversations,
    header_lock,
    reads,
    writes,
)
from convstore.store.attachments import (
    BlobContext,
    attachment_rows,
    namespace_of,
    store_files,
    written_times,
)
from convstore.store.writes import AppendPlan, BlobBeingCollectedError

from ._tree import ConversationTree, in_tree_order

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["Written", "write_tree"]

_COLLECTED_RETRIES: Final = 3


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
    check_text(tree.title, "title")
    check_json_object(tree.metadata, "metadata")
    check_messages([e.message for e in entries], max_attachment_size=store.blob_store.max_size)
    blobs = store.blob_store.namespace(namespace_of(store.dedupe, tenant))
    for attempt in range(_COLLECTED_RETRIES):
        stored, stored_blobs = await store_files(blobs, [e.message for e in entries])
        target = _Target(
            tree=tree,
            tenant=tenant,
            head_id=head_id,
            by_sha={b.sha256: b for b in stored_blobs},
            namespace=blobs.namespace_name,
            now=arguments.now(),
        )

        def write(tx: Any, stored: Sequence[Message] = stored, target: _Target = target) -> Written:
            return _write(tx, target, entries, stored)

        try:
            return await store.backend.write(write)
        except BlobBeingCollectedError as collected:
            if attempt < _COLLECTED_RETRIES - 1:
                # As `append` does: wait for the collection to end, then store the bytes again.
                await appending.wait_for_collection(BlobContext.of(store), collected.blobs)
    raise BlobStorageError(
        f"an attachment of conversation {tree.id!r} was being garbage-collected and could not be "
        "stored again; nothing of it was written: import again"
    )


@dataclass(frozen=True, slots=True)
class _Target:
    tree: ConversationTree
    tenant: str | None
    head_id: str | None
    by_sha: dict[str, StoredBlob]
    """The blobs this import stored, by digest."""
    namespace: str
    now: datetime


def _write(tx: Any, target: _Target, entries: list[_Entry], stored: Sequence[Message]) -> Written:
    tree, tenant, head_id, by_sha = target.tree, target.tenant, target.head_id, target.by_sha
    namespace, now = target.namespace, target.now
    cid = tree.id
    began = _source_time(tree.metadata, now) or now
    # A message the export gives no time (a placeholder node) takes the one it follows.
    times: dict[str, datetime] = {}
    for entry in entries:
        assert entry.message.id is not None
        own = _source_time(entry.message.provider_details, now)
        times[entry.message.id] = own or times.get(entry.parent_id or "", began)
    # Proves the id is free or this tenant's (`ConversationNotFoundError` otherwise).
    conversations.get_or_create(tx, cid, tenant, tree.title, tree.metadata, began)
    held = [row[0] for row in reads.tree(tx, cid)]
    seqs = {m.id: m.seq for m in reads.messages_at(tx, cid, held) if m.id and m.seq}
    created = not held
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
        shas = {f.attachment.sha256 for m in chain for f in m.files if f.attachment}
        used = [by_sha[s] for s in sorted(shas) if s in by_sha]
        plan = AppendPlan(
            conversation_id=cid,
            messages=list(chain),
            attachments=attachment_rows(used),
            now=now,
            tenant=tenant,
            on_conflict="keep-first",
            parent_seq=parent_seq,
            namespace=namespace,
            written=written_times(used),
        )
        result = writes.append_messages(tx, plan)
        for message in result:
            assert message.id is not None
            assert message.seq is not None
            seqs[message.id] = message.seq
            when = times[message.id]
            if when != now:
                dated.append({"cid": cid, "at_seq": message.seq, "at": tx.codec.dump_time(when)})
        written += len(chain)
        files += sum(f.attachment is not None for m in chain for f in m.files)
        chain.clear()

    dated: list[dict[str, Any]] = []
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
    if dated:
        tx.execute_many(_date_message(), dated)
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


@cache
def _date_message() -> Update:
    # Parameters named apart from the columns: SQLAlchemy reserves column names in the SET
    # clause of an UPDATE for the values it sets.
    m = schema.messages.c
    return (
        update(schema.messages)
        .where(m.conversation_id == bindparam("cid"), m.seq == bindparam("at_seq"))
        .values(created_at=bindparam("at"))
    )
