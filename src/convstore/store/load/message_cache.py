"""Decoded messages kept per (conversation, seq), so a reload decodes only what is new.

Why this is safe across processes and stores on one database:

- A message row never changes once written, and a conversation's ``seq`` is never reused
  (`convstore.store.history.branches`: the counter is never wound back). A popped, truncated, erased
  or deleted message is simply not selected again: every load asks the database which seqs
  its path holds now and takes only those from here, so another process's pops, appends,
  branch switches and deletions show exactly.
- The one way a (conversation id, seq) could name another message is a conversation deleted
  and created again under the same id. Entries are therefore kept per conversation
  *instance*: the id and the creation time of its header, which every load reads fresh. An
  append (which does not read that time) files its messages under the instance this cache
  last saw loaded; if the conversation was re-created meanwhile, they are simply never
  found.
- Messages are kept. Tool-call lifecycles and the conversation's header change, and are
  always read fresh; a `ToolCall` an earlier load built is handed out again only when the
  lifecycle row just read equals the one it was built from (and its part and output are the
  very objects kept here).
- Models are frozen, so one decoded message may be shared by every load that returns it.

Invariants: at most ``capacity`` messages (and as many built calls) are held; every method is
thread-safe (loads decode in the database driver's threads, appends fill it from the event
loop).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # a store that only searches or lists builds no message (no models loaded)
    from convstore.model import Message, ToolCall, ToolCallPart, ToolOutput

__all__ = ["MessageCache"]

KeptCall: TypeAlias = "tuple[tuple[Any, ...], ToolCallPart, ToolOutput | None, ToolCall]"
"""A built call and what it was built from: the lifecycle row as read, and the part and output
objects (kept messages' own) it took its name, arguments and output from."""

Instance = tuple[str, Any]
"""(conversation id, its header's ``created_at`` as the database returns it)."""


class MessageCache:
    """A bounded map (conversation instance, seq) -> decoded `Message`.

    Conversations are evicted least recently used first; within one conversation larger than
    the whole cache, its oldest messages go first (windows read the newest).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._conversations: OrderedDict[Instance, dict[int, Message]] = OrderedDict()
        self._count = 0
        """Messages held, over every conversation."""
        self._seen: dict[str, Any] = {}
        """The instance of each conversation id most recently loaded (where appends go)."""
        self._bounds: dict[Instance, tuple[int, int]] = {}
        """The lowest and highest seq kept of each conversation instance."""
        self._calls: dict[tuple[str, str], KeptCall] = {}
        """Tool calls built by earlier loads, with what each was built from."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def holds(self, instance: Instance) -> bool:
        """Whether any message of this conversation instance is kept."""
        return instance in self._conversations

    def holds_any(self, cid: str) -> bool:
        """Whether messages of the instance of ``cid`` last seen are kept (worth asking for)."""
        created = self._seen.get(cid)
        return created is not None and (cid, created) in self._conversations

    def held_range(self, cid: str) -> tuple[Any, int, int] | None:
        """What is kept of ``cid``: (its instance's ``created_at``, lowest seq, highest seq).

        Of the instance last seen; ``None`` if nothing is kept. Seqs in the range need not all
        be kept (another branch, a page not read).
        """
        with self._lock:
            created = self._seen.get(cid)
            bounds = self._bounds.get((cid, created))
        return None if bounds is None else (created, *bounds)

    def lookup(
        self, instance: Instance, seqs: Sequence[int]
    ) -> tuple[list[Message | None], list[int]]:
        """The kept messages for ``seqs`` (``None`` where one is not kept), and those seqs."""
        with self._lock:
            self._seen[instance[0]] = instance[1]
            kept = self._conversations.get(instance)
            if kept is None:
                found: list[Message | None] = [None] * len(seqs)
            else:
                self._conversations.move_to_end(instance)
                found = list(map(kept.get, seqs))
        missing = [seq for seq, m in zip(seqs, found, strict=True) if m is None]
        return found, missing

    def put(self, instance: Instance, messages: Sequence[Message]) -> None:
        """Keep ``messages`` (stored copies, with their ``seq``) of a conversation instance."""
        if self.capacity <= 0:
            return
        with self._lock:
            self._seen[instance[0]] = instance[1]
            kept = self._conversations.get(instance)
            if kept is None:
                kept = self._conversations[instance] = {}
            else:
                self._conversations.move_to_end(instance)
            before = len(kept)
            seqs = []
            for message in messages[-self.capacity :]:
                if message.seq is not None:
                    kept[message.seq] = message
                    seqs.append(message.seq)
            self._count += len(kept) - before
            if seqs:
                bounds = self._bounds.get(instance)
                low, high = min(seqs), max(seqs)
                self._bounds[instance] = (
                    (low, high) if bounds is None else (min(bounds[0], low), max(bounds[1], high))
                )
            self._evict()

    def _evict(self) -> None:
        conversations = self._conversations
        while self._count > self.capacity:
            oldest, kept = next(iter(conversations.items()))
            if len(conversations) == 1 or len(kept) > self.capacity:
                # One conversation over the whole budget: drop its oldest messages.
                for seq in sorted(kept)[: self._count - self.capacity]:
                    del kept[seq]
                    self._count -= 1
                if kept:
                    self._bounds[oldest] = (min(kept), max(kept))
                    continue
            del conversations[oldest]
            self._bounds.pop(oldest, None)
            self._count -= len(kept)
            if self._seen.get(oldest[0]) == oldest[1]:
                del self._seen[oldest[0]]

    def put_appended(self, cid: str, messages: Sequence[Message]) -> None:
        """Keep what an append stored, under the instance of ``cid`` last loaded (if any)."""
        created = self._seen.get(cid)
        if created is not None:
            self.put((cid, created), messages)

    def kept_call(self, key: tuple[str, str]) -> KeptCall | None:
        """The call a load built for (conversation id, call id), with what it was built from.

        A load hands it out again only if what it just read is equal (see `KeptCall`).
        """
        return self._calls.get(key)

    def keep_call(self, key: tuple[str, str], kept: KeptCall) -> None:
        """Remember a built call (as many as messages; the oldest go first)."""
        with self._lock:
            self._calls[key] = kept
            if len(self._calls) > self.capacity:
                del self._calls[next(iter(self._calls))]

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._conversations.clear()
            self._count = 0
            self._seen.clear()
            self._bounds.clear()
            self._calls.clear()
