"""The statements of the checkpoint tables (`convstore.store.checkpoints`), one set per dialect.

Invariants:

- Like `convstore.db.statements`: SQLAlchemy Core objects with named bind parameters, built
  once per dialect and reused (the SQLite path compiles each statement object once).
- Every statement names its conversation id; only the cross-thread listing does not, and its
  tenant-scoped form joins ``conversations`` to keep other tenants' threads out.
- Inserts bind every column by name; a channel value or a regular pending write is written once
  (a repeat is ignored), a checkpoint or an error/interrupt write is replaced (LangGraph's rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from sqlalchemy import (
    JSON,
    Insert,
    Select,
    Table,
    Update,
    bindparam,
    cast,
    func,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from convstore.db.schema import checkpoint_values, checkpoint_writes, checkpoints, conversations
from convstore.db.statements._common import Scoped, positions
from convstore.db.statements._common import scoped as _scoped

__all__ = ["CHECKPOINT_COLUMNS", "CheckpointAt", "CheckpointStatements", "checkpoint_statements"]

CHECKPOINT_COLUMNS = (
    checkpoints.c.conversation_id,
    checkpoints.c.checkpoint_ns,
    checkpoints.c.checkpoint_id,
    checkpoints.c.parent_checkpoint_id,
    checkpoints.c.checkpoint_type,
    checkpoints.c.checkpoint,
    checkpoints.c.channel_versions,
    checkpoints.c.metadata,
)
"""A checkpoint row, in the order `convstore.store.checkpoints` reads it."""

_AT: Final = positions(CHECKPOINT_COLUMNS)


class CheckpointAt:
    """Where each column is in a `CHECKPOINT_COLUMNS` row."""

    conversation_id: Final = _AT["conversation_id"]
    checkpoint_ns: Final = _AT["checkpoint_ns"]
    checkpoint_id: Final = _AT["checkpoint_id"]
    parent_checkpoint_id: Final = _AT["parent_checkpoint_id"]
    checkpoint_type: Final = _AT["checkpoint_type"]
    checkpoint: Final = _AT["checkpoint"]
    channel_versions: Final = _AT["channel_versions"]
    metadata: Final = _AT["metadata"]


def _upsert(dialect_name: str, table: Table, *, replace: tuple[str, ...]) -> Insert:
    """An insert that replaces ``replace`` columns of an existing row, or ignores the repeat."""
    match dialect_name:
        case "sqlite":
            stmt: Any = sqlite.insert(table)
        case "postgresql":
            stmt = postgresql.insert(table)
        case _:
            raise NotImplementedError(f"no upsert for dialect {dialect_name!r}")
    if not replace:
        result: Insert = stmt.on_conflict_do_nothing()
        return result
    keys = [c.name for c in table.primary_key.columns]
    upsert: Insert = stmt.on_conflict_do_update(
        index_elements=keys, set_={name: stmt.excluded[name] for name in replace}
    )
    return upsert


def _pairs(dialect_name: str, name: str) -> Any:
    """The ``(key, value)`` rows of a JSON object of strings bound as ``:name``."""
    match dialect_name:
        case "sqlite":
            return func.json_each(bindparam(name)).table_valued("key", "value")
        case "postgresql":
            return func.json_each_text(cast(bindparam(name, type_=JSON), JSON)).table_valued(
                "key", "value"
            )
        case _:
            raise NotImplementedError(f"no JSON objects for dialect {dialect_name!r}")


def _list_all(tenant_scoped: bool) -> Select[Any]:
    stmt = select(*CHECKPOINT_COLUMNS)
    if tenant_scoped:
        stmt = stmt.join(conversations, conversations.c.id == checkpoints.c.conversation_id).where(
            conversations.c.tenant == bindparam("for_tenant")
        )
    return stmt.order_by(checkpoints.c.conversation_id, checkpoints.c.checkpoint_id.desc())


def _values(dialect_name: str) -> Select[Any]:
    val = checkpoint_values.c
    pairs = _pairs(dialect_name, "versions")
    lookup = (
        (val.conversation_id == bindparam("cid"))
        & (val.checkpoint_ns == bindparam("ns"))
        & (val.channel == pairs.c.key)
        & (val.version == pairs.c.value)
    )
    if dialect_name != "postgresql":
        # SQLite probes the primary key once per pair for a row-value IN (a join would scan
        # the thread's values, the function taken as the inner table).
        return select(val.channel, val.version, val.value_type, val.value).where(
            (val.conversation_id == bindparam("cid"))
            & (val.checkpoint_ns == bindparam("ns"))
            & tuple_(val.channel, val.version).in_(select(pairs.c.key, pairs.c.value))
        )
    # PostgreSQL plans a join against the function by guessed row counts (a hash join over
    # every value of the thread when the table's statistics are young); a LATERAL lookup that
    # cannot be flattened (LIMIT 1: the pair is the primary key) is one index probe per pair.
    one = (
        select(val.channel, val.version, val.value_type, val.value)
        .where(lookup)
        .limit(1)
        .lateral("v")
    )
    return select(one.c.channel, one.c.version, one.c.value_type, one.c.value).select_from(
        pairs.join(one, true())
    )


@dataclass(frozen=True, slots=True)
class CheckpointStatements:
    """Every statement the checkpoint tables need, for one dialect."""

    conversation_tenant: Select[Any]
    """``(tenant, last_seq)`` of conversation ``:cid`` (no row: there is none)."""
    touch_conversation: Update
    """Conversation ``:cid``'s ``updated_at`` set to ``:at`` unless it is ``:stale`` or newer."""
    insert_checkpoint: Insert
    insert_value: Insert
    insert_write: Insert
    """A regular pending write: the first one stored for its (task, index) stays."""
    replace_write: Insert
    """An error or interrupt write: the latest one replaces."""
    one_checkpoint: Select[Any]
    """Checkpoint ``:checkpoint_id`` of ``(:cid, :ns)``."""
    latest_checkpoint: Select[Any]
    """The newest checkpoint of ``(:cid, :ns)``."""
    thread_checkpoints: Select[Any]
    """Every checkpoint of ``:cid``, newest first."""
    all_checkpoints: Scoped[Select[Any]]
    """Every checkpoint of every thread (of ``:for_tenant``), by thread, newest first."""
    values: Select[Any]
    """``(channel, version, value_type, value)`` of ``(:cid, :ns)`` for each pair of the JSON
    object ``:versions`` (``{channel: version}``): one primary-key lookup per pair, so a read
    costs the same however many checkpoints the thread has."""
    writes: Select[Any]
    """The pending writes of checkpoint ``:checkpoint_id`` of ``(:cid, :ns)``, in the order a
    super-step applies them: by task path, task id, index (LangGraph's ``writes_sort_key``)."""


