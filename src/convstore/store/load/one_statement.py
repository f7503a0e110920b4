"""PostgreSQL loads and windows in one round trip (`convstore.db.postgres.load`).

Invariants:

- Taken for every `ConversationStore.load` on PostgreSQL. The result equals what
  `convstore.store.load.reads.load_conversation` returns for the same arguments at the same
  snapshot: the same rows, decoded by the same functions (`convstore.store.load._message_reads.
  MessageDecoder`, `convstore.store.load.reads.calls_of`, and
  `convstore.store.load.reads.other_path` for a ``head_seq`` that is not the stored head).
- The message cache works as on the transactional path, in the same round trip: the statement
  is told the range of seqs the cache holds of the conversation (`MessageCache.held_range`)
  and sends those rows as their seq alone. Only if the cache turns out not to keep one of them
  (a seq in the range it never read, or one evicted meanwhile) is the load run again, without
  the range: a load is one round trip, two only then.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic_core import from_json
from typing_extensions import override

from convstore.db.backend import OneStatement
from convstore.db.mapping import decode_compactions, decode_conversation, decode_messages
from convstore.db.postgres import load as pg_load
from convstore.db.statements.conversations import HeaderAt
from convstore.db.statements.messages import MessageAt
from convstore.db.tx import PassthroughCodec, Row
from convstore.errors import ConversationNotFoundError
from convstore.model import Conversation, Message
from convstore.store.load._message_reads import MessageDecoder
from convstore.store.load.message_cache import MessageCache
from convstore.store.load.reads import calls_of, other_path

__all__ = ["load_in_one_statement"]


class _DriverCodec(PassthroughCodec):
    """Values as the statement returns them: times as SQLAlchemy's, JSON as the server's text.

    JSON is cast to text in the statement, so that only what the message cache misses is decoded.
    """

    @override
    def load_json(self, raw: Any) -> Any:
        return None if raw is None else from_json(raw)


_CODEC: Final = _DriverCodec()
_SEQ: Final = MessageAt.seq


class _Fetched(MessageDecoder):
    """The window's lifecycles and later messages, as the one statement returned them."""

    def __init__(self, cid: str, rows: pg_load.LoadRows, cache: MessageCache | None) -> None:
        assert rows.header is not None
        super().__init__(cid, rows.header[HeaderAt.created_at], cache, _CODEC)
        self.rows = rows
        self.later_messages: list[Message] = []
        """The messages after the window holding results of its calls (`pg_load.LoadRows`)."""

    @override
    def call_rows(
        self, *, everything: bool, reaching_back: bool, ids: list[str], first: int | None
    ) -> list[Row]:
        # The statement chose the calls that matter: every call, or those made or answered in
        # the window (of the calls its parts name, the others are skipped by `calls_of`).
        return self.rows.calls

    @override
    def later(self, seqs: list[int]) -> list[Message]:
        # The statement returned exactly these: the results after the window of its calls.
        return self.later_messages

    def window(self, rows: list[Row]) -> list[Message] | None:
        """The messages of ``rows`` (oldest first).

        ``None`` if one was sent as its seq alone and the cache does not keep it.
        """
        held = self.rows.held
        if not held:
            return self.decoded(rows)
        if self.cache is None:
            return None
        seqs = [row[_SEQ] for row in rows]
        found, missing = self.cache.lookup(self.instance, seqs)
        if not missing:
            return found  # type: ignore[return-value]  # no None when nothing is missing
        if not held.isdisjoint(missing):
            return None
        wanted = set(missing)
        decoded = decode_messages(self.cid, [row for row in rows if row[_SEQ] in wanted], _CODEC)
        return self._merged(found, seqs, decoded)


async def load_in_one_statement(  # noqa: PLR0917 (load's own arguments, in its order)
    runner: OneStatement,
    cid: str,
    tenant: str | None,
    last: int | None,
    before_seq: int | None,
    head_seq: int | None,
    cache: MessageCache | None,
) -> Conversation:
    """The path root → head (the stored one, or ``head_seq``).

    Whole, or the newest ``last`` messages below ``before_seq``.
    """
    held = None if cache is None else cache.held_range(cid)
    while True:
        arguments = pg_load.arguments(cid, tenant, last, before_seq, head_seq, held)
        rows = pg_load.split(await runner.fetch_statement(pg_load.SQL, arguments))
        if rows.header is None:
            raise ConversationNotFoundError(cid)
        reader = _Fetched(cid, rows, cache)
        messages = reader.window(rows.messages)
        later = reader.window(rows.later)
        if messages is not None and later is not None:
            break
        held = None  # the cache lacks a message of the range: read the rows whole
    reader.later_messages = later
    header = rows.header
    if head_seq is not None and head_seq != header[HeaderAt.head_seq]:
        return other_path(header, _CODEC, messages, rows.calls, rows.compactions, head_seq,
                          last, before_seq)  # fmt: skip
    return _conversation(reader, messages, last, before_seq)


def _conversation(
    reader: _Fetched, messages: list[Message], last: int | None, before_seq: int | None
) -> Conversation:
    rows = reader.rows
    assert rows.header is not None
    tool_calls = calls_of(reader, messages, everything=last is None and before_seq is None)
    compactions = decode_compactions(rows.compactions, _CODEC)
    return decode_conversation(rows.header, _CODEC, messages, tool_calls, compactions)
