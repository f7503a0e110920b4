"""A plain in-memory reference model of the v2 store operations, for the state machine.

It implements the v2 semantics (branches, pop/truncate, fork, tool-call lifecycles per path,
revisions, RFC 7396 state patches, message ids) as directly and naively as possible: a dict of
messages per conversation keyed by ``seq``, a head, and lifecycles recomputed from the path on
every read. Nothing here is clever, so a disagreement with the store points at the store or at
a misreading of the semantics, never at an optimisation.

Invariants:

- Every operation checks everything first and raises `ModelError` *before* changing anything.
  `ModelError.kinds` names every error class the store may raise: when one request breaks
  several rules at once, the order in which the store checks them is not specified, so any of
  them is acceptable.
- Revisions are counters. The store's revision strings are opaque; the state machine checks
  only that a store revision changes exactly when the model's counter does and never repeats.
- A fork's first new ``seq`` is not pinned by the semantics beyond "greater than every seq in
  the fork" (seqs are never reused); the caller passes the store's choice as ``first_seq`` and
  the model checks that bound instead of inventing a number.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import JsonValue

from convstore import (
    ConvstoreError,
    InvalidInputError,
    InvalidMessageError,
    Message,
    MessageNotFoundError,
    RevisionConflictError,
    Role,
    ThinkingPart,
    ToolCall,
    ToolCallConflictError,
    ToolCallNotFoundError,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
)

__all__ = [
    "UNSET",
    "CallView",
    "LoadView",
    "ModelError",
    "RefConversation",
    "ReferenceStore",
    "call_projection",
    "lifecycles",
    "merge_patch",
    "message_projection",
]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final[Any] = _Unset()
"""An argument left out (``update_conversation`` keeps the current value)."""


class ModelError(Exception):
    """The operation is refused; ``kinds`` are the store errors that may report it."""

    def __init__(self, kinds: Iterable[type[ConvstoreError]], reason: str) -> None:
        self.kinds: tuple[type[ConvstoreError], ...] = tuple(
            sorted(set(kinds), key=lambda k: k.__name__)
        )
        super().__init__(f"{reason} (expect one of {[k.__name__ for k in self.kinds]})")


class _Errors:
    """Collects every broken rule of one request, then raises them together."""

    def __init__(self) -> None:
        self.kinds: set[type[ConvstoreError]] = set()
        self.reasons: list[str] = []

    def add(self, kind: type[ConvstoreError], reason: str) -> None:
        self.kinds.add(kind)
        self.reasons.append(reason)

    def raise_any(self) -> None:
        if self.kinds:
            raise ModelError(self.kinds, "; ".join(self.reasons))


# -- projections: what "equal loads" compares --------------------------------------------------


def message_projection(message: Message) -> dict[str, Any]:
    """A message as JSON without the store's clock (``created_at`` is not modelled)."""
    return message.model_dump(mode="json", exclude={"created_at"})


def call_projection(call: ToolCall | CallView) -> dict[str, Any]:
    """A tool call's lifecycle as JSON, without timestamps."""
    output = call.output.model_dump(mode="json") if call.output is not None else None
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "provider_id": call.provider_id,
        "seq": call.seq,
        "status": str(call.status),
        "result_kind": None if call.output is None else call.output.kind,
        "output": output,
        "result_seq": call.result_seq,
    }


# -- lifecycles ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallView:
    """One call as ``load`` reports it for a given path."""

    id: str
    name: str
    arguments: dict[str, JsonValue]
    provider_id: str | None
    seq: int | None
    idx: int
    status: str
    output: ToolOutput | None
    result_seq: int | None


def lifecycles(path: Sequence[Message], cancelled: set[str] | frozenset[str]) -> list[CallView]:
    """Every call made on ``path``, in call order, with its status on that path.

    The first result after the call on the path decides (``complete``/``error``); else a
    cancellation (which belongs to the call, whatever the path); else a user message later on
    the path (``interrupted``); else ``pending``.
    """
    views = []
    for i, message in enumerate(path):
        for idx, part in enumerate(message.parts):
            if not isinstance(part, ToolCallPart):
                continue
            later = path[i + 1 :]
            answer = next(
                (
                    (m.seq, p)
                    for m in later
                    for p in m.parts
                    if isinstance(p, ToolResultPart) and p.call_id == part.id
                ),
                None,
            )
            output: ToolOutput | None = None
            result_seq: int | None = None
            if answer is not None:
                result_seq, result = answer
                output = result.output
                status = "error" if output.kind == "error" else "complete"
            elif part.id in cancelled:
                status = "cancelled"
            elif any(m.role is Role.USER for m in later):
                status = "interrupted"
            else:
                status = "pending"
            views.append(
                CallView(
                    id=part.id,
                    name=part.name,
                    arguments=part.arguments,
                    provider_id=part.provider_id,
                    seq=message.seq,
                    idx=idx,
                    status=status,
                    output=output,
                    result_seq=result_seq,
                )
            )
    return views


