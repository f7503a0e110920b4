"""A conversation's messages as a load reads them: rows decoded once, through the message cache.

Invariants:

- A message row is decoded only when the cache (`convstore.store.load.message_cache`) does not keep
  that (conversation instance, seq) already; what is decoded is kept from then on.
- A load's result is one snapshot: kept messages stand for rows the same read found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from typing_extensions import override

from convstore.db.mapping import decode_messages
from convstore.db.statements.messages import MessageAt
from convstore.db.tx import Codec, Row, Statement, Tx
from convstore.model import Message
from convstore.store.load.message_cache import MessageCache

__all__ = ["MessageDecoder", "TxMessages"]

_SEQ: Final = MessageAt.seq


class MessageDecoder:
    """Decodes a conversation's message rows through the message cache (``cache``).

    Subclasses say where a load's tool-call lifecycles and later messages come from
    (`call_rows`, `later`): `TxMessages` reads them in the load's transaction,
    `convstore.store.load.one_statement` has them from its one statement.
    """

    def __init__(self, cid: str, created: Any, cache: MessageCache | None, codec: Codec) -> None:
        self.cid = cid
        self.instance = (cid, created)
        """The conversation instance (id, creation time) of `convstore.store.load.message_cache`."""
        self.cache = cache
        self.codec = codec

    def decoded(self, rows: list[Row]) -> list[Message]:
        """Messages of whole ``rows`` read already (oldest first): only cache misses decoded."""
        cid, cache, instance, codec = self.cid, self.cache, self.instance, self.codec
        if cache is None or not cache.holds(instance):
            messages = decode_messages(cid, rows, codec)
            if cache is not None:
                cache.put(instance, messages)
            return messages
        seqs = [row[_SEQ] for row in rows]
        found, missing = cache.lookup(instance, seqs)
        if not missing:
            return found  # type: ignore[return-value]  # no None when nothing is missing
        wanted = set(missing)
        decoded = decode_messages(cid, [row for row in rows if row[_SEQ] in wanted], codec)
        return self._merged(found, seqs, decoded)

    def _merged(
        self, found: list[Message | None], seqs: list[int], decoded: list[Message]
    ) -> list[Message]:
        """``found`` (kept for ``seqs``) completed with the ``decoded`` misses, now kept too."""
        assert self.cache is not None
        by_seq = {m.seq: m for m in decoded}
        # One snapshot: every seq just read has its row.
        messages = [m if m is not None else by_seq[s] for m, s in zip(found, seqs, strict=True)]
        if len(messages) > self.cache.capacity:
            # More than it can keep: keep the newest (the next window's), not the last decoded.
            self.cache.put(self.instance, sorted(messages, key=_seq_of))
        else:
            self.cache.put(self.instance, decoded)
        return messages

    def kept(self, seqs: list[int]) -> list[Message] | None:
        """The messages with these seqs if the cache keeps every one of them, else ``None``."""
        if self.cache is None:
            return None
        found, missing = self.cache.lookup(self.instance, seqs)
        return None if missing else found  # type: ignore[return-value]  # none missing

    def call_rows(
        self, *, everything: bool, reaching_back: bool, ids: list[str], first: int | None
    ) -> list[Row]:
        """Lifecycle rows (`LifecycleRow`) of every call (``everything``) or of ``ids``.

        With ``reaching_back``, each row goes on with the name, provider id and arguments of a
        call made before ``first`` (``None`` for the others).
        """
        raise NotImplementedError

    def later(self, seqs: list[int]) -> list[Message]:
        """The messages with these sequence numbers, by ``seq``."""
        raise NotImplementedError


class TxMessages(MessageDecoder):
    """Reads messages through the message cache: rows decoded once, then only their keys.

    A conversation the cache holds nothing of is read as whole rows (nothing to gain from
    asking for keys first); otherwise its (seq, created_at) keys come first and only the rows
    the cache misses are fetched and decoded, in the same read transaction.
    """

    def __init__(self, tx: Tx, cid: str, created: Any, cache: MessageCache | None) -> None:
        super().__init__(cid, created, cache, tx.codec)
        self.tx = tx

    @override
    def call_rows(
        self, *, everything: bool, reaching_back: bool, ids: list[str], first: int | None
    ) -> list[Row]:
        tx, st = self.tx, self.tx.statements
        if everything:
            return tx.fetch(st.select_call_states, {"cid": self.cid})
        stmt = st.select_call_states_reaching_back if reaching_back else st.select_call_states_in
        return tx.fetch(stmt, {"cid": self.cid, "ids": self.codec.dump_json(ids), "first": first})

    @override
    def later(self, seqs: list[int]) -> list[Message]:
        return self.at(seqs)

    def at(self, seqs: Iterable[int]) -> list[Message]:
        """The messages with these sequence numbers (those that exist), by ``seq``."""
        wanted = list(seqs)
        if not wanted:
            return []
        params = {"cid": self.cid, "seqs": self.tx.codec.dump_json(wanted)}
        st = self.tx.statements
        return self.read(st.select_messages_in, st.select_message_keys_in, params)

    def read(
        self,
        rows: Statement,
        keys: Statement,
        params: Mapping[str, Any],
        *,
        stream: bool = False,
    ) -> list[Message]:
        """Messages of ``rows`` (whose key form is ``keys``), in that statement's order."""
        tx, cid, cache, instance = self.tx, self.cid, self.cache, self.instance
        if cache is None or not cache.holds(instance):
            fetched = tx.stream(rows, params) if stream else tx.fetch(rows, params)
            messages = decode_messages(cid, fetched, tx.codec)
            if cache is not None:
                # Oldest first, so the newest are the last to be evicted (windows read newest
                # first).
                newest_first = len(messages) > 1 and _seq_of(messages[0]) > _seq_of(messages[-1])
                cache.put(instance, messages[::-1] if newest_first else messages)
            return messages
        seqs = [seq for (seq,) in tx.fetch(keys, params)]  # `MESSAGE_KEY_COLUMNS`
        found, missing = cache.lookup(instance, seqs)
        if not missing:
            return found  # type: ignore[return-value]  # no None when nothing is missing
        st = tx.statements
        decoded = decode_messages(
            cid,
            tx.fetch(st.select_messages_in, {"cid": cid, "seqs": tx.codec.dump_json(missing)}),
            tx.codec,
        )
        return self._merged(found, seqs, decoded)


def _seq_of(message: Message) -> int:
    return message.seq or 0
