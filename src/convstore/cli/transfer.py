"""A whole conversation as one JSON document and back, through the public store API only.

``convstore show --json`` writes the document; ``convstore import --format convstore`` reads it.

The document::

    {"format": "convstore.conversation", "version": 1,
     "id", "title", "tenant", "metadata", "state", "tools",
     "messages": [...],        # the active path, as `dump_messages` writes messages
     "tool_calls": [...],      # lifecycles: id, name, status, result_kind, seq, result_seq
     "compactions": [...]}     # through_seq, summary

Invariants:

- ``show --json`` of an imported document equals the document when the ids are free and the
  source's seqs were consecutive: the import keeps the conversation id (a new one when it is
  taken), message ids, provenance, usage and native records, and replays lifecycles
  (``cancelled`` calls are cancelled at the first point where exactly they are pending) and
  compactions (their ``through_seq`` mapped to the new seqs).
- Store-made values that cannot be carried by a public call are left out of the document:
  timestamps and the ``revision``.
- Tools are shown once, as ``tools``; they live in the metadata key `TOOLS_KEY`.
- Attachments travel as references (the document stays small): the importing store must reach
  the same blob storage. Their bytes are read back through `ConversationStore.read_attachment`
  (hash-verified) and appended again, so the new conversation references the same blobs
  (content addressed: nothing is copied) in whichever database it lands.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from convstore.errors import ConversationNotFoundError, InvalidInputError
from convstore.model import (
    TOOL_DEFINITIONS,
    ContentOutput,
    Conversation,
    FilePart,
    Message,
    Part,
    Role,
    ToolCallStatus,
    ToolResultPart,
)
from convstore.model._base import describe_validation_error
from convstore.model.serialization import MESSAGES_ADAPTER
from convstore.store import ConversationStore
from convstore.store.conversations.tools import tools_metadata
from convstore.store.transfer.documents import FORMAT, VERSION, conversation_document

__all__ = ["FORMAT", "VERSION", "conversation_document", "import_document"]


def _field(document: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = document.get(key, default)
    if value is not None and not isinstance(value, kind):
        raise InvalidInputError(f"{FORMAT} document: {key!r} must be a {kind.__name__}")
    return value


async def import_document(
    store: ConversationStore, document: Any, *, title: str | None, tenant: str | None
) -> Conversation:
    """Store a conversation document as a new conversation; the conversation created."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInputError(f"not a {FORMAT} document")
    if document.get("version") != VERSION:
        raise InvalidInputError(f"{FORMAT} version {document.get('version')!r} is not supported")
    try:
        messages = MESSAGES_ADAPTER.validate_python(_field(document, "messages", list, []))
        tools = TOOL_DEFINITIONS.validate_python(_field(document, "tools", list, []))
    except ValidationError as exc:
        raise InvalidInputError(describe_validation_error(exc)) from exc
    calls = _field(document, "tool_calls", list, [])
    cancelled = {c.get("id") for c in calls if c.get("status") == ToolCallStatus.CANCELLED}
    metadata = {**_field(document, "metadata", dict, {}), **tools_metadata(tools)}
    state = _field(document, "state", dict, {})
    # Conversation state is written with update_state (schema v2 stores); a store without it
    # cannot carry state, which is refused rather than dropped.
    update_state = getattr(store, "update_state", None)
    if state and update_state is None:
        raise InvalidInputError("this convstore cannot import conversation state")
    cid = _field(document, "id", str, None)
    if cid is not None and await _exists(store, cid):
        cid = None
    conversation = await store.create_conversation(
        title=title if title is not None else _field(document, "title", str, None),
        tenant=tenant if tenant is not None else _field(document, "tenant", str, None),
        metadata=metadata,
        id=cid,
    )
    seqs = await _replay(store, conversation, messages, cancelled)
    if state and update_state is not None:
        await update_state(conversation.id, state, tenant=conversation.tenant)
    for compaction in _field(document, "compactions", list, []):
        through = seqs.get(compaction.get("through_seq"))
        if through is None:
            raise InvalidInputError(
                f"{FORMAT} document: a compaction covers seq {compaction.get('through_seq')!r}, "
                "which no message has"
            )
        await store.compact(
            conversation.id, through_seq=through, summary=str(compaction.get("summary", ""))
        )
    return conversation


async def _exists(store: ConversationStore, cid: str) -> bool:
    try:
        await store.load(cid, last=0)
    except ConversationNotFoundError:
        return False
    return True


async def _replay(
    store: ConversationStore,
    conversation: Conversation,
    messages: list[Message],
    cancelled: set[Any],
) -> dict[int | None, int | None]:
    """Append ``messages``, cancelling where exactly the cancelled calls are pending.

    Returns the old seq -> new seq map.
    """
    seqs: dict[int | None, int | None] = {}
    pending: set[str] = set()
    batch: list[Message] = []
    originals: list[int | None] = []

    async def flush() -> None:
        if not batch:
            return
        stored = await store.append(
            conversation.id,
            [await _with_bytes(store, m) for m in batch],
            tenant=conversation.tenant,
            on_conflict="keep-first",
        )
        seqs.update(zip(originals, (m.seq for m in stored), strict=True))
        batch.clear()
        originals.clear()

    for message in messages:
        batch.append(message)
        originals.append(message.seq)
        if message.role is Role.USER:
            pending.clear()  # calls left open before a user turn are interrupted, not pending
        pending |= {p.id for p in message.tool_calls}
        pending -= {r.call_id for r in message.tool_results}
        if pending and pending <= cancelled:
            # Exactly the calls the source cancelled are open: cancel them here, before a
            # later user turn would interrupt them or a late result complete them.
            await flush()
            await store.cancel_tool_calls(conversation.id, tenant=conversation.tenant)
            pending.clear()
    await flush()
    return seqs


async def _with_bytes(store: ConversationStore, message: Message) -> Message:
    """``message`` as a new message to append: store-set fields cleared, files as bytes."""

    async def file(part: FilePart) -> FilePart:
        if part.attachment is None:
            return part
        data = await store.read_attachment(part)
        return FilePart(media_type=part.media_type, filename=part.filename, data=data)

    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, FilePart):
            parts.append(await file(part))
        elif isinstance(part, ToolResultPart) and isinstance(part.output, ContentOutput):
            content = [await file(p) if isinstance(p, FilePart) else p for p in part.output.parts]
            output = part.output.model_copy(update={"parts": content})
            parts.append(part.model_copy(update={"output": output}))
        else:
            parts.append(part)
    return message.model_copy(
        update={"parts": parts, "seq": None, "parent_seq": None, "conversation_id": None}
    )
