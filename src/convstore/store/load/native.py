"""Reading the native records of a conversation's active path, without building messages.

An integration keeps its framework's own record of each message (`NativeRecord`) and, on
its common read path, needs exactly that record back. `load_native` reads one JSON column per
message and decodes it, instead of building typed messages, tool calls and lifecycles.

Invariants:

- The path and window are the ones `ConversationStore.load` returns for the same arguments
  (same header read, same ``seq`` ranges or parent walk), read in one transaction, so the
  entries line up one to one, in order, with ``load(...).messages`` at the same revision.
- Nothing here builds a model object or reads blob bytes; records are returned as decoded
  from the row, fresh on every call (a caller may keep or change them).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from convstore.db.statements.conversations import HeaderAt
from convstore.db.tx import Tx
from convstore.store.load.reads import header_row

__all__ = ["NativeEntry", "NativePath", "load_native"]

_NO_LIMIT = 2**62

NativeEntry = tuple[int, str | None, JsonValue]
"""One message of a `NativePath`: ``(seq, message id, record data)``.

The data is the message's `NativeRecord.data` when its record has the requested format, and
``None`` when the message has no record of that format (none at all, or another format's).
Plain tuples, not objects: a history has thousands of them and this is the read path that
must cost what the framework's own store costs.
"""


class NativePath(list[NativeEntry]):
    """The native records of a conversation's active path (or its newest ``last`` messages).

    A list of `NativeEntry` tuples, oldest first, plus the conversation header fields an
    integration needs to act on what it read (``revision`` for an ``expected_revision=``
    write, ``head_seq``, ``metadata``).
    """

    conversation_id: str
    revision: str
    """The conversation's revision at the time of the read."""
    head_seq: int | None
    """The head of the active path (`None` while the conversation is empty)."""
    metadata: dict[str, Any]
    """The conversation's metadata."""

    def __init__(
        self,
        entries: list[NativeEntry],
        *,
        conversation_id: str,
        revision: str,
        head_seq: int | None,
        metadata: dict[str, Any],
    ) -> None:
        super().__init__(entries)
        self.conversation_id = conversation_id
        self.revision = revision
        self.head_seq = head_seq
        self.metadata = metadata


def load_native(tx: Tx, cid: str, tenant: str | None, fmt: str, last: int | None) -> NativePath:
    """The ``fmt`` records of the active path, whole or its newest ``last`` messages."""
    st, codec = tx.statements, tx.codec
    header = header_row(tx, cid, tenant)
    head, branched = header[HeaderAt.head_seq], bool(header[HeaderAt.branched])
    if head is None or last == 0:
        found: list[Any] = []
    elif last is None and not branched:
        found = tx.fetch(st.select_native, {"cid": cid})
    else:
        window = {"cid": cid, "head": head, "before": _NO_LIMIT, "n": last or _NO_LIMIT}
        found = tx.fetch(st.select_native_path_window if branched else st.select_native_before,
                         window)  # fmt: skip
        found.reverse()
    load_json = codec.load_json
    entries: list[NativeEntry] = []
    append = entries.append
    for seq, message_id, native in found:
        data = None
        if native is not None:
            record = load_json(native)
            if record.get("format") == fmt:
                data = record.get("data")
        append((seq, message_id, data))
    return NativePath(
        entries,
        conversation_id=cid,
        revision=header[HeaderAt.revision],
        head_seq=head,
        metadata=codec.load_json(header[HeaderAt.metadata]) or {},
    )
