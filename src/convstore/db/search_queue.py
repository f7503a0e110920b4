"""Messages queued for the search index by the writes that insert them (PostgreSQL).

Invariant: every transaction that inserts messages on PostgreSQL queues their keys in
``search_queue`` before it commits, so the next catch-up
(`convstore.db.postgres.search_index.CATCH_UP`) indexes them: the general append, the checkpoint
writes and ``complete_tool_call`` (`convstore.store.append._batch`), a fork
(`convstore.store.history.branches`), a restore (`convstore.store.transfer.restore`) call
`queue_messages`; the one-statement append queues its range inside its own statement
(`convstore.db.postgres.append`).

Revisions 0011 to 0016 left this to a statement-level trigger with a transition table; queued by
the writes (revision 0017), an append of the benchmark turn costs the server 1.4% more
instructions than with no search objects, against 2.3-3.3% with the trigger. SQLite needs no
queue (its index finds new rows above a mark: `convstore.db.search_index`): there
`Statements.queue_for_search` (`convstore.db.statements.search.QUEUE` on PostgreSQL) is
``None`` and `queue_messages` does nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from convstore.db.tx import Tx

__all__ = ["queue_messages", "ranges"]


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
