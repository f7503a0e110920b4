"""pydantic-ai's `ConversationStore` backed by convstore.

`ConvstoreConversationStore` implements the five storage primitives of
``pydantic_ai.conversation_store.ConversationStore`` (pydantic-ai-slim ≥ 2.68): ``read_record``,
``read_records``, ``write_record``, ``delete_record``, ``read_entry``, and overrides
``read_history`` to read a history with one query (of the entries' own records,
`ConversationStore.load_native`: no typed messages are built on the way). pydantic-ai itself
works out which messages are new, where a history branches and what a fork keeps.

How the framework's model maps onto convstore's:

- **Record → conversation.** A `ConversationRecord` is the convstore conversation whose id is
  its ``conversation_id``; its ``scope`` is the conversation's tenant. The record's other fields
  (revision, head entry, usage, deferred tool requests, branches, fork origin, ``updated_at``)
  are kept as JSON under the ``pydantic_ai.record`` key of the conversation's metadata, beside
  ``convstore.integration = "pydantic-ai"`` which `read_records` filters on. The conversation's
  head (`Conversation.head_seq`) is the record's head entry, so ``store.load`` and
  ``store.render`` show exactly the history pydantic-ai loads.
- **Entry → messages.** An entry is one stored `Message` whose ``Message.id`` is the entry id
  and whose native record (format ``pydantic-ai``) holds the entry: its ``parent_id`` and the
  message as ``ModelMessagesTypeAdapter`` dumps it, so every field survives; it loads back as
  pydantic-ai's own JSON round trip gives it (`BinaryImage` for an image), and a saved history
  is matched against the stored one by that JSON (`_unsaved_after_history`).
  A `ModelRequest` mixing roles (system prompt, tool returns, a user prompt) becomes
  a short run of canonical messages, one per role in part order (the tool results in a ``tool``
  message, the prompt in a ``user`` one); the last of the run carries the entry id and the native
  record, the others get ``<entry id>~<n>``. The canonical parts (text, thinking, tool calls,
  tool results, files) drive tool-call lifecycles and rendering to any provider.
- **Bytes → blobs.** Every `BinaryContent` (user files, images a tool returned, files a model
  made) becomes a canonical `FilePart` (a blob) and its base64 text in the native record is
  replaced by a placeholder naming the blob; reading an entry puts the same text back. No file
  bytes are ever in a database row.
- **Forks.** Entries are immutable and their ids global, so a fork's record may point into
  another record's history. convstore conversations do not share rows, so the first write of
  such a record copies the path root → fork point into the fork's conversation, with the same
  entry ids, messages and native records; the blobs are shared by hash, never copied. Entry
  ids are thus unique per conversation and may appear in several conversations, always holding
  the same message with the same parent. Deleting a record deletes its conversation: what
  another record reaches lives in that record's own conversation, and blobs go only when no
  conversation references them (``convstore gc``). Nothing another record reaches is freed.
- **Branches.** A rewritten history or ``branch()`` adds messages under an earlier entry
  (``append(parent_seq=...)``) and moves the head (``switch_branch``); the entries left stay as
  convstore branches, listed in the record's ``branches``.

Writes and concurrency: `write_record` checks the record's revision, then makes one
revision-checked convstore write, one transaction, that moves the conversation's head (an
append or a branch switch, or nothing) and replaces the record in its metadata (``metadata=``
of the same call). Of concurrent writers from the same revision exactly one succeeds; the
others raise `ConversationConflict` and have written nothing, and a writer killed mid-save
leaves the old record and history or the new ones, never a mix.

Limits: a conversation id is a convstore conversation id (1 to 64 characters). Listing reads
every record's header (records are ordered by the ``updated_at`` pydantic-ai stamps, which
convstore's listing order does not know). A tool result that is not JSON (a Python object a
tool returned) comes back as its JSON form, as with any serializing store. A history rewritten
from its very first message starts a new root in the record, which convstore cannot yet make
the active path of a non-empty conversation (there is no ``switch_branch`` to an empty path):
the record still loads exactly, but ``store.load``/``render`` of that conversation show the
earlier path before the new root.

Its modules:

- ``_parts``: pydantic-ai messages as canonical parts, and their call ids renamed where needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, cast

from pydantic import JsonValue, TypeAdapter

from convstore.errors import MissingDependencyError

try:
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
    )
    from pydantic_ai.conversation_store import ConversationStore as _FrameworkStore
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
    )
except ImportError as _missing:
    raise MissingDependencyError(__name__, "pydantic-ai-slim", "pydantic-ai") from _missing

from convstore.errors import (
    ConversationNotFoundError,
    MessageNotFoundError,
    RevisionConflictError,
    ToolCallConflictError,
)
from convstore.integrations._core.native_record import MARKER_KEY, NativeFormat
from convstore.integrations._core.store_handle import OwnsStore, StoreHandle
from convstore.integrations.pydantic_ai._parts import ALPHABET, canonical_messages, rename_calls
from convstore.model import Conversation, Message
from convstore.store import ConversationStore, NativePath

__all__ = ["ConvstoreConversationStore"]

FORMAT: Final = "pydantic-ai"
RECORD_KEY: Final = "pydantic_ai.record"
INSTRUCTIONS_KEY: Final = "instructions"
"""Beside the record's fields: the instructions of the head's newest request (their system
message is written only when a request changes them)."""
_OWN_KEYS: Final = frozenset({"head_seq", INSTRUCTIONS_KEY})  # head_seq: older releases wrote it
_RECORD = TypeAdapter(ConversationRecord)
_HINTS = 4096  # entry id → conversation id, so a history read after a record read is one query


def _binary(node: dict[str, JsonValue]) -> tuple[str, str | None] | None:
    """pydantic-ai's `BinaryContent` JSON: ``{"kind": "binary", "data": base64, "media_type"}``."""
    if node.get("kind") == "binary" and isinstance(node.get("data"), str):
        media_type = node.get("media_type")
        return "data", media_type if isinstance(media_type, str) else None
    return None