def merge_patch(target: JsonValue, patch: JsonValue) -> JsonValue:
    """RFC 7396: ``null`` deletes a key, objects merge recursively, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, JsonValue] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _with_provenance(message: Message) -> list[Any]:
    """The parts as stored: a thinking part without provider/model takes its message's."""
    parts: list[Any] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart) and (part.provider is None or part.model is None):
            provider = part.provider if part.provider is not None else message.provider
            model = part.model if part.model is not None else message.model
            parts.append(part.model_copy(update={"provider": provider, "model": model}))
        else:
            parts.append(part)
    return parts


# -- conversations ------------------------------------------------------------------------------


@dataclass
class RefConversation:
    """One conversation: a tree of messages by ``seq``, a head, and the rest of its row."""

    id: str
    title: str | None = None
    tenant: str | None = None
    metadata: dict[str, JsonValue] = field(default_factory=dict)
    state: dict[str, JsonValue] = field(default_factory=dict)
    revision: int = 0
    nodes: dict[int, Message] = field(default_factory=dict)
    head: int | None = None
    last_seq: int = 0
    """The highest seq ever allocated (popped seqs are never reused)."""
    seq_pinned: bool = True
    """False for a fork until its first allocation: see the module docstring."""
    cancelled: set[str] = field(default_factory=set)

    def path(self, tip: int | None = UNSET) -> list[Message]:
        """Root → ``tip`` (the head by default)."""
        seq = self.head if tip is UNSET else tip
        path = []
        while seq is not None:
            message = self.nodes[seq]
            path.append(message)
            seq = message.parent_seq
        path.reverse()
        return path

    def path_seqs(self) -> list[int]:
        return [m.seq for m in self.path() if m.seq is not None]

    def children(self, seq: int) -> list[int]:
        return [s for s, m in self.nodes.items() if m.parent_seq == seq]

    def tree_call_ids(self) -> set[str]:
        return {p.id for m in self.nodes.values() for p in m.tool_calls}

    def tree_message_ids(self) -> set[str]:
        return {m.id for m in self.nodes.values() if m.id is not None}

    def calls(self) -> list[CallView]:
        """Lifecycles on the active path."""
        return lifecycles(self.path(), self.cancelled)

    def check_revision(self, errors: _Errors, expected: int | None) -> None:
        if expected is not None and expected != self.revision:
            errors.add(RevisionConflictError, f"stale revision {expected} (now {self.revision})")

    def allocate(self, count: int, first_seq: int | None) -> int:
        """The first of ``count`` new seqs (the store's choice for an unpinned fork)."""
        if not self.seq_pinned and first_seq is not None:
            assert first_seq > self.last_seq, (
                f"the store gave seq {first_seq} in a fork whose seqs reach {self.last_seq}"
            )
            first = first_seq
        else:
            first = self.last_seq + 1
        self.last_seq = first + count - 1
        self.seq_pinned = True
        return first

    def attach(
        self, batch: Sequence[Message], parent: int | None, first_seq: int | None
    ) -> list[Message]:
        """Store ``batch`` as a chain under ``parent``; the head moves to its tip."""
        first = self.allocate(len(batch), first_seq)
        stored = []
        for offset, message in enumerate(batch):
            seq = first + offset
            copy_ = message.model_copy(
                update={
                    "seq": seq,
                    "parent_seq": parent,
                    "conversation_id": self.id,
                    "parts": _with_provenance(message),
                }
            )
            self.nodes[seq] = copy_
            stored.append(copy_)
            parent = seq
        self.head = parent
        self.revision += 1
        return stored

    def remove_head(self) -> Message:
        """One pop (already validated): the head moves to its parent; a leaf is deleted."""
        assert self.head is not None
        message = self.nodes[self.head]
        seq = self.head
        self.head = message.parent_seq
        if not self.children(seq):
            # A message other branches run through stays; only a leaf is deleted (with its
            # calls, whose ids and cancellations go with them).
            del self.nodes[seq]
            self.cancelled -= {p.id for p in message.tool_calls}
        return message


@dataclass(frozen=True)
class LoadView:
    """What ``load`` returns, projected for comparison."""

    messages: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    head_seq: int | None
    title: str | None
    tenant: str | None
    metadata: dict[str, Any]
    state: dict[str, Any]


@dataclass(frozen=True)
class _AppendCheck:
    parent: int | None


