"""PostgreSQL loads and windows in one round trip (`convstore.db.pg_load`).

Invariants:

- Taken for every `ConversationStore.load` on PostgreSQL that reads the stored head (no
  ``head_seq=``: another path's lifecycles are derived from all of it, in a transaction, by
  `convstore.store.reads`). The result equals what `convstore.store.reads.load_conversation`
  returns for the same arguments at the same snapshot: the same rows, decoded by the same
  functions (`convstore.store.message_reads.MessageDecoder`, `convstore.store.reads.calls_of`).
- The message cache works as on the transactional path: a load of a conversation it holds asks
  for the window's seqs, and reads (and decodes) whole rows only if the cache misses some; then
  that second statement's snapshot is the whole result. So a load is one round trip, two when
  another store wrote messages this one has not seen (or evicted them).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic_core import from_json
from typing_extensions import override

from convstore.db import pg_load
from convstore.db.mapping import decode_compactions, decode_conversation
from convstore.db.postgres import PostgresBackend
from convstore.db.tx import PassthroughCodec, Row
from convstore.errors import ConversationNotFoundError
from convstore.model import Conversation, Message
from convstore.store.message_cache import MessageCache
from convstore.store.message_reads import MessageDecoder
from convstore.store.reads import calls_of

__all__ = ["eligible", "load_in_one_statement"]


class _DriverCodec(PassthroughCodec):
    """Values as the statement returns them: times as SQLAlchemy's, JSON as the server's text.

    JSON is cast to text in the statement, so that only what the message cache misses is decoded.
    """

    @override
    def load_json(self, raw: Any) -> Any:
        return None if raw is None else from_json(raw)


_CODEC: Final = _DriverCodec()


class _Fetched(MessageDecoder):
    """The window's lifecycles and later messages, as the one statement returned them."""

    def __init__(self, cid: str, rows: pg_load.LoadRows, cache: MessageCache | None) -> None:
        assert rows.header is not None
        super().__init__(cid, rows.header[5], cache, _CODEC)
        self.rows = rows
        self.later_messages: list[Message] | None = None
        """The later messages, when the cache held them (the statement sent only seqs)."""

    @override
    def call_rows(
        self, *, everything: bool, reaching_back: bool, ids: list[str], first: int | None
    ) -> list[Row]:
        # The statement chose the same calls (every call, or those the window's parts name).
        return self.rows.calls

    @override
    def later(self, seqs: list[int]) -> list[Message]:
        # The statement returned exactly these: the results after the window of its calls.
        if self.later_messages is not None:
            return self.later_messages
        return self.decoded(self.rows.later)


def eligible(backend: object, head_seq: int | None) -> bool:
    """Whether a load may take the one-statement path on ``backend``."""
    return (
        head_seq is None
        and isinstance(backend, PostgresBackend)
        and backend.dialect_name == "postgresql"
    )


async def load_in_one_statement(
    backend: PostgresBackend,
    cid: str,
    tenant: str | None,
    last: int | None,
    before_seq: int | None,
    cache: MessageCache | None,
) -> Conversation:
    """The path root → head, whole or the newest ``last`` messages below ``before_seq``.

    A cache holding this conversation is asked first for the seqs the statement names
    (`pg_load.SQL_KEYS`); if it misses any (written by another store, or evicted), the whole
    rows are read, in a snapshot of their own, and only the misses decoded.
    """
    arguments = pg_load.arguments(cid, tenant, last, before_seq)
    if cache is not None and cache.holds_any(cid):
        rows = _split(await backend.fetch_statement(pg_load.SQL_KEYS, arguments), cid)
        reader = _Fetched(cid, rows, cache)
        messages = reader.kept([row[0] for row in rows.messages])
        reader.later_messages = reader.kept([row[0] for row in rows.later])
        if messages is not None and reader.later_messages is not None:
            return _conversation(reader, messages, last, before_seq)
    rows = _split(await backend.fetch_statement(pg_load.SQL_ROWS, arguments), cid)
    reader = _Fetched(cid, rows, cache)
    return _conversation(reader, reader.decoded(rows.messages), last, before_seq)


def _split(records: list[Any], cid: str) -> pg_load.LoadRows:
    rows = pg_load.split(records)
    if rows.header is None:
        raise ConversationNotFoundError(cid)
    return rows


def _conversation(
    reader: _Fetched, messages: list[Message], last: int | None, before_seq: int | None
) -> Conversation:
    rows = reader.rows
    assert rows.header is not None
    tool_calls = calls_of(reader, messages, everything=last is None and before_seq is None)
    compactions = decode_compactions(rows.compactions, _CODEC)
    return decode_conversation(rows.header, _CODEC, messages, tool_calls, compactions)