@cache
def checkpoint_statements(dialect_name: str) -> CheckpointStatements:
    """The checkpoint statements for ``dialect_name`` (``sqlite`` or ``postgresql``), built once."""
    cp = checkpoints.c
    in_thread = (cp.conversation_id == bindparam("cid")) & (cp.checkpoint_ns == bindparam("ns"))
    wr = checkpoint_writes.c
    return CheckpointStatements(
        conversation_tenant=select(conversations.c.tenant, conversations.c.last_seq).where(
            conversations.c.id == bindparam("cid")
        ),
        # Parameters named apart from the columns: SQLAlchemy reserves column names in the SET
        # clause of an UPDATE for the values it sets.
        touch_conversation=update(conversations)
        .where(conversations.c.id == bindparam("cid"))
        .where(conversations.c.updated_at < bindparam("stale"))
        .values(updated_at=bindparam("at")),
        insert_checkpoint=_upsert(
            dialect_name,
            checkpoints,
            replace=(
                "parent_checkpoint_id",
                "checkpoint_type",
                "checkpoint",
                "channel_versions",
                "metadata",
            ),
        ),
        insert_value=_upsert(dialect_name, checkpoint_values, replace=()),
        insert_write=_upsert(dialect_name, checkpoint_writes, replace=()),
        replace_write=_upsert(
            dialect_name, checkpoint_writes, replace=("channel", "value_type", "value", "task_path")
        ),
        one_checkpoint=select(*CHECKPOINT_COLUMNS).where(
            in_thread & (cp.checkpoint_id == bindparam("checkpoint_id"))
        ),
        latest_checkpoint=select(*CHECKPOINT_COLUMNS)
        .where(in_thread)
        .order_by(cp.checkpoint_id.desc())
        .limit(1),
        thread_checkpoints=select(*CHECKPOINT_COLUMNS)
        .where(cp.conversation_id == bindparam("cid"))
        .order_by(cp.checkpoint_id.desc()),
        all_checkpoints=_scoped(_list_all),
        values=_values(dialect_name),
        writes=select(wr.task_id, wr.idx, wr.channel, wr.value_type, wr.value, wr.task_path)
        .where(
            (wr.conversation_id == bindparam("cid"))
            & (wr.checkpoint_ns == bindparam("ns"))
            & (wr.checkpoint_id == bindparam("checkpoint_id"))
        )
        .order_by(wr.task_path, wr.task_id, wr.idx),
    )
