"""What `ConvstoreSaver` knows of one thread's stored messages: `ThreadCache`.

Stored message rows are immutable, so what is cached here never goes stale: messages by seq
(built lazily from native records), seqs by message id, each seq's parent, the head as last
seen or left, and the list the graph last read or put (recognised by object identity). The
saver keeps one per recent thread (`convstore.integrations.langgraph`).
"""

from __future__ import annotations

import bisect
import operator
from typing import Any

from langchain_core.messages import BaseMessage

from convstore.integrations.langchain.messages import message_of_record

__all__ = ["ANY", "UNKNOWN", "ThreadCache"]

UNKNOWN = -1
"""A parent or head seq this saver has not seen (no stored seq is negative)."""
_ID = operator.attrgetter("id")
ANY = object()
"""The parent a list's first message may have: a conversation has one root, so a list whose
first message is new goes after the head, and is found there again."""


class ThreadCache:
    """What this saver knows of one thread's stored messages (rows are immutable)."""

    __slots__ = ("_live", "by_id", "by_seq", "head", "live_list", "parent", "records", "renamed")

    def __init__(self) -> None:
        self.by_seq: dict[int, BaseMessage] = {}
        """Messages as stored, never handed to the graph (it gets copies)."""
        self.records: dict[int, Any] = {}
        """Native records of messages read but not built for `by_seq` yet (`message`)."""
        self.by_id: dict[str, list[int]] = {}
        self.parent: dict[int, int | None] = {}
        """Each known seq's parent in the conversation's tree (``None``: a root)."""
        self.head: int | None = UNKNOWN
        """The conversation's head as this saver last saw or left it (``None``: empty)."""
        self.live_list: tuple[list[BaseMessage], list[int], list[str | None]] = ([], [], [])
        """The message objects of the list last read or written, their seqs and their ids
        then: the next list the graph puts holds most of them again, recognised without
        comparing contents (at once when it starts with all of them)."""
        self._live: dict[int, tuple[BaseMessage, int, str | None]] | None = None
        self.renamed: dict[str, str] = {}
        """Call ids given canonical ids of their own on a branch (see `append_stored`)."""

    def knows(self, seq: int) -> bool:
        return seq in self.by_seq or seq in self.records

    def message(self, seq: int) -> BaseMessage:
        """The stored message ``seq`` (known: see `knows`)."""
        message = self.by_seq.get(seq)
        if message is None:
            message = self.by_seq[seq] = message_of_record(self.records.pop(seq))
        return message

    def _index(self, seq: int, message_id: Any, parent: int | None) -> None:
        if isinstance(message_id, str):
            bisect.insort(self.by_id.setdefault(message_id, []), seq)
        self.parent.setdefault(seq, parent)

    def remember(self, seq: int, message: BaseMessage, parent: int | None) -> None:
        if not self.knows(seq):
            self.by_seq[seq] = message
            self._index(seq, message.id, parent)

    def remember_record(self, seq: int, record: Any, parent: int | None) -> None:
        if not self.knows(seq):
            self.records[seq] = record
            data = record.get("data") if isinstance(record, dict) else None
            self._index(seq, data.get("id") if isinstance(data, dict) else None, parent)

    def set_live(self, messages: list[BaseMessage], seqs: list[int]) -> None:
        self.live_list = (messages, seqs, list(map(_ID, messages)))
        self._live = None

    @property
    def live(self) -> dict[int, tuple[BaseMessage, int, str | None]]:
        """The live list by object identity: ``(message, seq, id then)``."""
        if self._live is None:
            self._live = {id(entry[0]): entry for entry in zip(*self.live_list, strict=True)}
        return self._live

    def find(self, message: BaseMessage, parent: int | object | None) -> int | None:
        """The newest stored copy of ``message`` whose parent is ``parent`` (`ANY`), if any."""
        if message.id is None:
            return None
        hit = self.live.get(id(message))
        # An object the graph got from this saver and still holds; add_messages only ever sets
        # a missing id in place, which the id comparison catches.
        if (
            hit is not None
            and hit[0] is message
            and message.id == hit[2]
            and (parent is ANY or self.parent.get(hit[1], UNKNOWN) == parent)
        ):
            return hit[1]
        for seq in reversed(self.by_id.get(message.id, ())):
            if (parent is ANY or self.parent.get(seq, UNKNOWN) == parent) and self.message(
                seq
            ) == message:
                return seq
        return None

    def matching_prefix(self, value: list[BaseMessage]) -> list[int]:
        """The seqs of the live list, if ``value`` starts with it, object for object.

        A list that grew is matched without a lookup per message (the ids must be unchanged).
        """
        messages, seqs, ids = self.live_list
        n = len(messages)
        if not n or len(value) < n or not all(map(operator.is_, value[:n], messages)):
            return []
        return list(seqs) if list(map(_ID, messages)) == ids else []
