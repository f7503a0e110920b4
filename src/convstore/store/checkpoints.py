"""Checkpoints of graph frameworks (LangGraph): `Checkpoints`, reached as ``store.checkpoints``.

A thread is a conversation: its checkpoints, their channel values and pending writes are rows
of the checkpoint tables keyed by the conversation id, deleted with the conversation
(`ConversationStore.delete_conversation`), so the messages a thread stored in the conversation
and its checkpoints go together.

Invariants:

- The store never decodes a payload: a checkpoint, a channel value and a write are bytes typed
  by the serializer that wrote them. Only metadata is JSON (filtered by key equality).
- A channel value is written once per (namespace, channel, version); a checkpoint names the
  version of each value it holds (``channel_versions``), so an unchanged channel costs nothing.
- Each method is one transaction. Writes need the conversation to exist (the integration
  creates it); with ``tenant=``, another tenant's conversation is reported as missing
  (`ConversationNotFoundError` on writes, nothing found on reads).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from typing import Any, Final

from pydantic import JsonValue

from convstore.db.statements.checkpoints import (
    CheckpointAt,
    CheckpointStatements,
    checkpoint_statements,
)
from convstore.db.tx import Row, Tx
from convstore.errors import ConversationNotFoundError, InvalidInputError
from convstore.limits import (
    MAX_CONVERSATION_ID_LENGTH,
    MAX_SEQ,
    check_count,
    check_json_object,
    check_text,
)
from convstore.message_checks import check_messages
from convstore.model import Message
from convstore.store import _arguments
from convstore.store._connection import StoreConnection
from convstore.store.append import appending
from convstore.store.attachments import BlobContext

__all__ = [
    "MESSAGES_VALUE_TYPE",
    "TOUCH_EVERY",
    "ChannelValue",
    "CheckpointRecord",
    "Checkpoints",
    "MessageList",
    "PendingWrite",
    "message_list_value",
    "message_seqs",
]

_KEY_LENGTH = 255

TOUCH_EVERY: Final = timedelta(minutes=1)
"""How stale a thread's ``updated_at`` may be before a checkpoint write moves it."""

_AT: Final = CheckpointAt
"""Positions in a checkpoint row (`CHECKPOINT_COLUMNS`)."""


@dataclass(frozen=True, slots=True)
class ChannelValue:
    """One channel's value at one version."""

    channel: str
    version: str
    value_type: str
    """What wrote ``value`` (the serializer's type tag)."""
    value: bytes | None


MESSAGES_VALUE_TYPE = "convstore.messages"
"""The ``value_type`` of a channel value that is a list of the conversation's messages: its
``value`` is their seqs as JSON runs ``[[first_seq, count], ...]`` (`message_seqs`)."""


@dataclass(frozen=True, slots=True)
class MessageList:
    """A channel value that is a list of the conversation's messages, kept as their seqs."""

    channel: str
    version: str
    kept: Sequence[int]
    """The seqs of the list's first messages, already stored, in list order."""
    new: Sequence[Message] = ()
    """The rest of the list, appended in the checkpoint's transaction under the last kept
    message (after the head when none is kept)."""


def message_seqs(value: bytes) -> list[int]:
    """The seqs a `MESSAGES_VALUE_TYPE` value lists, in order."""
    runs = json.loads(value)
    return list(chain.from_iterable(range(first, first + count) for first, count in runs))


