"""LangGraph checkpoints stored in convstore: `ConvstoreSaver`.

``ConvstoreSaver`` is a ``langgraph.checkpoint.base.BaseCheckpointSaver``: ``aget_tuple``,
``alist``, ``aput``, ``aput_writes``, ``adelete_thread``. Install with
``pip install convstore[langgraph]``; this package (`ThreadCache`, the refused blocking
methods) and `convstore.integrations.langchain.messages` are the only ones that import
LangGraph and LangChain.

How a thread is kept:

- **Thread → conversation.** A thread is the convstore conversation whose id is its
  ``thread_id`` (created on the first checkpoint, with ``tenant=``). Its checkpoints, their
  channel values (one row per channel and version, written when the version appears) and
  pending writes live in the store's checkpoint tables (``store.checkpoints``), keyed by the
  conversation id and deleted with it.
- **Messages once.** A channel whose value is a non-empty list of LangChain messages (the
  ``add_messages`` reducer's ``messages`` channel, found by its value, not its name) is not
  serialized per version: each message is stored once as a message of the conversation
  (canonical parts for rendering and tool lifecycles, the message's JSON as native record,
  inline file bytes as blobs) and the channel's value at that version is the list of their
  ``seq`` s, as runs (``[[first_seq, count], ...]``): a checkpoint that adds messages stores
  the new messages and one short run list. New messages go under the message before them in
  the list (``append(parent_seq=...)``), so a fork from an older checkpoint, or a message
  removed (``RemoveMessage``) or edited (a new message with an old id) mid-list, becomes a
  convstore branch (the rest of the list stored again under the message before the change),
  messages removed at the end move the head back
  (``switch_branch``), and the conversation's active path is the list the newest checkpoint
  holds. The one exception: a list whose first message is new while the conversation holds
  messages is appended after the head (a conversation has one root).
- Everything else (the checkpoint itself, other channels, pending writes) is serialized by the
  saver's ``serde`` (LangGraph's ``JsonPlusSerializer`` by default); metadata is JSON.

Invariants:

- Every stored checkpoint reads back equal to what was put, whichever checkpoint is read: a
  message list is rebuilt from immutable message rows, and a message whose JSON would not read
  back equal makes its list fall back to ``serde``.
- Messages already stored are recognised by id and equality, so a message is stored once per
  distinct content. A message list read from the saver holds the message objects the graph
  already holds from the last list it read or put, and new objects for the rest; the saver's
  own copy of a stored message is never handed out. Treat messages as values (``add_messages``
  replaces by id; it never edits in place): a message edited in place after it was put is not
  seen as changed.
- Channel versions are strings unique per write (``get_next_version``), so a fork never reuses
  a version another branch stored.
- The blocking methods (``get_tuple``, ``put``, ...) raise `AsyncOnlyError`: use the ``a``
  methods (``graph.ainvoke``/``astream``).

Its modules:

- ``_thread``: `ThreadCache`, a thread's messages and message lists as the saver last saw them.
- ``_async_only``: the blocking saver methods, refused with `AsyncOnlyError`.
"""

from __future__ import annotations

import contextlib
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from itertools import repeat
from typing import Any

from convstore.errors import MissingDependencyError

try:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_serializable_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as _missing:
    raise MissingDependencyError(__name__, "langgraph-checkpoint", "langgraph") from _missing

from convstore.errors import (
    ConversationNotFoundError,
    InvalidInputError,
)
from convstore.integrations._core.store_handle import OwnsStore, StoreHandle
from convstore.integrations.langchain.messages import (
    NATIVE_FORMAT,
    append_stored,
    from_stored,
    message_of_record,
    resolving_repeats,
    restore_records,
    to_stored,
)
from convstore.integrations.langgraph._async_only import AsyncOnlyMethods
from convstore.integrations.langgraph._thread import ANY, UNKNOWN, ThreadCache
from convstore.model import FilePart, Message
from convstore.store import ConversationStore
from convstore.store.checkpoints import (
    MESSAGES_VALUE_TYPE,
    ChannelValue,
    CheckpointRecord,
    MessageList,
    PendingWrite,
    message_list_value,
    message_seqs,
)

__all__ = ["ConvstoreSaver"]

