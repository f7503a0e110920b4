"""Decoded messages kept per (conversation, seq), so a reload decodes only what is new.

Why this is safe across processes and stores on one database:

- A message row never changes once written, and a conversation's ``seq`` is never reused
  (`convstore.store.branches`: the counter is never wound back). A popped, truncated, erased
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

Invariants: at most ``capacity`` messages (and as many built calls) are held, least recently
used go first; every method is thread-safe (loads decode in the database driver's threads,
appends fill it from the event loop).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from convstore.model import Message, ToolCall

__all__ = ["MessageCache"]

Instance = tuple[str, Any]
"""(conversation id, its header's ``created_at`` as the database returns it)."""


class MessageCache:
    """A bounded, least-recently-used map (conversation instance, seq) -> decoded `Message`."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[Instance, int], Message] = OrderedDict()
        self._per_instance: dict[Instance, int] = {}
        """How many entries each instance has: a load of one with none skips the probe."""
        self._seen: dict[str, Any] = {}
        """The instance of each conversation id most recently loaded (where appends go)."""
        self._calls: dict[tuple[str, str], tuple[tuple[Any, ...], ToolCall]] = {}
        """Tool calls built by earlier loads, with the values each was built from."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, instance: Instance) -> bool:
        """Whether any message of this conversation instance is kept."""
        return instance in self._per_instance

    def lookup(
        self, instance: Instance, seqs: Iterable[int]
    ) -> tuple[list[Message | None], list[int]]:
        """The kept messages for ``seqs`` (``None`` where one is not kept), and those seqs."""
        found: list[Message | None] = []
        missing: list[int] = []
        entries = self._entries
        with self._lock:
            self._seen[instance[0]] = instance[1]
            for seq in seqs:
                key = (instance, seq)
                message = entries.get(key)
                if message is None:
                    missing.append(seq)
                else:
                    entries.move_to_end(key)
                found.append(message)
        return found, missing

    def put(self, instance: Instance, messages: Sequence[Message]) -> None:
        """Keep ``messages`` (stored copies, with their ``seq``) of a conversation instance."""
        if self.capacity <= 0:
            return
        entries = self._entries
        counts = self._per_instance
        with self._lock:
            self._seen[instance[0]] = instance[1]
            for message in messages[-self.capacity :]:
                seq = message.seq
                if seq is None:
                    continue
                key = (instance, seq)
                if key not in entries:
                    counts[instance] = counts.get(instance, 0) + 1
                entries[key] = message
                entries.move_to_end(key)
            while len(entries) > self.capacity:
                (old, _seq), _message = entries.popitem(last=False)
                left = counts[old] - 1
                if left:
                    counts[old] = left
                else:
                    del counts[old]
                    if self._seen.get(old[0]) == old[1]:
                        del self._seen[old[0]]

    def put_appended(self, cid: str, messages: Sequence[Message]) -> None:
        """Keep what an append stored, under the instance of ``cid`` last loaded (if any)."""
        created = self._seen.get(cid)
        if created is not None:
            self.put((cid, created), messages)

    def call(
        self, cid: str, call_id: str, made_of: tuple[Any, ...], build: Callable[[], ToolCall]
    ) -> ToolCall:
        """The `ToolCall` built from ``made_of``, by an earlier load if it could.

        That one is returned when it was built from equal values (the fresh lifecycle row, and
        the very part and output objects this load holds); otherwise ``build()``.
        """
        key = (cid, call_id)
        kept = self._calls.get(key)
        if kept is not None and _same(kept[0], made_of):
            return kept[1]
        call = build()
        with self._lock:
            self._calls[key] = (made_of, call)
            if len(self._calls) > self.capacity:
                del self._calls[next(iter(self._calls))]
        return call

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
            self._per_instance.clear()
            self._seen.clear()
            self._calls.clear()


def _same(kept: tuple[Any, ...], fresh: tuple[Any, ...]) -> bool:
    """Equal lifecycle values, and identical part and output objects (the last two items)."""
    return kept[:-2] == fresh[:-2] and kept[-2] is fresh[-2] and kept[-1] is fresh[-1]