class ReferenceStore:
    """The v2 store operations on plain Python data (see the module docstring)."""

    def __init__(self) -> None:
        self.conversations: dict[str, RefConversation] = {}

    def conv(self, cid: str) -> RefConversation:
        return self.conversations[cid]

    # -- conversations --------------------------------------------------------------------------

    def get_or_create(
        self,
        cid: str,
        *,
        title: str | None = None,
        tenant: str | None = None,
        metadata: dict[str, JsonValue] | None = None,
    ) -> RefConversation:
        """The existing conversation unchanged, or a new one with these arguments."""
        if cid not in self.conversations:
            self.conversations[cid] = RefConversation(
                id=cid, title=title, tenant=tenant, metadata=dict(metadata or {})
            )
        return self.conversations[cid]

    def update_conversation(
        self,
        cid: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, JsonValue] = UNSET,
        expected_revision: int | None = None,
    ) -> RefConversation:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        errors.raise_any()
        if title is not UNSET:
            conv.title = title
        if metadata is not UNSET:
            conv.metadata = copy.deepcopy(metadata)
        conv.revision += 1
        return conv

    def update_state(
        self, cid: str, patch: Any, *, expected_revision: int | None = None
    ) -> RefConversation:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        if not isinstance(patch, dict):
            errors.add(InvalidInputError, f"a state patch must be a JSON object, got {patch!r}")
        errors.raise_any()
        merged = merge_patch(conv.state, patch)
        assert isinstance(merged, dict)
        conv.state = merged
        conv.revision += 1
        return conv

    # -- messages -------------------------------------------------------------------------------

    def check_append(
        self,
        cid: str,
        batch: Sequence[Message],
        *,
        parent_seq: int | None = None,
        expected_revision: int | None = None,
    ) -> _AppendCheck:
        """Every rule an append must pass, without writing; where the batch would hang."""
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        base: list[Message] | None
        if parent_seq is not None and parent_seq not in conv.nodes:
            errors.add(InvalidInputError, f"unknown parent_seq {parent_seq}")
            base = None
        else:
            base = conv.path(parent_seq if parent_seq is not None else conv.head)
        ids = [m.id for m in batch if m.id is not None]
        if len(set(ids)) != len(ids):
            errors.add(InvalidMessageError, f"duplicate message id within the batch: {ids}")
        if reused := set(ids) & conv.tree_message_ids():
            errors.add(InvalidMessageError, f"message ids already stored: {sorted(reused)}")
        call_ids = [p.id for m in batch for p in m.tool_calls]
        if len(set(call_ids)) != len(call_ids):
            errors.add(ToolCallConflictError, f"a call id twice in the batch: {call_ids}")
        if reused := set(call_ids) & conv.tree_call_ids():
            errors.add(ToolCallConflictError, f"call ids already stored: {sorted(reused)}")
        if base is not None:
            self._check_results(conv, base, batch, errors)
        errors.raise_any()
        return _AppendCheck(parent=parent_seq if parent_seq is not None else conv.head)

    @staticmethod
    def _check_results(
        conv: RefConversation, base: list[Message], batch: Sequence[Message], errors: _Errors
    ) -> None:
        """Walk the batch on its path: a result must not contradict its call's lifecycle."""
        path = list(base)
        for message in batch:
            for part in message.tool_results:
                view = next(
                    (v for v in lifecycles(path, conv.cancelled) if v.id == part.call_id), None
                )
                if view is None:
                    continue  # a result without its call: history only
                if view.status == "cancelled" or (
                    view.status in ("complete", "error") and view.output != part.output
                ):
                    errors.add(
                        ToolCallConflictError,
                        f"call {part.call_id!r} is {view.status} with another result",
                    )
            path.append(message)

    def append(
        self,
        cid: str,
        batch: Sequence[Message],
        *,
        parent_seq: int | None = None,
        expected_revision: int | None = None,
        first_seq: int | None = None,
    ) -> list[Message]:
        """``store.append``; ``first_seq``: the store's first seq (used only by a new fork)."""
        check = self.check_append(
            cid, batch, parent_seq=parent_seq, expected_revision=expected_revision
        )
        return self.conv(cid).attach(batch, check.parent, first_seq)

    def pop(self, cid: str, *, expected_revision: int | None = None) -> Message:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        if conv.head is None:
            errors.add(InvalidInputError, "pop on an empty path")
        errors.raise_any()
        popped = conv.remove_head()
        conv.revision += 1
        return popped

    def truncate(
        self, cid: str, *, after_seq: int, expected_revision: int | None = None
    ) -> list[Message]:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        if after_seq != 0 and after_seq not in conv.path_seqs():
            errors.add(InvalidInputError, f"after_seq {after_seq} is not on the active path")
        errors.raise_any()
        target = None if after_seq == 0 else after_seq
        removed = []
        while conv.head != target:
            removed.append(conv.remove_head())
        conv.revision += 1
        return removed

    def switch_branch(
        self, cid: str, *, head_seq: int, expected_revision: int | None = None
    ) -> None:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        if head_seq not in conv.nodes:
            errors.add(InvalidInputError, f"no message {head_seq}")
        errors.raise_any()
        conv.head = head_seq
        conv.revision += 1

    def branches(self, cid: str) -> list[tuple[int, bool]]:
        """``(head_seq, active)`` per tip (and the head, when it is interior), by seq."""
        conv = self.conv(cid)
        tips = {s for s in conv.nodes if not conv.children(s)}
        if conv.head is not None:
            tips.add(conv.head)
        return [(s, s == conv.head) for s in sorted(tips)]

    def fork(self, cid: str, *, at_seq: int, title: str | None = None, new_id: str) -> None:
        """A new conversation ``new_id`` holding the source's path root → ``at_seq``."""
        conv = self.conv(cid)
        errors = _Errors()
        if at_seq not in conv.path_seqs():
            errors.add(InvalidInputError, f"fork point {at_seq} is not on the active path")
        errors.raise_any()
        path = conv.path(at_seq)
        calls = {p.id for m in path for p in m.tool_calls}
        self.conversations[new_id] = RefConversation(
            id=new_id,
            title=title if title is not None else conv.title,
            tenant=conv.tenant,
            metadata=copy.deepcopy(conv.metadata),
            state=copy.deepcopy(conv.state),
            nodes={
                m.seq: m.model_copy(update={"conversation_id": new_id})
                for m in path
                if m.seq is not None
            },
            head=at_seq,
            last_seq=at_seq,
            seq_pinned=False,
            cancelled=conv.cancelled & calls,
        )

    # -- tool calls -----------------------------------------------------------------------------

    def complete_tool_call(
        self,
        cid: str,
        call_id: str,
        output: ToolOutput,
        *,
        expected_revision: int | None = None,
        first_seq: int | None = None,
    ) -> CallView:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        view = next((v for v in conv.calls() if v.id == call_id), None)
        if view is None:
            errors.add(ToolCallNotFoundError, f"call {call_id!r} is not on the active path")
        elif view.status == "cancelled" or (
            view.status in ("complete", "error") and view.output != output
        ):
            errors.add(ToolCallConflictError, f"call {call_id!r} is {view.status}")
        errors.raise_any()
        assert view is not None
        if view.status in ("complete", "error"):
            return view  # an equal repeat: nothing written
        result = Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, output=output)])
        conv.attach([result], conv.head, first_seq)
        return next(v for v in conv.calls() if v.id == call_id)

    def cancel_tool_calls(self, cid: str, *, expected_revision: int | None = None) -> list[str]:
        conv = self.conv(cid)
        errors = _Errors()
        conv.check_revision(errors, expected_revision)
        errors.raise_any()
        pending = [v.id for v in conv.calls() if v.status == "pending"]
        conv.cancelled |= set(pending)
        conv.revision += 1
        return pending

    # -- reads ----------------------------------------------------------------------------------

    def load(
        self,
        cid: str,
        *,
        last: int | None = None,
        before_seq: int | None = None,
        head_seq: int | None = None,
    ) -> LoadView:
        """The active path, or root → ``head_seq`` (or a window of it), with the lifecycles
        of the window's calls on that path."""
        conv = self.conv(cid)
        if last is not None and last < 0:
            raise ModelError([InvalidInputError], "last must be zero or positive")
        if head_seq is not None and head_seq not in conv.nodes:
            raise ModelError([MessageNotFoundError], f"no message {head_seq} to read up to")
        tip = conv.head if head_seq is None else head_seq
        path = conv.path(tip)
        window = [m for m in path if before_seq is None or (m.seq or 0) < before_seq]
        if last is not None:
            window = window[max(0, len(window) - last) :] if last else []
        in_window = {m.seq for m in window}
        answered = {p.call_id for m in window for p in m.tool_results}
        calls = []
        for view in lifecycles(path, conv.cancelled):
            answers_in_window = view.id in answered and any(
                (m.seq or 0) > (view.seq or 0)
                for m in window
                if any(p.call_id == view.id for p in m.tool_results)
            )
            if view.seq in in_window or answers_in_window:
                calls.append(call_projection(view))
        return LoadView(
            messages=[message_projection(m) for m in window],
            tool_calls=calls,
            head_seq=tip,
            title=conv.title,
            tenant=conv.tenant,
            metadata=copy.deepcopy(conv.metadata),
            state=copy.deepcopy(conv.state),
        )

    def get_message(self, message_id: str, cid: str) -> Message:
        conv = self.conv(cid)
        found = next((m for m in conv.nodes.values() if m.id == message_id), None)
        if found is None:
            raise ModelError([MessageNotFoundError], f"no message {message_id!r} in {cid}")
        return found