_EMPTY = "empty"
_THREADS_CACHED = 64


class ConvstoreSaver(OwnsStore, AsyncOnlyMethods, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose threads are convstore conversations.

    Args:
        store: an open `ConversationStore` to share (never closed by the saver).
        url: without ``store``, the database URL of a store the saver owns: opened on first
            use, closed by `aclose` (or ``async with``).
        blobs: with ``url``, where that store keeps attachment bytes.
        tenant: the tenant every thread of this saver belongs to.
        serde: the serializer for everything but message lists (default LangGraph's
            ``JsonPlusSerializer``).
    """

    def __init__(
        self,
        *,
        store: ConversationStore | None = None,
        url: str | None = None,
        blobs: str | None = None,
        tenant: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._handle = StoreHandle(store=store, url=url, blobs=blobs)
        self.tenant = tenant
        self._threads: OrderedDict[str, ThreadCache] = OrderedDict()
        self._known_threads: set[str] = set()

    # -- versions -------------------------------------------------------------------------------

    def get_next_version(self, current: str | int | None, channel: None) -> str:
        """A version above ``current``, unique to this write (a fork never reuses one)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"  # noqa: S311 (uniqueness, not secrecy)

    # -- reads ----------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), or the thread's newest."""
        store = await self._handle.get()
        configurable = config.get("configurable", {})
        thread_id = str(configurable["thread_id"])
        record = await store.checkpoints.get(
            thread_id,
            checkpoint_ns=configurable.get("checkpoint_ns", ""),
            checkpoint_id=get_checkpoint_id(config),
            tenant=self.tenant,
        )
        return None if record is None else await self._tuple(store, record)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first, of ``config``'s thread (and namespace, if it names one)."""
        store = await self._handle.get()
        configurable = (config or {}).get("configurable", {})
        thread_id = configurable.get("thread_id")
        records = await store.checkpoints.list(
            None if thread_id is None else str(thread_id),
            checkpoint_ns=configurable.get("checkpoint_ns"),
            before=None if before is None else get_checkpoint_id(before),
            metadata=filter,
            limit=limit,
            tenant=self.tenant,
        )
        for record in records:
            yield await self._tuple(store, record)

    async def _tuple(self, store: ConversationStore, record: CheckpointRecord) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed((record.checkpoint_type, record.checkpoint))
        values: dict[str, Any] = {}
        for value in record.values:
            if value.value_type == MESSAGES_VALUE_TYPE:
                assert value.value is not None  # written with the runs
                values[value.channel] = await self._read_messages(
                    store, record.conversation_id, value.value
                )
            elif value.value_type != _EMPTY:
                values[value.channel] = self.serde.loads_typed(
                    (value.value_type, value.value or b"")
                )
        checkpoint["channel_values"] = values
        thread_id, ns = record.conversation_id, record.checkpoint_ns
        return CheckpointTuple(
            config=_config(thread_id, ns, record.checkpoint_id),
            checkpoint=checkpoint,
            metadata=record.metadata,  # type: ignore[arg-type, unused-ignore]
            parent_config=(
                None
                if record.parent_checkpoint_id is None
                else _config(thread_id, ns, record.parent_checkpoint_id)
            ),
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.value_type, w.value or b"")))
                for w in record.writes
            ],
        )

    async def _read_messages(
        self, store: ConversationStore, thread_id: str, runs: bytes
    ) -> list[BaseMessage]:
        seqs = message_seqs(runs)
        thread = self._thread(thread_id)
        missing = sorted({seq for seq in seqs if not thread.knows(seq)})
        if missing:

            async def fetch(part: FilePart) -> bytes:
                return await store.read_attachment(part, tenant=self.tenant)

            if len(missing) > 1:
                # A first read of the thread: its active path (the newest list, while the graph
                # has not forked back) holds most of them, as native records in one column.
                path = await store.load_native(thread_id, format=NATIVE_FORMAT, tenant=self.tenant)
                thread.head = path.head_seq
                wanted = set(missing)
                found = [
                    (seq, None if i == 0 else path[i - 1][0], data)
                    for i, (seq, _, data) in enumerate(path)
                    if seq in wanted and data is not None
                ]
                records = await restore_records([data for _, _, data in found], fetch)
                for (seq, parent, _), record in zip(found, records, strict=True):
                    thread.remember_record(seq, record, parent)
                missing = [seq for seq in missing if not thread.knows(seq)]
            if missing:
                stored = await store.get_messages(thread_id, missing, tenant=self.tenant)
                restored = await from_stored(stored, fetch)
                for row, message in zip(stored, restored, strict=True):
                    assert row.seq is not None  # a stored message
                    thread.remember(row.seq, message, row.parent_seq)
        # The graph gets the objects it already holds from the last list read or written, and
        # new ones for the rest (built from a record, or copies): what it does to its state
        # never reaches the messages kept as stored.
        held = dict(zip(thread.live_list[1], thread.live_list[0], strict=True))
        messages = []
        for seq in seqs:
            kept = held.get(seq)
            if kept is None:
                record = thread.records.get(seq)
                if record is not None:
                    kept = message_of_record(record)
                else:
                    kept = thread.by_seq[seq].model_copy()
            messages.append(kept)
        thread.set_live(messages, seqs)
        return messages

    def _thread(self, thread_id: str) -> ThreadCache:
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = self._threads[thread_id] = ThreadCache()
            if len(self._threads) > _THREADS_CACHED:
                self._threads.popitem(last=False)
        else:
            self._threads.move_to_end(thread_id)
        return thread

    # -- writes ---------------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint; the values of ``new_versions`` are the only ones written."""
        store = await self._handle.get()
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        await self._ensure_thread(store, thread_id)
        copy = checkpoint.copy()
        channel_values: dict[str, Any] = copy.pop("channel_values")  # type: ignore[misc, unused-ignore]
        thread = self._thread(thread_id)
        values: list[ChannelValue] = []
        lists: list[tuple[MessageList, list[BaseMessage]]] = []
        for channel, version in new_versions.items():
            if channel not in channel_values:
                values.append(ChannelValue(channel, str(version), _EMPTY, None))
                continue
            value = channel_values[channel]
            planned = self._plan_list(thread, channel, str(version), value)
            if planned is not None:
                lists.append(planned)
            else:
                value_type, data = self.serde.dumps_typed(value)
                values.append(ChannelValue(channel, str(version), value_type, data))
        checkpoint_type, data = self.serde.dumps_typed(copy)
        try:
            meta = dict(get_serializable_checkpoint_metadata(config, metadata))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"checkpoint metadata must be JSON: {exc}") from exc
        # New messages go in the checkpoint's own transaction; a graph with several message
        # channels stores the other channels' new messages just before.
        growing = [planned for planned in lists if planned[0].new]
        last = growing[-1] if growing else None
        path_end: int | None = None
        for planned in lists:
            if planned is last:
                continue
            listed, messages = planned
            seqs = list(listed.kept)
            if listed.new:
                parent = seqs[-1] if seqs else await self._head(store, thread_id, thread)
                seqs += await append_stored(
                    store,
                    thread_id,
                    list(listed.new),
                    tenant=self.tenant,
                    parent_seq=seqs[-1] if seqs else None,
                    renamed=thread.renamed,
                )
                self._remember(thread, messages, seqs, len(listed.kept), parent)
            else:
                self._remember(thread, messages, seqs, len(seqs), None)
            path_end = seqs[-1] if seqs else None
            values.append(
                ChannelValue(
                    listed.channel, listed.version, MESSAGES_VALUE_TYPE, message_list_value(seqs)
                )
            )

        async def put(batch: list[Message]) -> list[int]:
            return await store.checkpoints.put(
                thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_checkpoint_id=configurable.get("checkpoint_id"),
                checkpoint_type=checkpoint_type,
                checkpoint=data,
                channel_versions={k: str(v) for k, v in checkpoint["channel_versions"].items()},
                metadata=meta,
                values=values,
                messages=(
                    None
                    if last is None
                    else MessageList(last[0].channel, last[0].version, last[0].kept, batch)
                ),
                tenant=self.tenant,
            )

        if last is None:
            await put([])
        else:
            kept = list(last[0].kept)
            parent = kept[-1] if kept else await self._head(store, thread_id, thread)
            new = await resolving_repeats(put, list(last[0].new), thread.renamed)
            self._remember(thread, last[1], [*kept, *new], len(kept), parent)
        if lists and last is None and path_end is not None:
            # No new message, yet a list changed: messages were removed at its end (or the
            # graph went back to an older checkpoint). The conversation's active path follows.
            await self._move_head(store, thread_id, thread, path_end)
        return _config(thread_id, ns, checkpoint["id"])

    async def _ensure_thread(self, store: ConversationStore, thread_id: str) -> None:
        if thread_id not in self._known_threads:
            conversation = await store.get_or_create_conversation(thread_id, tenant=self.tenant)
            self._thread(thread_id).head = conversation.head_seq
            self._known_threads.add(thread_id)

    async def _head(
        self, store: ConversationStore, thread_id: str, thread: ThreadCache
    ) -> int | None:
        """The conversation's head: what this saver last saw, or read from the store."""
        if thread.head == UNKNOWN:
            header = await store.load_native(
                thread_id, format=NATIVE_FORMAT, tenant=self.tenant, last=0
            )
            thread.head = header.head_seq
        return thread.head

    def _plan_list(
        self, thread: ThreadCache, channel: str, version: str, value: Any
    ) -> tuple[MessageList, list[BaseMessage]] | None:
        """How a list of messages is stored: the seqs it reuses and the messages to append.

        ``None``: not a list of messages, or one that cannot be kept as messages (one would not
        read back equal).
        """
        if not (
            isinstance(value, list) and value and all(map(isinstance, value, repeat(BaseMessage)))
        ):
            return None
        seqs = thread.matching_prefix(value)
        for message in value[len(seqs) :]:
            # Stored messages are reused while they follow each other in the conversation's
            # tree (a list that grew, or lost messages at its end); from the first that is new
            # or does not follow (a fork from an older checkpoint, a message removed or edited
            # mid-list) on, the rest is stored under the message before it, so the list stays a
            # path of the conversation and the change is a branch.
            seq = thread.find(message, parent=seqs[-1] if seqs else ANY)
            if seq is None:
                break
            seqs.append(seq)
        new = [to_stored(m) for m in value[len(seqs) :]]
        if any(m is None for m in new):
            return None
        return MessageList(channel, version, seqs, [m for m in new if m is not None]), value

    @staticmethod
    def _remember(
        thread: ThreadCache,
        messages: list[BaseMessage],
        seqs: list[int],
        kept: int,
        parent: int | None,
    ) -> None:
        """Note where ``messages`` are stored (copies of the new ones: rows never change).

        ``seqs[kept:]`` were just appended, the first under ``parent``, each under the one
        before; the last is the conversation's head.
        """
        for i in range(kept, len(seqs)):
            previous = parent if i == kept else seqs[i - 1]
            thread.remember(seqs[i], messages[i].model_copy(deep=True), previous)
        if kept < len(seqs):
            thread.head = seqs[-1]
        thread.set_live(messages, seqs)

    async def _move_head(
        self, store: ConversationStore, thread_id: str, thread: ThreadCache, head: int
    ) -> None:
        if await self._head(store, thread_id, thread) != head:
            await store.switch_branch(thread_id, head_seq=head, tenant=self.tenant)
            thread.head = head

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the checkpoint ``config`` names."""
        store = await self._handle.get()
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        await self._ensure_thread(store, thread_id)
        pending = []
        for idx, (channel, value) in enumerate(writes):
            value_type, data = self.serde.dumps_typed(value)
            pending.append(
                PendingWrite(
                    task_id, WRITES_IDX_MAP.get(channel, idx), channel, value_type, data, task_path
                )
            )
        await store.checkpoints.put_writes(
            thread_id,
            checkpoint_ns=configurable.get("checkpoint_ns", ""),
            checkpoint_id=configurable["checkpoint_id"],
            writes=pending,
            tenant=self.tenant,
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and its conversation (its blobs become collectable)."""
        store = await self._handle.get()
        cid = str(thread_id)
        with contextlib.suppress(ConversationNotFoundError):
            await store.delete_conversation(cid, tenant=self.tenant)
        self._threads.pop(cid, None)
        self._known_threads.discard(cid)


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }
