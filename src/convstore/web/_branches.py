"""Branches as people know them, from a `MessageTree`: sibling arrows, split points, tips.

Pure functions over the tree the store returns (`ConversationStore.tree`); no I/O.

Invariants:

- A sibling arrow leads to that sibling's newest tip (``?head=TIP``), the way ChatGPT's
  "< 2/3 >" shows the latest answer below a regeneration or an edit.
- Siblings are numbered in the order they were written (by seq), 1-based.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from convstore.model import Message, MessageTree
from convstore.store import ConversationSummary
from convstore.store.search import SearchHit

__all__ = [
    "HitGroup",
    "HitLink",
    "ListRow",
    "SiblingNav",
    "TipView",
    "hit_link",
    "sibling_navs",
    "split_points",
    "tip_views",
]

_AFTER_HIT: Final = 10
"""Messages shown after a search hit when it is too old for the newest page of its path."""


@dataclass(frozen=True, slots=True)
class SiblingNav:
    """Where a message stands among its siblings, and the paths of its neighbours."""

    index: int
    """1-based position among the siblings."""
    count: int
    prev_seq: int | None
    prev_head: int | None
    """The newest tip below the previous sibling (``None``: this is the first)."""
    next_seq: int | None
    next_head: int | None


@dataclass(frozen=True, slots=True)
class TipView:
    """One branch tip as the branch list shows it."""

    head_seq: int
    active: bool
    """The stored head (what ``load`` returns)."""
    shown: bool
    """The end of the path this page shows."""
    created_at: datetime
    diverges_at: int | None
    """The tip's first message that the shown path does not hold (``None``: on the path)."""


def sibling_navs(tree: MessageTree, path: list[int]) -> dict[int, SiblingNav]:
    """For each message of ``path`` (the seqs shown) that has siblings, its place among them."""
    navs: dict[int, SiblingNav] = {}
    for seq in path:
        siblings = tree.siblings(seq)
        if len(siblings) < 2:
            continue
        at = siblings.index(seq)
        prev_seq = siblings[at - 1] if at > 0 else None
        next_seq = siblings[at + 1] if at + 1 < len(siblings) else None
        navs[seq] = SiblingNav(
            index=at + 1,
            count=len(siblings),
            prev_seq=prev_seq,
            prev_head=None if prev_seq is None else tree.newest_tip(prev_seq),
            next_seq=next_seq,
            next_head=None if next_seq is None else tree.newest_tip(next_seq),
        )
    return navs


def split_points(tree: MessageTree, path: list[int]) -> dict[int, int]:
    """The messages of ``path`` where the history branches, and into how many."""
    return {seq: n for seq in path if (n := len(tree.children(seq))) > 1}


def tip_views(tree: MessageTree, shown_head: int | None) -> list[TipView]:
    """Every tip (and the stored head, when it is not a tip), newest first."""
    on_path = set(tree.path(shown_head)) if shown_head in tree and shown_head else set()
    heads = tree.tips()
    if tree.head_seq is not None and tree.head_seq not in heads:
        heads.append(tree.head_seq)
    views = []
    for head in sorted(heads, reverse=True):
        # Up from the tip to the shown path: the walk is as long as the branch, not the path.
        diverges_at = None
        at: int | None = head
        while at is not None and at not in on_path:
            diverges_at = at
            at = tree.node(at).parent_seq
        views.append(
            TipView(
                head_seq=head,
                active=head == tree.head_seq,
                shown=head == shown_head,
                created_at=tree.node(head).created_at,
                diverges_at=diverges_at,
            )
        )
    return views


@dataclass(frozen=True, slots=True)
class ListRow:
    """A conversation in the listing, with its newest message."""

    summary: ConversationSummary
    first_words: str | None
    """The first user words, for a conversation without a title."""
    last: Message | None
    """The newest message of the active path."""
    waiting: int
    """Tool calls the active path ends waiting on (pending or interrupted)."""


@dataclass(frozen=True, slots=True)
class HitLink:
    """Where a search hit opens: the path holding it, and a page on which it is shown."""

    head: int | None
    before: int | None


@dataclass(frozen=True, slots=True)
class HitGroup:
    """One conversation's hits."""

    conversation_id: str
    title: str | None
    newest: datetime | None
    """The conversation's newest message (its latest activity)."""
    hits: list[tuple[SearchHit, HitLink]]


def hit_link(tree: MessageTree, hit: SearchHit, window: int) -> HitLink:
    """The branch a hit is on (the stored head's, or the newest tip below an off-path hit).

    When the hit is older than the newest ``window`` messages of that path, ``before`` pages
    back so that the hit is on the page the link opens.
    """
    if hit.seq is None or hit.seq not in tree or tree.head_seq is None:
        return HitLink(None, None)
    head = tree.head_seq if hit.on_active_path else tree.newest_tip(hit.seq)
    path = tree.path(head)
    if hit.seq not in path:  # the head moved since the search: the hit's own newest tip
        head = tree.newest_tip(hit.seq)
        path = tree.path(head)
    at = path.index(hit.seq)
    before = (
        path[at + _AFTER_HIT] if len(path) - at > window and at + _AFTER_HIT < len(path) else None
    )
    return HitLink(head, before)