_RECORDS: Final = NativeFormat(FORMAT, _binary, ALPHABET)
"""Entries' messages as their native records (`BinaryContent` bytes as blob placeholders)."""


def _record_json(conv: Conversation) -> dict[str, JsonValue] | None:
    found = conv.metadata.get(RECORD_KEY)
    return found if isinstance(found, dict) else None


def _record_of(conv: Conversation) -> ConversationRecord | None:
    stored = _record_json(conv)
    if stored is None:
        return None
    fields = {k: v for k, v in stored.items() if k not in _OWN_KEYS}
    return _RECORD.validate_python({**fields, "conversation_id": conv.id, "scope": conv.tenant})


class ConvstoreConversationStore(OwnsStore, _FrameworkStore):
    """pydantic-ai conversations in a convstore `ConversationStore` (see the module docstring).

    Args:
        store: an open `ConversationStore` to share; the application closes it.
        url: a database URL; the backend leases the process's store on it (one per URL and
            event loop, shared by every integration using it) on first use and gives it back in
            `close` (the last user's closes it).
        blobs: the blob location for a store opened on ``url`` (its default otherwise).
    """

    def __init__(
        self,
        *,
        store: ConversationStore | None = None,
        url: str | None = None,
        blobs: str | None = None,
    ) -> None:
        self._handle = StoreHandle(store=store, url=url, blobs=blobs)
        self._hints: OrderedDict[str, str] = OrderedDict()

    close = OwnsStore.aclose  # this backend's name for it (``async with`` closes it too)

    # -- records ---------------------------------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The record of a conversation, or `None` when convstore has no such pydantic-ai record."""
        store = await self._handle.get()
        conv = await _header(store, conversation_id)
        record = _record_of(conv) if conv is not None else None
        if record is not None and record.head_id is not None:
            self._hint(record.head_id, conversation_id)
        return record

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        """The records (of ``scope``'s tenant), newest ``updated_at`` first, at most ``limit``."""
        store = await self._handle.get()
        records: list[ConversationRecord] = []
        cursor: str | None = None
        while limit is None or len(records) < limit:
            page = await store.list_conversations(
                tenant=scope, limit=100, cursor=cursor, metadata={MARKER_KEY: FORMAT}
            )
            for summary in page:
                stored = summary.metadata.get(RECORD_KEY)
                if isinstance(stored, dict):
                    fields = {k: v for k, v in stored.items() if k not in _OWN_KEYS}
                    records.append(
                        _RECORD.validate_python(
                            {**fields, "conversation_id": summary.id, "scope": summary.tenant}
                        )
                    )
            if not page.has_more or page.next_cursor is None:
                break
            cursor = page.next_cursor
        records.sort(key=lambda record: record.updated_at, reverse=True)
        return records if limit is None else records[:limit]

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store the record and its new entries; `ConversationConflict` on a stale revision."""
        store = await self._handle.get()
        cid = record.conversation_id
        conv = await _header(store, cid)
        stored = _record_of(conv) if conv is not None else None
        if (stored.revision if stored is not None else None) != expected_revision:
            raise ConversationConflict(cid)
        if conv is None:
            conv = await store.get_or_create_conversation(
                cid, tenant=record.scope, metadata={MARKER_KEY: FORMAT}
            )
            if _record_json(conv) is not None:  # another writer created it first
                raise ConversationConflict(cid)
        try:
            await self._write(store, conv, record, new_entries)
        except (RevisionConflictError, ConversationNotFoundError) as exc:
            raise ConversationConflict(cid) from exc
        if record.head_id is not None:
            self._hint(record.head_id, cid)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the conversation holding the record (its rows; shared blobs stay referenced)."""
        store = await self._handle.get()
        conv = await _header(store, conversation_id)
        stored = _record_of(conv) if conv is not None else None
        if conv is None or stored is None or stored.revision != expected_revision:
            raise ConversationConflict(conversation_id)
        try:  # revision-checked: a record saved since it was read is not deleted
            await store.delete_conversation(conversation_id, expected_revision=conv.revision)
        except (RevisionConflictError, ConversationNotFoundError) as exc:
            raise ConversationConflict(conversation_id) from exc

    async def _unsaved_after_history(
        self,
        record: ConversationRecord | None,
        conversation_id: str,
        messages: list[ModelMessage],
        branches: list[str],
        *,
        window: int | None,
    ) -> tuple[str | None, list[ModelMessage], list[str]]:
        """pydantic-ai's match of a history against the stored one, by serialized form.

        The framework matches with ``==``, under which a message that went through pydantic-ai's
        own JSON (an app sending the history to a client and back: `BinaryImage` where the run
        had `BinaryContent`) differs from the one stored and would be saved again as a branch.
        Both sides are compared as that JSON sees them; what the framework does with the result
        is unchanged. (An override of the framework's own comparison step: see docs.)
        """
        wrapped: Any = [_AsSerialized(message) for message in messages]
        parent_id, unsaved, left = await super()._unsaved_after_history(
            record, conversation_id, wrapped, branches, window=window
        )
        return parent_id, [cast("_AsSerialized", item).message for item in unsaved], left

    # -- entries ---------------------------------------------------------------------------------

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """The entry with that id, from whichever conversation holds it (`LookupError` if none)."""
        store = await self._handle.get()
        message = await store.get_message(entry_id)
        native = _RECORDS.data(message)
        if native is None:
            raise MessageNotFoundError(entry_id)
        return (await self._entries(store, [(entry_id, native)]))[0]

    async def read_history(
        self, head_id: str | None, *, limit: int | None = None
    ) -> list[ConversationEntry]:
        """The entries root → ``head_id`` (the last ``limit``), with one read in the usual case.

        The usual case is a record's head: its conversation's active path. A branch tip off the
        active path is walked entry by entry.
        """
        if head_id is None or limit == 0:
            return []
        store = await self._handle.get()
        cid = self._hints.get(head_id)
        if cid is None:
            cid = (await store.get_message(head_id)).conversation_id
            assert cid is not None  # set on every stored message
        # An entry is one message or a few: a window of 2 per entry usually holds the last
        # `limit` entries; when it does not, the whole path is read once.
        window = None if limit is None else 2 * limit + 2
        path = await store.load_native(cid, format=FORMAT, last=window)
        natives = _by_entry_id(path)
        chain: list[tuple[str, dict[str, JsonValue]]] = []
        entry_id: str | None = head_id
        while entry_id is not None and (limit is None or len(chain) < limit):
            native = natives.get(entry_id)
            if native is None and window is not None and len(path) == window:
                window = None
                path = await store.load_native(cid, format=FORMAT)
                natives = _by_entry_id(path)
                native = natives.get(entry_id)
            if native is None:  # off the active path: one query for this entry
                native = _RECORDS.data(await store.get_message(entry_id, conversation_id=cid))
                if native is None:
                    raise MessageNotFoundError(entry_id, cid)
            chain.append((entry_id, native))
            parent = native.get("parent_id")
            entry_id = parent if isinstance(parent, str) else None
        chain.reverse()
        return await self._entries(store, chain)

    async def _entries(
        self, store: ConversationStore, chain: list[tuple[str, dict[str, JsonValue]]]
    ) -> list[ConversationEntry]:
        dumped = await _RECORDS.restore(store, [native["message"] for _, native in chain])
        messages: list[ModelMessage] = ModelMessagesTypeAdapter.validate_python(dumped)
        entries = []
        for (entry_id, native), message in zip(chain, messages, strict=True):
            parent = native.get("parent_id")
            entries.append(
                ConversationEntry(
                    id=entry_id,
                    parent_id=parent if isinstance(parent, str) else None,
                    message=message,
                )
            )
        return entries

    # -- writing ---------------------------------------------------------------------------------

    async def _write(
        self,
        store: ConversationStore,
        conv: Conversation,
        record: ConversationRecord,
        new_entries: Sequence[ConversationEntry],
    ) -> None:
        """One revision-checked transaction: the new messages (or the head move) and the record.

        The record rides in the same store call as the rows it describes (``metadata=`` of
        `ConversationStore.append` / ``switch_branch``), so a crash or a concurrent writer
        leaves both or neither, and the conversation's head stays the record's head entry.
        """
        cid = conv.id
        anchor = new_entries[0].parent_id if new_entries else record.head_id
        parent_seq, copied = await self._anchor(store, conv, anchor)
        fields = _RECORD.dump_python(record, mode="json", exclude={"conversation_id", "scope"})
        instructions = _last_instructions(new_entries, _instructions_of(conv))
        if instructions is not None:
            fields[INSTRUCTIONS_KEY] = instructions
        metadata = {**conv.metadata, MARKER_KEY: FORMAT, RECORD_KEY: fields}
        # A copied path starts at its root; new entries follow the stored head's instructions.
        before = None if copied else _instructions_of(conv)
        messages = _entries_messages([*copied, *new_entries], before)
        if messages:
            try:
                await store.append(
                    cid,
                    messages,
                    expected_revision=conv.revision,
                    parent_seq=parent_seq,
                    on_conflict="keep-first",
                    metadata=metadata,
                )
            except ToolCallConflictError:
                # A rewritten history can repeat a call id that an earlier branch holds; call
                # ids are unique per conversation, so these calls get entry-qualified ids.
                await store.append(
                    cid,
                    rename_calls(messages),
                    expected_revision=conv.revision,
                    parent_seq=parent_seq,
                    on_conflict="keep-first",
                    metadata=metadata,
                )
        elif parent_seq is not None and parent_seq != conv.head_seq:
            await store.switch_branch(
                cid, head_seq=parent_seq, expected_revision=conv.revision, metadata=metadata
            )
        else:
            await store.update_conversation(cid, metadata=metadata, expected_revision=conv.revision)

    async def _anchor(
        self, store: ConversationStore, conv: Conversation, entry_id: str | None
    ) -> tuple[int | None, list[ConversationEntry]]:
        """Where new messages hang: the seq of ``entry_id`` in ``conv``, or copies of its path.

        ``entry_id`` lives in another conversation when the record is a fork: then its path is
        copied (same ids and records; blobs shared by hash) and the new messages follow it.
        """
        if entry_id is None:
            return None, []
        try:
            return (await store.get_message(entry_id, conversation_id=conv.id)).seq, []
        except MessageNotFoundError:
            pass
        try:
            path = await self.read_history(entry_id)
        except LookupError as exc:  # released by a concurrent delete: the fork point is gone
            raise ConversationConflict(conv.id) from exc
        return None, path

    def _hint(self, entry_id: str, conversation_id: str) -> None:
        self._hints[entry_id] = conversation_id
        self._hints.move_to_end(entry_id)
        while len(self._hints) > _HINTS:
            self._hints.popitem(last=False)