def message_list_value(seqs: Sequence[int]) -> bytes:
    """The `MESSAGES_VALUE_TYPE` value listing ``seqs``: ``[first, count]`` runs, as JSON."""
    # A run starts where a seq does not follow the one before: found in one comprehension (a
    # list of a thousand seqs is usually a handful of runs).
    starts = [0, *(i for i in range(1, len(seqs)) if seqs[i] != seqs[i - 1] + 1)]
    ends = [*starts[1:], len(seqs)]
    runs = [[seqs[a], b - a] for a, b in zip(starts, ends, strict=True)] if seqs else []
    return json.dumps(runs, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """A task's write not yet folded into a checkpoint."""

    task_id: str
    idx: int
    """Its index among the task's writes (negative for LangGraph's error and interrupt writes)."""
    channel: str
    value_type: str
    value: bytes | None
    task_path: str = ""


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A stored checkpoint with the channel values it names and its pending writes."""

    conversation_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint_type: str
    checkpoint: bytes
    channel_versions: dict[str, str]
    metadata: dict[str, JsonValue]
    values: list[ChannelValue]
    """The values named by ``channel_versions`` (a value never stored is absent)."""
    writes: list[PendingWrite]
    """Pending writes, by task path, task id, then index."""


class Checkpoints:
    """The checkpoint tables of one store (``store.checkpoints``)."""

    def __init__(self, store: StoreConnection) -> None:
        self._store = store

    def _statements(self) -> CheckpointStatements:
        self._store.blob_store  # noqa: B018 (raises ClosedError when the store is not open)
        return checkpoint_statements(self._store.backend.dialect_name)

    async def put(
        self,
        conversation_id: str,
        *,
        checkpoint_ns: str,
        checkpoint_id: str,
        parent_checkpoint_id: str | None,
        checkpoint_type: str,
        checkpoint: bytes,
        channel_versions: Mapping[str, str],
        metadata: Mapping[str, Any],
        values: Sequence[ChannelValue] = (),
        messages: MessageList | None = None,
        tenant: str | None = None,
    ) -> list[int]:
        """Store a checkpoint (replacing one with the same id) and the channel values it adds.

        ``values`` are the values at versions not stored before; one already stored for its
        (namespace, channel, version) is kept as it is. ``messages``: one more value, a list of
        messages of the conversation (`MessageList`); its new messages are appended in the
        same transaction as the checkpoint, as `ConversationStore.append` does
        (``on_conflict="keep-first"``). Returns the seqs they were stored at.
        """
        stmts = self._statements()
        _check_thread(conversation_id, tenant, checkpoint_ns)
        for key in (
            checkpoint_id,
            parent_checkpoint_id,
            *channel_versions,
            *channel_versions.values(),
        ):
            _check_key(key)
        meta = _arguments.json_object(metadata, "checkpoint metadata")
        check_json_object(meta, "checkpoint metadata")
        versions = dict(channel_versions)
        for value in values:
            _check_key(value.channel)
            _check_key(value.version)
        if messages is not None:
            _check_key(messages.channel)
            _check_key(messages.version)
            kept = messages.kept
            # A few passes in C for the usual list of ints; a bad one is then found and named.
            if kept and not (
                set(map(type, kept)) == {int} and min(kept) >= 0 and max(kept) <= MAX_SEQ
            ):
                for seq in kept:
                    check_count(seq, "seq")

        def put(tx: Tx, new_seqs: Sequence[int] = (), *, appended: bool = False) -> None:
            if not appended:  # an append checked the conversation and its tenant already
                _touch_thread(tx, stmts, conversation_id, tenant)
            codec = tx.codec
            if messages is not None:
                listed = message_list_value([*messages.kept, *new_seqs])
                values_ = [
                    *values,
                    ChannelValue(messages.channel, messages.version, MESSAGES_VALUE_TYPE, listed),
                ]
            else:
                values_ = list(values)
            if values_:
                tx.execute_many(
                    stmts.insert_value,
                    [
                        {
                            "conversation_id": conversation_id,
                            "checkpoint_ns": checkpoint_ns,
                            "channel": v.channel,
                            "version": v.version,
                            "value_type": v.value_type,
                            "value": v.value,
                        }
                        for v in values_
                    ],
                )
            tx.execute(
                stmts.insert_checkpoint,
                {
                    "conversation_id": conversation_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": checkpoint_id,
                    "parent_checkpoint_id": parent_checkpoint_id,
                    "checkpoint_type": checkpoint_type,
                    "checkpoint": checkpoint,
                    "channel_versions": codec.dump_json(versions),
                    "metadata": codec.dump_json(meta),
                },
            )

        if messages is None or not messages.new:
            await self._store.backend.write(put)
            return []
        batch = _arguments.as_messages(list(messages.new))
        check_messages(batch, max_attachment_size=self._store.blob_store.max_size)
        parent = messages.kept[-1] if messages.kept else None

        def put_after_append(tx: Tx) -> None:
            # The batch took the conversation's newest seqs, consecutive.
            last_seq = tx.fetch(stmts.conversation_tenant, {"cid": conversation_id})[0][1]
            put(tx, range(last_seq - len(batch) + 1, last_seq + 1), appended=True)

        stored = await appending.append_batch(
            BlobContext.of(self._store),
            conversation_id,
            batch,
            also=put_after_append,
            tenant=tenant,
            on_conflict="keep-first",
            parent_seq=parent,
        )
        return [m.seq for m in stored if m.seq is not None]

    async def put_writes(
        self,
        conversation_id: str,
        *,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        tenant: str | None = None,
    ) -> None:
        """Store pending writes of a checkpoint.

        A write with a negative index (LangGraph's error and interrupt writes) replaces the one
        stored for its (task, index); any other keeps the first one stored.
        """
        stmts = self._statements()
        _check_thread(conversation_id, tenant, checkpoint_ns)
        _check_key(checkpoint_id)
        for write in writes:
            _check_key(write.task_id)
            _check_key(write.channel)
            check_text(write.task_path, "task path")
        if not writes:
            return

        def put(tx: Tx) -> None:
            _touch_thread(tx, stmts, conversation_id, tenant)
            for replace in (False, True):
                rows = [
                    {
                        "conversation_id": conversation_id,
                        "checkpoint_ns": checkpoint_ns,
                        "checkpoint_id": checkpoint_id,
                        "task_id": w.task_id,
                        "idx": w.idx,
                        "channel": w.channel,
                        "value_type": w.value_type,
                        "value": w.value,
                        "task_path": w.task_path,
                    }
                    for w in writes
                    if (w.idx < 0) == replace
                ]
                if rows:
                    tx.execute_many(stmts.replace_write if replace else stmts.insert_write, rows)

        await self._store.backend.write(put)

    async def get(
        self,
        conversation_id: str,
        *,
        checkpoint_ns: str,
        checkpoint_id: str | None = None,
        tenant: str | None = None,
    ) -> CheckpointRecord | None:
        """Checkpoint ``checkpoint_id`` of the thread's namespace, or its newest; ``None``: none."""
        stmts = self._statements()
        _check_thread(conversation_id, tenant, checkpoint_ns)

        def get(tx: Tx) -> CheckpointRecord | None:
            if tenant is not None and not _visible(tx, stmts, conversation_id, tenant):
                return None
            params: dict[str, Any] = {"cid": conversation_id, "ns": checkpoint_ns}
            if checkpoint_id is None:
                rows = tx.fetch(stmts.latest_checkpoint, params)
            else:
                rows = tx.fetch(stmts.one_checkpoint, {**params, "checkpoint_id": checkpoint_id})
            return _record(tx, stmts, rows[0]) if rows else None

        return await self._store.backend.read(get)

    async def list(
        self,
        conversation_id: str | None = None,
        *,
        checkpoint_ns: str | None = None,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
        tenant: str | None = None,
    ) -> list[CheckpointRecord]:
        """Checkpoints newest first: of one thread, or of every thread (``None``; by thread).

        ``checkpoint_ns`` keeps one namespace; ``before`` only checkpoints with a smaller id;
        ``metadata`` those whose metadata has all these keys equal; ``limit`` the first N.
        """
        stmts = self._statements()
        if conversation_id is not None:
            _check_thread(conversation_id, tenant, checkpoint_ns)
        wanted = None if metadata is None else _arguments.json_object(metadata, "metadata filter")
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise InvalidInputError("limit must be zero or positive")

        def select(tx: Tx) -> list[CheckpointRecord]:
            if conversation_id is None:
                scoped = stmts.all_checkpoints.pick(tenant)
                rows = tx.stream(scoped, {} if tenant is None else {"for_tenant": tenant})
            elif tenant is None or _visible(tx, stmts, conversation_id, tenant):
                rows = tx.stream(stmts.thread_checkpoints, {"cid": conversation_id})
            else:
                return []
            found: list[Row] = []
            for row in rows:
                if limit is not None and len(found) >= limit:
                    break
                if checkpoint_ns is not None and row[_AT.checkpoint_ns] != checkpoint_ns:
                    continue
                if before is not None and row[_AT.checkpoint_id] >= before:
                    continue
                metadata = row[_AT.metadata]
                if wanted is not None and not _matches(tx.codec.load_json(metadata), wanted):
                    continue
                found.append(row)
            # Rows first, then their values: a stream stays the only open cursor.
            return [_record(tx, stmts, row) for row in found]

        return await self._store.backend.read(select)


def _check_thread(conversation_id: str, tenant: str | None, checkpoint_ns: str | None) -> None:
    check_text(conversation_id, "thread id", max_length=MAX_CONVERSATION_ID_LENGTH)
    check_text(tenant, "tenant")
    _check_key(checkpoint_ns, "checkpoint namespace")


def _check_key(value: str | None, what: str = "checkpoint key") -> None:
    """Any string up to 255 characters, the empty one included (the root namespace is ``""``)."""
    check_text(value, what)
    if value is not None and len(value) > _KEY_LENGTH:
        raise InvalidInputError(f"{what} is at most {_KEY_LENGTH} characters, got {len(value)}")


def _visible(tx: Tx, stmts: CheckpointStatements, cid: str, tenant: str | None) -> bool:
    # Reads without a tenant skip this: a checkpoint row exists only with its conversation.
    rows = tx.fetch(stmts.conversation_tenant, {"cid": cid})
    if not rows:
        return False
    owner, _last_seq = rows[0]
    return tenant is None or owner == tenant


def _touch_thread(tx: Tx, stmts: CheckpointStatements, cid: str, tenant: str | None) -> None:
    """The thread must exist (for ``tenant``); a checkpoint write counts as activity."""
    if not _visible(tx, stmts, cid, tenant):
        raise ConversationNotFoundError(f"conversation {cid!r} not found")
    # A thread that only checkpoints must not look idle to retention
    # (`convstore.store.maintenance._prune` judges by ``updated_at``). At most one header write per
    # `TOUCH_EVERY`, so a busy graph does not rewrite the conversation row at every step; the
    # revision stays (no message, title or state changed), and prune re-checks ``updated_at`` in its
    # delete.
    now = _arguments.now()
    codec = tx.codec
    tx.execute(
        stmts.touch_conversation,
        {"cid": cid, "at": codec.dump_time(now), "stale": codec.dump_time(now - TOUCH_EVERY)},
    )


def _matches(metadata: Any, wanted: Mapping[str, Any]) -> bool:
    return isinstance(metadata, dict) and all(
        key in metadata and metadata[key] == value for key, value in wanted.items()
    )


def _record(tx: Tx, stmts: CheckpointStatements, row: Row) -> CheckpointRecord:
    cid, ns = row[_AT.conversation_id], row[_AT.checkpoint_ns]
    checkpoint_id = row[_AT.checkpoint_id]
    codec = tx.codec
    versions: dict[str, str] = codec.load_json(row[_AT.channel_versions])
    values: list[ChannelValue] = []
    if versions:
        values = [
            ChannelValue(channel, version, value_type, _bytes(value))
            for channel, version, value_type, value in tx.fetch(
                stmts.values, {"cid": cid, "ns": ns, "versions": codec.dump_json(versions)}
            )
        ]
    writes = [
        PendingWrite(task_id, idx, channel, value_type, _bytes(value), task_path)
        for task_id, idx, channel, value_type, value, task_path in tx.fetch(
            stmts.writes, {"cid": cid, "ns": ns, "checkpoint_id": checkpoint_id}
        )
    ]
    return CheckpointRecord(
        conversation_id=cid,
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=row[_AT.parent_checkpoint_id],
        checkpoint_type=row[_AT.checkpoint_type],
        checkpoint=_bytes(row[_AT.checkpoint]) or b"",
        channel_versions=versions,
        metadata=codec.load_json(row[_AT.metadata]),
        values=values,
        writes=writes,
    )


def _bytes(value: Any) -> bytes | None:
    # asyncpg returns bytea as bytes, sqlite3 as bytes; a memoryview is possible on some drivers.
    return None if value is None else bytes(value)
