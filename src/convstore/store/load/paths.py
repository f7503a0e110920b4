"""Walking the message tree by its parent pointers, as far as a question needs and no further.

Each function runs inside an open transaction (``tx``) and costs the number of messages it
walks over, never the length of the conversation or how many branches it has.

Invariants:

- A message's parent has a smaller ``seq`` than the message (a parent exists before its
  child, and a ``seq`` is never reused), so along a path ``seq`` grows from the root to the
  head, and a walk up from a message that has passed ``seq`` ``s`` without meeting it knows
  ``s`` is not on that path.
- ``0`` stands for "above every root" where the database needs a number: the empty path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from convstore.db.tx import Tx

__all__ = ["Divergence", "PathAbove", "diverge", "walk_up"]


def walk_up(
    tx: Tx, cid: str, start: int, *, floor: int, to_user: bool = False
) -> list[tuple[int, int | None, str]]:
    """(seq, parent_seq, role) from ``start`` up its path, newest first.

    The walk ends with the first message at or below ``floor``; with ``to_user``, with the
    first such message at or after which (counting from ``start``) it has met a user message.
    It ends at a root in any case.
    """
    rows = tx.fetch(
        tx.statements.select_path_up,
        {"cid": cid, "start": start, "floor": floor, "to_user": 1 if to_user else 0},
    )
    return sorted(((seq, parent, role) for seq, parent, role in rows), reverse=True)


@dataclass(slots=True)
class PathAbove:
    """The path root → ``end``, read lazily upwards from ``end`` as membership tests need.

    `contains` walks up only as far as the ``seq`` asked about; one instance keeps what it
    has walked, so asking about many messages of the same recent turns costs one short walk.
    """

    tx: Tx
    cid: str
    end: int | None
    seqs: set[int] = field(default_factory=set)
    lowest: int | None = None
    """The last message walked (the walk goes on from its parent); ``None``: none yet."""
    parent: int | None = None
    """Where the walk goes on: the parent of ``lowest`` (``None``: the root was reached)."""

    def contains(self, seq: int) -> bool:
        """Whether message ``seq`` is on the path."""
        if self.lowest is None:
            if self.end is None:
                return False
            self._walk(self.end, seq)
        while self.lowest is not None and seq < self.lowest and self.parent is not None:
            self._walk(self.parent, seq)
        return seq in self.seqs

    def _walk(self, start: int, floor: int) -> None:
        rows = walk_up(self.tx, self.cid, start, floor=floor)
        if not rows:  # ``start`` does not exist: nothing above it
            self.parent = None
            self.lowest = self.lowest if self.lowest is not None else start
            return
        self.seqs.update(seq for seq, _, _ in rows)
        self.lowest, self.parent, _ = rows[-1]


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where two paths part: their last shared message and what each has after it."""

    shared: int | None
    """The last message on both paths (``None``: they share nothing)."""
    first_only: list[int]
    """The first path's messages after ``shared``, by ``seq``."""
    second_only: list[int]
    """The second path's messages after ``shared``, by ``seq``."""


def diverge(tx: Tx, cid: str, first: int | None, second: int | None) -> Divergence:
    """Where the paths ending at ``first`` and at ``second`` part (``None``: the empty path)."""
    rows = tx.fetch(tx.statements.select_meet, {"cid": cid, "a": first or 0, "b": second or 0})
    ends = {a for a, _ in rows} & {b for _, b in rows}
    met = max(ends) if ends else 0
    return Divergence(
        shared=met or None,
        first_only=sorted({a for a, _ in rows if a > met}),
        second_only=sorted({b for _, b in rows if b > met}),
    )