class _AsSerialized:
    """A message that compares equal to any message with the same pydantic-ai JSON."""

    __slots__ = ("_json", "message")

    def __init__(self, message: ModelMessage) -> None:
        self.message = message
        self._json: bytes = ModelMessagesTypeAdapter.dump_json([message])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _AsSerialized):
            return self._json == other._json
        if isinstance(other, ModelRequest | ModelResponse):
            theirs: bytes = ModelMessagesTypeAdapter.dump_json([other])
            return self._json == theirs
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable comparison, like the messages


async def _header(store: ConversationStore, cid: str) -> Conversation | None:
    """The conversation without its messages, or `None` when there is none."""
    try:
        return await store.load(cid, last=0)
    except ConversationNotFoundError:
        return None


def _by_entry_id(path: NativePath) -> dict[str, dict[str, JsonValue]]:
    """The entries a native read found, by entry id (the id of the message carrying each)."""
    return {mid: data for _, mid, data in path if mid is not None and isinstance(data, dict)}


def _entries_messages(
    entries: Sequence[ConversationEntry], instructions: str | None
) -> list[Message]:
    """The canonical messages of consecutive entries; ``instructions``: those before the first."""
    messages: list[Message] = []
    for entry in entries:
        messages.extend(_entry_messages(entry, instructions))
        if isinstance(entry.message, ModelRequest) and entry.message.instructions is not None:
            instructions = entry.message.instructions
    return messages


def _last_instructions(entries: Sequence[ConversationEntry], before: str | None) -> str | None:
    """The instructions in force after ``entries`` (pydantic-ai sends the newest request's)."""
    for entry in reversed(entries):
        if isinstance(entry.message, ModelRequest) and entry.message.instructions is not None:
            found: str = entry.message.instructions
            return found
    return before


def _instructions_of(conv: Conversation) -> str | None:
    stored = _record_json(conv)
    found = stored.get(INSTRUCTIONS_KEY) if stored is not None else None
    return found if isinstance(found, str) else None


def _entry_messages(entry: ConversationEntry, instructions: str | None) -> list[Message]:
    """The canonical messages of one entry, the last carrying its id and native record."""
    dumped: Any = ModelMessagesTypeAdapter.dump_python([entry.message], mode="json")[0]
    messages = canonical_messages(entry.id, dumped, previous_instructions=instructions)
    data: dict[str, JsonValue] = {
        "kind": entry.kind,
        "parent_id": entry.parent_id,
        "message": _RECORDS.strip(dumped),
    }
    return _RECORDS.attach(messages, entry.id, data)
