"""`ConversationStore`: the single write boundary of convstore.

Invariants:

- Every write goes through this class: one database transaction per call, blobs stored before
  the rows that reference them, typed errors only.
- Methods that name a conversation take ``tenant=``. With a tenant, a conversation of another
  tenant (or of none) is reported exactly like a missing one: `ConversationNotFoundError`.
  Without one, the caller is trusted with every conversation.
- The store is an async context manager with an explicit lifecycle: using it before
  ``async with`` (or `open`) or after it closes raises `ClosedError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import JsonValue, TypeAdapter, ValidationError

from convstore.blobs import BlobStore
from convstore.db import DEFAULT_URL, create_backend, sqlite_path
from convstore.db.backend import Backend
from convstore.errors import (
    AttachmentCorruptedError,
    AttachmentNotFoundError,
    ClosedError,
    InvalidInputError,
    InvalidMessageError,
)
from convstore.limits import (
    MAX_CONVERSATION_ID_LENGTH,
    MAX_LIST_LIMIT,
    check_count,
    check_json_object,
    check_key,
    check_messages,
    check_text,
)
from convstore.model import (
    Compaction,
    ContentOutput,
    Conversation,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    ToolCall,
    ToolOutput,
    ToolResultPart,
)
from convstore.model._base import describe_validation_error
from convstore.rendering import Rendered, render
from convstore.store import reads, writes
from convstore.store.attachments import attachment_rows, store_files
from convstore.store.ids import new_id
from convstore.store.reads import ConversationSummary
from convstore.store.writes import AppendPlan, NoChange, OnConflict
from convstore.transcript.planner import OrphanPolicy, attachments_needed
from convstore.transcript.reasoning import ReasoningPolicy

__all__ = ["DEFAULT_BLOB_TIMEOUT", "DEFAULT_MAX_ATTACHMENT_SIZE", "ConversationStore"]

DEFAULT_MAX_ATTACHMENT_SIZE = 20 * 1024 * 1024
DEFAULT_BLOB_TIMEOUT = 30.0
_FETCH_CONCURRENCY = 16

_MESSAGE = TypeAdapter(Message)
_OUTPUT: TypeAdapter[ToolOutput] = TypeAdapter(ToolOutput)
_METADATA = TypeAdapter(dict[str, JsonValue])


def _check_ref(conversation_id: str, tenant: str | None) -> None:
    """Refuse ids no database can look up alike (a longer one simply is not found)."""
    check_text(conversation_id, "conversation id")
    check_text(tenant, "tenant")


def _now() -> datetime:
    return datetime.now(UTC)


def _default_blobs(url: str) -> str:
    database = sqlite_path(url) if url.startswith("sqlite") else None
    if database is not None:
        return str(database.parent / "convstore-blobs")
    if url.startswith("sqlite"):  # in-memory database: in-memory blobs, unique to this store
        return f"memory://convstore-{new_id().lower()}"
    return str(Path.cwd() / "convstore-blobs")


def _as_messages(messages: Message | Mapping[str, Any] | Sequence[Any]) -> list[Message]:
    if isinstance(messages, Message):
        return [messages]
    if isinstance(messages, Mapping):
        messages = [messages]
    if isinstance(messages, str | bytes) or not isinstance(messages, Iterable):
        raise InvalidMessageError(
            "append takes a Message, a mapping or a sequence of them, "
            f"not {type(messages).__name__}"
        )
    out = []
    for item in messages:
        if isinstance(item, Message):
            out.append(item)
            continue
        try:
            out.append(_MESSAGE.validate_python(item))
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc
    return out


_OUTPUT_KINDS = frozenset({"json", "content", "error"})


def _as_output(output: Any) -> ToolOutput:
    """A typed output from what `complete_tool_call` was given (see there)."""
    if isinstance(output, JsonOutput | ContentOutput | ErrorOutput):
        return output
    if isinstance(output, Mapping) and output.get("kind") in _OUTPUT_KINDS:
        try:
            return _OUTPUT.validate_python(output)
        except ValidationError as exc:
            raise InvalidMessageError(describe_validation_error(exc)) from exc
    if isinstance(output, Mapping):
        output = dict(output)
    return JsonOutput(value=output)


class ConversationStore:
    """Conversations as rows in SQLite or PostgreSQL, attachments as blobs in fsspec storage.

    Args:
        url: SQLAlchemy async URL: ``sqlite+aiosqlite:///path.db`` (the default is
            ``convstore.db`` in the working directory) or ``postgresql+asyncpg://...``.
        blobs: fsspec URL or directory for attachment bytes; by default a ``convstore-blobs``
            directory beside the SQLite file.
        max_attachment_size: largest attachment accepted, in bytes (checked while streaming).
        auto_migrate: create the schema in an empty database on open. ``None`` (default):
            only for SQLite; a server database is migrated explicitly (``convstore migrate``).
        sqlite_synchronous: ``"full"`` (default, durable across power loss) or ``"normal"``
            (WAL-safe against crashes, faster commits).
        blob_options: extra fsspec storage options (credentials, endpoint).
        blob_timeout: seconds one blob storage request may take (default 30; ``None``: no
            limit); one that does not answer fails the operation with `BlobStorageError`.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        blobs: str | None = None,
        max_attachment_size: int = DEFAULT_MAX_ATTACHMENT_SIZE,
        auto_migrate: bool | None = None,
        sqlite_synchronous: Literal["full", "normal"] = "full",
        blob_options: Mapping[str, Any] | None = None,
        blob_timeout: float | None = DEFAULT_BLOB_TIMEOUT,
    ) -> None:
        self.url = url
        self.blobs_url = blobs if blobs is not None else _default_blobs(url)
        self._backend: Backend = create_backend(
            url, auto_migrate=auto_migrate, sqlite_synchronous=sqlite_synchronous
        )
        self._blob_args: dict[str, Any] = {
            "max_size": max_attachment_size,
            "storage_options": blob_options,
            "timeout": blob_timeout,
        }
        self._blobs: BlobStore | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> Self:
        """Connect (and create the schema of a new SQLite database)."""
        if self._blobs is None:
            blobs = self._blobs = BlobStore(self.blobs_url, **self._blob_args)
            try:
                await self._backend.open()
            except BaseException:
                # A close() racing this open may already have taken and closed the blob store.
                if self._blobs is blobs:
                    self._blobs = None
                await blobs.close()
                raise
        return self

    async def close(self) -> None:
        """Release connections (idempotent)."""
        blobs, self._blobs = self._blobs, None
        await self._backend.close()
        if blobs is not None:
            await blobs.close()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _require_open(self) -> BlobStore:
        if self._blobs is None:
            raise ClosedError("the store is not open: use `async with ConversationStore(...)`")
        return self._blobs

    @property
    def blob_store(self) -> BlobStore:
        """The blob store (open stores only)."""
        return self._require_open()

    @property
    def backend(self) -> Backend:
        """The database backend (for maintenance tools and tests)."""
        return self._backend

    async def migrate(self, revision: str = "head") -> None:
        """Upgrade the database schema to ``revision``."""
        await self._backend.migrate(revision)

    # -- conversations --------------------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        title: str | None = None,
        tenant: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        id: str | None = None,
    ) -> Conversation:
        """A new, empty conversation. ``id`` lets the application choose the id."""
        self._require_open()
        try:
            meta = _METADATA.validate_python(dict(metadata or {}))
        except (ValidationError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"metadata must be a JSON object: {exc}") from exc
        check_json_object(meta, "metadata")
        cid = id if id is not None else new_id()
        check_text(cid, "conversation id", max_length=MAX_CONVERSATION_ID_LENGTH)
        check_text(title, "title")
        check_key(tenant, "tenant")
        now = _now()

        def insert(tx: Any) -> None:
            codec = tx.codec
            row = (cid, tenant, title, codec.dump_json(meta or None), 0, codec.dump_time(now),
                   codec.dump_time(now))  # fmt: skip
            writes.create_conversation(tx, row)

        await self._backend.write(insert)
        return Conversation(
            id=cid, title=title, tenant=tenant, metadata=meta, created_at=now, updated_at=now
        )

    async def list_conversations(
        self, *, tenant: str | None = None, limit: int = 100
    ) -> list[ConversationSummary]:
        """The most recently updated conversations (of ``tenant``, when given).

        ``limit`` is 0 to `~convstore.limits.MAX_LIST_LIMIT`.
        """
        self._require_open()
        check_text(tenant, "tenant")
        check_count(limit, "limit", maximum=MAX_LIST_LIMIT)
        return await self._backend.read(lambda tx: reads.list_conversations(tx, tenant, limit))

    async def delete_conversation(self, conversation_id: str, *, tenant: str | None = None) -> None:
        """Delete a conversation and everything in it; its blobs become collectable."""
        self._require_open()
        _check_ref(conversation_id, tenant)
        await self._backend.write(
            lambda tx: writes.delete_conversation(tx, conversation_id, tenant)
        )

    # -- messages -------------------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Message | Mapping[str, Any] | Sequence[Message | Mapping[str, Any]],
        *,
        tenant: str | None = None,
        idempotency_key: str | None = None,
        on_conflict: OnConflict = "raise",
    ) -> list[Message]:
        """Store messages at the end of a conversation, atomically; the stored copies.

        Args:
            conversation_id: the conversation.
            messages: a `Message`, a mapping validated as one, or a sequence of them.
            tenant: when given, the conversation must belong to it.
            idempotency_key: a repeat of an append with the same key returns the messages the
                first one stored, without writing.
            on_conflict: what a result that contradicts a call's stored result does:
                ``"raise"`` (`ToolCallConflictError`, nothing written) or ``"keep-first"``
                (the later result is kept as history; the call keeps its first result).

        Returns:
            The stored messages, with ``seq`` and ``created_at`` set and file bytes replaced
            by attachment references.
        """
        _check_ref(conversation_id, tenant)
        check_key(idempotency_key, "idempotency key")
        batch = _as_messages(messages)
        if not batch:
            return []
        # Before any blob is written: a batch over a documented limit leaves nothing behind.
        check_messages(batch, max_attachment_size=self.blob_store.max_size)
        stored_messages, blobs = await store_files(self.blob_store, batch)
        plan = AppendPlan(
            conversation_id=conversation_id,
            messages=stored_messages,
            attachments=attachment_rows(blobs),
            now=_now(),
            tenant=tenant,
            idempotency_key=idempotency_key,
            on_conflict=on_conflict,
        )
        try:
            stored, _ = await self._backend.write(lambda tx: writes.append_messages(tx, plan))
        except NoChange as replay:
            replayed: list[Message] = replay.value[0]
            return replayed
        return stored

    async def load(
        self, conversation_id: str, *, tenant: str | None = None, last: int | None = None
    ) -> Conversation:
        """The conversation; with ``last=N``, only its newest N messages (and their calls)."""
        self._require_open()
        _check_ref(conversation_id, tenant)
        check_count(last, "last")
        return await self._backend.read(
            lambda tx: reads.load_conversation(tx, conversation_id, tenant, last)
        )

    # -- tool calls -----------------------------------------------------------------------------

    async def complete_tool_call(
        self,
        conversation_id: str,
        call_id: str,
        output: ToolOutput | Mapping[str, Any],
        *,
        tenant: str | None = None,
    ) -> ToolCall:
        """Store the result of a call (as a new tool message) and complete its lifecycle.

        Completing again with an equal output changes nothing; with a different output, or
        for a cancelled call, it raises `ToolCallConflictError`; an unknown call raises
        `ToolCallNotFoundError`. Returns the call as stored.

        ``output`` is a typed output, a mapping with a ``kind`` of a known output kind
        (validated as that output), or any other JSON value, stored as a `JsonOutput` (as
        `Message.tool_result` does).
        """
        _check_ref(conversation_id, tenant)
        check_key(call_id, "call id")
        output = _as_output(output)
        result = Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, output=output)])
        check_messages([result], max_attachment_size=self.blob_store.max_size)
        (stored,), blobs = await store_files(self.blob_store, [result])
        plan = AppendPlan(
            conversation_id=conversation_id,
            messages=[stored],
            attachments=attachment_rows(blobs),
            now=_now(),
            tenant=tenant,
            completion=True,
        )
        try:
            _, call = await self._backend.write(lambda tx: writes.append_messages(tx, plan))
        except NoChange as unchanged:
            same: ToolCall = unchanged.value
            return same
        assert call is not None  # completion mode always reports the call
        return call

    async def cancel_tool_calls(
        self, conversation_id: str, *, tenant: str | None = None
    ) -> list[str]:
        """Move every pending call to ``cancelled``; the ids of the calls it cancelled."""
        self._require_open()
        _check_ref(conversation_id, tenant)
        now = _now()
        return await self._backend.write(
            lambda tx: writes.cancel_pending(tx, conversation_id, tenant, now)
        )

    async def compact(
        self,
        conversation_id: str,
        *,
        through_seq: int,
        summary: str,
        tenant: str | None = None,
    ) -> Compaction:
        """Record a summary standing in for messages up to ``through_seq`` when rendering.

        Non-destructive: every message stays stored and loadable.
        """
        self._require_open()
        _check_ref(conversation_id, tenant)
        check_count(through_seq, "through_seq")
        check_text(summary, "summary")
        now = _now()
        return await self._backend.write(
            lambda tx: writes.compact(tx, conversation_id, tenant, through_seq, summary, now)
        )

    # -- rendering ------------------------------------------------------------------------------

    async def render(
        self,
        conversation_id: str,
        target: str,
        *,
        model: str | None = None,
        tenant: str | None = None,
        reasoning: ReasoningPolicy = "drop",
        orphan_results: OrphanPolicy = "drop",
        missing_attachments: Literal["error", "placeholder"] = "error",
    ) -> Rendered:
        """Load a conversation and render it for ``target`` (see `convstore.render`).

        Only the attachments the target will receive inline are fetched, concurrently, and
        hash-verified. A missing or corrupted one raises (`AttachmentNotFoundError`,
        `AttachmentCorruptedError`), or with ``missing_attachments="placeholder"`` is rendered
        as a text note, listed in the diagnostics.
        """
        conversation = await self.load(conversation_id, tenant=tenant)
        needed = attachments_needed(
            conversation.messages,
            target=target,
            model=model,
            compaction=conversation.compaction,
        )
        fetched = await self._fetch_attachments(needed, missing_attachments)
        return render(
            conversation,
            target,
            model=model,
            reasoning=reasoning,
            orphan_results=orphan_results,
            attachments=fetched,
        )

    async def _fetch_attachments(
        self, hashes: set[str], missing: Literal["error", "placeholder"]
    ) -> dict[str, bytes]:
        blobs = self._require_open()
        limit = asyncio.Semaphore(_FETCH_CONCURRENCY)

        async def fetch(sha: str) -> bytes | None:
            async with limit:
                try:
                    return await blobs.get(sha)
                except (AttachmentNotFoundError, AttachmentCorruptedError):
                    if missing == "error":
                        raise
                    return None

        ordered = sorted(hashes)
        results = await asyncio.gather(*(fetch(sha) for sha in ordered))  # raises the first error
        return {sha: data for sha, data in zip(ordered, results, strict=True) if data is not None}

    # -- attachments ----------------------------------------------------------------------------

    async def read_attachment(self, part: FilePart, *, tenant: str | None = None) -> bytes:
        """The bytes of a stored file part, hash-verified.

        With ``tenant``, the attachment must be referenced by a conversation of that tenant;
        otherwise it is reported as not found.
        """
        check_text(tenant, "tenant")
        if part.data is not None:
            return part.data
        if part.attachment is None:
            raise InvalidInputError("only stored or inline file parts have bytes to read")
        sha = part.attachment.sha256
        if tenant is None:
            return await self.blob_store.get(sha)
        visible = await self._backend.read(lambda tx: reads.attachment_visible(tx, sha, tenant))
        if not visible:
            raise AttachmentNotFoundError.not_visible(sha)
        try:
            return await self.blob_store.get(sha)
        except AttachmentNotFoundError as exc:
            # Worded as for another tenant's: a tenant learns nothing from the difference.
            raise AttachmentNotFoundError.not_visible(sha) from exc
