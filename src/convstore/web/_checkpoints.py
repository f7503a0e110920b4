"""A LangGraph thread's checkpoint timeline, from the store's checkpoint records.

Pure functions over `convstore.store.checkpoints.CheckpointRecord`; no I/O and no payload is
ever decoded (a checkpoint's bytes belong to the serializer that wrote them). What is shown
comes from the parts the store keeps as data: the metadata LangGraph writes (``step``,
``source``), the pending writes (their task path names the node, their channel says what was
written; ``__interrupt__`` and ``__error__`` are LangGraph's own channels) and the message
list value (`MESSAGES_VALUE_TYPE`), whose newest seq is the path at that checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from convstore.store.checkpoints import MESSAGES_VALUE_TYPE, CheckpointRecord, message_seqs

__all__ = ["TIMELINE_LIMIT", "CheckpointView", "timeline"]

TIMELINE_LIMIT: Final = 100
"""The newest checkpoints shown on a conversation page."""
_INTERRUPT: Final = "__interrupt__"
_ERROR: Final = "__error__"
_PULL: Final = "~__pregel_pull"


@dataclass(frozen=True, slots=True)
class CheckpointView:
    """One checkpoint as the timeline shows it."""

    checkpoint_id: str
    namespace: str
    parent_id: str | None
    step: int | None
    source: str | None
    nodes: list[str]
    """The nodes whose writes are pending on this checkpoint (the step that ran from it)."""
    channels: list[str]
    """The channels those writes go to."""
    interrupts: int
    errors: int
    fork: bool
    """A second (or later) child of its parent: the thread was forked or replayed here."""
    head_seq: int | None
    """The newest message of the thread's message list at this checkpoint."""


def _node(task_path: str) -> str | None:
    parts = [part.strip() for part in task_path.split(",")]
    if len(parts) > 1 and parts[0] == _PULL and parts[1]:
        return parts[1]
    return None


def timeline(records: list[CheckpointRecord]) -> list[CheckpointView]:
    """The records (newest first, as the store lists them) as timeline entries, oldest first."""
    children: dict[str | None, list[str]] = {}
    for record in sorted(records, key=lambda r: r.checkpoint_id):
        children.setdefault(record.parent_checkpoint_id, []).append(record.checkpoint_id)
    views = []
    for record in sorted(records, key=lambda r: r.checkpoint_id):
        step = record.metadata.get("step")
        source = record.metadata.get("source")
        nodes = sorted({n for w in record.writes if (n := _node(w.task_path)) is not None})
        channels = sorted({w.channel for w in record.writes if not w.channel.startswith("__")})
        head_seq = None
        for value in record.values:
            if value.value_type == MESSAGES_VALUE_TYPE and value.value is not None:
                seqs = message_seqs(value.value)
                head_seq = seqs[-1] if seqs else None
        siblings = children.get(record.parent_checkpoint_id, [])
        views.append(
            CheckpointView(
                checkpoint_id=record.checkpoint_id,
                namespace=record.checkpoint_ns,
                parent_id=record.parent_checkpoint_id,
                step=step if isinstance(step, int) and not isinstance(step, bool) else None,
                source=source if isinstance(source, str) else None,
                nodes=nodes,
                channels=channels,
                interrupts=sum(1 for w in record.writes if w.channel == _INTERRUPT),
                errors=sum(1 for w in record.writes if w.channel == _ERROR),
                fork=record.parent_checkpoint_id is not None
                and siblings.index(record.checkpoint_id) > 0,
                head_seq=head_seq,
            )
        )
    return views
