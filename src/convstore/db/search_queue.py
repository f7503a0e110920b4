"""Messages queued for the search index by the writes that insert them (PostgreSQL).

Invariant: every transaction that inserts messages on PostgreSQL queues their keys in
``search_queue`` before it commits, so the next catch-up
(`convstore.db.postgres.search_index.CATCH_UP`) indexes them: the general append, the checkpoint
writes and ``complete_tool_call`` (`convstore.store.append._batch`), a fork
(`convstore.store.history.branches`), a restore (`convstore.store.transfer.restore`) call
`queue_messages`; the one-statement append queues its range inside its own statement
(`convstore.db.postgres.append`). Revisions 0011 to 0016 left this to a statement-level trigger;
queued by the writes, an append costs the server what it costs with no search objects (revision
0017). SQLite needs no queue (its index finds new rows above a mark: `convstore.db.search_index`):
there `Statements.queue_for_search` is ``None`` and `queue_messages` does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from sqlalchemy import TextClause, text

if TYPE_CHECKING:
    from convstore.db.tx import Tx

__all__ = ["QUEUE", "queue_messages", "ranges"]

QUEUE: Final[TextClause] = text(
    "INSERT INTO search_queue (conversation_id, seq, last_seq) VALUES (:cid, :seq, :last_seq)"
)
"""Queue messages ``:seq`` to ``:last_seq`` (NULL: ``:seq`` alone) of conversation ``:cid``."""


def ranges(seqs: Iterable[int]) -> list[tuple[int, int]]:
    """The runs of consecutive numbers in ``seqs``, as ``(first, last)``, ascending."""
    runs: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs


def queue_messages(tx: Tx, cid: str, seqs: Iterable[int]) -> None:
    """Queue the messages ``seqs`` of ``cid``, just inserted in ``tx``, for the search index."""
    stmt = tx.statements.queue_for_search
    if stmt is None:
        return
    params = [
        {"cid": cid, "seq": first, "last_seq": None if last == first else last}
        for first, last in ranges(seqs)
    ]
    if params:
        tx.execute_many(stmt, params)
