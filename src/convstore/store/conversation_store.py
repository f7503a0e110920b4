"""`ConversationStore`: the single write boundary of convstore.

Invariants:

- Every write goes through this class: one database transaction per call, blobs stored before
  the rows that reference them, typed errors only.
- Methods that name a conversation take ``tenant=``. With a tenant, a conversation of another
  tenant (or of none) is reported exactly like a missing one: `ConversationNotFoundError`.
  Without one, the caller is trusted with every conversation.
- The store is an async context manager with an explicit lifecycle: using it before
  ``async with`` (or `open`) or after it closes raises `ClosedError`.
- Each public method checks its arguments, opens one transaction and calls one function of
  the modules behind it. The class is assembled from `convstore.store._connection` (opening
  and closing), `convstore.store.conversations.conversation_methods` (conversations as a whole) and
  `convstore.store.history.history_methods` (undo, fork, branches, cancel, compact) and
  `convstore.store.maintenance.retention_methods` (erase a tenant, prune by age); messages,
  tool-call results, rendering, attachments and export are here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, Literal

from convstore.errors import (
    InvalidInputError,
)
from convstore.limits import (
    check_count,
    check_key,
    check_seq,
    check_text,
)
from convstore.progress import Progress, silent
from convstore.store import _arguments
from convstore.store._connection import (
    DEFAULT_BLOB_TIMEOUT,
    DEFAULT_MAX_ATTACHMENT_SIZE,
    DEFAULT_MESSAGE_CACHE,
)
from convstore.store.conversations.conversation_methods import ConversationMethods
from convstore.store.history.history_methods import HistoryMethods
from convstore.store.maintenance.retention_methods import RetentionMethods

if TYPE_CHECKING:
    # Imported by the methods that use them: opening a store to search or list loads neither
    # the append pipeline nor the pydantic models nor the renderers (tests/cli/test_lazy_cli.py).
    from convstore.model import (
        Conversation,
        FilePart,
        Message,
        ToolCall,
        ToolDefinition,
        ToolOutput,
    )
    from convstore.rendering import Rendered
    from convstore.store.append.writes import OnConflict
    from convstore.store.checkpoints import Checkpoints
    from convstore.store.load.native import NativePath
    from convstore.store.transfer.export import ExportReport
    from convstore.transcript.planner import OrphanPolicy
    from convstore.transcript.reasoning import ReasoningPolicy

if TYPE_CHECKING:
    # Used at run time, bound as globals by `_import_append_pipeline` and `_import_reads`.
    from convstore.message_checks import check_messages  # noqa: TC004
    from convstore.store._results import AppendResult  # noqa: TC004
    from convstore.store.append import appending  # noqa: TC004
    from convstore.store.append.writes import NoChange  # noqa: TC004
    from convstore.store.attachments import BlobContext  # noqa: TC004
    from convstore.store.conversations import headers  # noqa: TC004
    from convstore.store.load import reads  # noqa: TC004

__all__ = [
    "DEFAULT_BLOB_TIMEOUT",
    "DEFAULT_MAX_ATTACHMENT_SIZE",
    "DEFAULT_MESSAGE_CACHE",
    "ConversationStore",
]


_loaded = {"append": False, "reads": False}
"""Whether the hot methods' modules are bound as this module's globals yet."""


def _import_append_pipeline() -> None:
    """Bind what `ConversationStore.append` uses as globals of this module, on its first call.

    The append pipeline is imported only by a process that appends (a search or a listing
    never loads it: tests/cli/test_lazy_cli.py), yet a function-level ``from m import n``
    costs about 2 µs on every call: five of them were 4% of an append's instructions.
    Bound once, they are plain global lookups.
    """
    global check_messages, appending, headers, reads, BlobContext, AppendResult, NoChange  # noqa: PLW0603
    from convstore.message_checks import check_messages
    from convstore.store._results import AppendResult
    from convstore.store.append import appending
    from convstore.store.append.writes import NoChange
    from convstore.store.attachments import BlobContext
    from convstore.store.conversations import headers
    from convstore.store.load import reads

    _loaded["append"] = _loaded["reads"] = True


def _import_reads() -> None:
    """Bind `convstore.store.load.reads` for `ConversationStore.load` at its first call (above)."""
    global reads  # noqa: PLW0603
    from convstore.store.load import reads

    _loaded["reads"] = True


class ConversationStore(ConversationMethods, HistoryMethods, RetentionMethods):
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
        dedupe: ``"tenant"`` (default): identical bytes are stored once per tenant, so no
            tenant can tell from timing or errors whether another stored a file. ``"global"``:
            once for everyone (less storage; but a tenant that times its own append of a file
            learns whether anyone stored it before).
        blob_timeout: seconds one blob storage request may take (default 30; ``None``: no
            limit); one that does not answer fails the operation with `BlobStorageError`.
        message_cache: how many decoded messages to keep (default 10,000; ``0``: none), so a
            reload decodes only messages it has not seen. Safe with other processes and stores
            writing the same database: stored messages never change and every load asks the
            database which messages its path holds (`convstore.store.load.message_cache`).
    """

    @property
    def checkpoints(self) -> Checkpoints:
        """The checkpoints of graph threads kept with their conversations (LangGraph's saver)."""
        from convstore.store.checkpoints import Checkpoints

        return Checkpoints(self)

    # -- messages -------------------------------------------------------------------------------

    async def append(
        self,
        conversation_id: str,
        messages: Message | Mapping[str, Any] | Sequence[Message | Mapping[str, Any]],
        *,
        tenant: str | None = None,
        idempotency_key: str | None = None,
        on_conflict: OnConflict = "raise",
        expected_revision: str | None = None,
        parent_seq: int | None = None,
        state_patches: Mapping[str, Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AppendResult:
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
            expected_revision: when given, the conversation must still be at this revision
                (`RevisionConflictError` otherwise, nothing written).
            parent_seq: the message the batch follows. Left out: the head. Another message:
                the batch starts a new branch from it (edit and regenerate) and the head
                moves to the batch's last message.
            state_patches: ``{conversation id: RFC 7396 merge patch}`` applied to the state of
                *other* conversations of the same tenant in the same transaction as the
                messages (a framework's app- or user-scoped state changed by the event it
                appends): both are stored, or neither. A patched conversation that does not
                exist or belongs to another tenant raises `ConversationNotFoundError`, and
                nothing is written. Each patched conversation gets a new revision.
            metadata: when given, replaces the conversation's metadata in the same transaction
                as the messages (as `update_conversation` would): a framework's own record of
                the conversation stored with the messages it describes, both or neither.

        Returns:
            The stored messages, with ``seq``, ``parent_seq``, ``conversation_id`` and
            ``created_at`` set and file bytes replaced by attachment references, as an
            `AppendResult`: a list whose ``revision`` is the conversation's new revision (for
            an empty batch, or a replayed idempotency key, the current one).
        """
        if not _loaded["append"]:
            _import_append_pipeline()
        self._check_ref(conversation_id, tenant)
        check_key(idempotency_key, "idempotency key")
        batch = _arguments.as_messages(messages)
        check_seq(parent_seq, "parent_seq")
        patches = _arguments.state_patches(conversation_id, state_patches)
        also = (
            headers.state_patcher(conversation_id, patches, _arguments.now()) if patches else None
        )
        if metadata is not None:
            checked = _arguments.metadata_object(metadata)
            also = headers.metadata_setter(conversation_id, checked, _arguments.now(), after=also)
        if not batch:
            if also is not None:
                raise InvalidInputError(
                    "state_patches and metadata are applied with an append of messages"
                )
            return AppendResult(
                revision=await self._backend.read(
                    lambda tx: reads.revision_of(tx, conversation_id, tenant)
                )
            )
        # Before any blob is written: a batch over a documented limit leaves nothing behind.
        check_messages(batch, max_attachment_size=self.blob_store.max_size)
        try:
            stored = await appending.append_batch(
                BlobContext.of(self),
                conversation_id,
                batch,
                tenant=tenant,
                idempotency_key=idempotency_key,
                on_conflict=on_conflict,
                expected_revision=expected_revision,
                parent_seq=parent_seq,
                also=also,
            )
        except NoChange as replay:
            replayed: AppendResult = replay.value
            return replayed
        if self._messages is not None:
            self._messages.put_appended(conversation_id, stored)
        return stored

    async def load(
        self,
        conversation_id: str,
        *,
        tenant: str | None = None,
        last: int | None = None,
        before_seq: int | None = None,
        head_seq: int | None = None,
    ) -> Conversation:
        """The conversation's active path (root → head), oldest first.

        ``last=N`` keeps only the newest N messages of it (and the calls they made or
        answered); ``before_seq=S`` only those below S. Together they page back through a long
        history: pass the first message's ``seq`` of one page as ``before_seq`` of the next.
        A window is a slice of messages, not a transcript a provider accepts as is:
        ``render(..., last=N)`` makes one.

        ``head_seq=N`` reads the path root → N instead, on any branch, without moving the
        stored head: its tool calls' lifecycles are those of that path (a call answered only on
        another branch is unanswered there), and the result's ``head_seq`` is N. A seq that is
        not a message of the conversation raises `MessageNotFoundError`.
        """
        if not _loaded["reads"]:
            _import_reads()
        self._check_ref(conversation_id, tenant)
        check_count(last, "last")
        check_seq(before_seq, "before_seq", minimum=0)
        check_seq(head_seq, "head_seq", minimum=0)
        cache = self._messages
        backend = self._backend
        runner = backend.one_statement
        if runner is not None:
            # Its module loads the PostgreSQL load statement: imported for such a store only.
            from convstore.store.load import one_statement as one_statement_load

            return await one_statement_load.load_in_one_statement(
                runner, conversation_id, tenant, last, before_seq, head_seq, cache
            )
        return await backend.read(
            lambda tx: reads.load_conversation(
                tx, conversation_id, tenant, last, before_seq, head_seq=head_seq, cache=cache
            )
        )

    async def load_native(
        self,
        conversation_id: str,
        *,
        format: str,
        tenant: str | None = None,
        last: int | None = None,
    ) -> NativePath:
        """The native records of the active path (root → head), oldest first, without messages.

        The read path of integrations that keep their framework's own record of each message:
        one JSON column per message, decoded, instead of typed messages and tool calls. Returns
        a `NativePath`: ``(seq, message id, data)`` tuples lined up one to one with
        ``load(conversation_id, last=last).messages`` at the same revision, where ``data`` is
        the message's `NativeRecord.data` if its record has this ``format`` and ``None`` if
        not (no record, or another format's); plus the ``revision``, ``head_seq`` and
        ``metadata`` the read saw. ``last=N``: only the newest N messages of the path.
        """
        from convstore.store.load import native

        self._check_ref(conversation_id, tenant)
        if format is None:
            raise InvalidInputError("format is the NativeRecord.format to read")
        check_text(format, "format", max_length=64)
        check_count(last, "last")
        return await self._backend.read(
            lambda tx: native.load_native(tx, conversation_id, tenant, format, last)
        )

    async def get_message(
        self,
        message_id: str,
        *,
        conversation_id: str | None = None,
        tenant: str | None = None,
    ) -> Message:
        """The stored message with this application id (`Message.id`).

        Without ``conversation_id``, searched in every conversation (of ``tenant``); if several
        hold it, the newest wins. `MessageNotFoundError` when there is none.
        """
        from convstore.store.load import reads

        self._check_ref(conversation_id, tenant)
        check_text(message_id, "message id")
        return await self._backend.read(
            lambda tx: reads.find_message(tx, message_id, conversation_id, tenant)
        )

    async def get_messages(
        self,
        conversation_id: str,
        seqs: Sequence[int],
        *,
        tenant: str | None = None,
    ) -> list[Message]:
        """The stored messages with these ``seq`` s, on any branch, in the order asked.

        A seq the conversation does not hold (never stored, or popped) raises
        `MessageNotFoundError`; a missing conversation `ConversationNotFoundError`.
        """
        from convstore.store.load import reads

        self._check_ref(conversation_id, tenant)
        for seq in seqs:
            check_seq(seq, "seq", minimum=0)
        wanted = list(seqs)
        return await self._backend.read(
            lambda tx: reads.messages_by_seq(tx, conversation_id, tenant, wanted)
        )

    # -- tool calls -----------------------------------------------------------------------------

    async def complete_tool_call(
        self,
        conversation_id: str,
        call_id: str,
        output: ToolOutput | Mapping[str, Any],
        *,
        tenant: str | None = None,
        expected_revision: str | None = None,
    ) -> ToolCall:
        """Store the result of a call (as a new tool message) and complete its lifecycle.

        Completing again with an equal output changes nothing; with a different output, or
        for a cancelled call, it raises `ToolCallConflictError`; an unknown call raises
        `ToolCallNotFoundError`. Returns the call as stored.

        ``output`` is a typed output, a mapping with a ``kind`` of a known output kind
        (validated as that output), or any other JSON value, stored as a `JsonOutput` (as
        `Message.tool_result` does).
        """
        from convstore.message_checks import check_messages
        from convstore.model import Message, Role, ToolResultPart
        from convstore.store.append import appending
        from convstore.store.append.writes import NoChange
        from convstore.store.attachments import BlobContext

        self._check_ref(conversation_id, tenant)
        check_key(call_id, "call id")
        output = _arguments.as_output(output)
        result = Message(role=Role.TOOL, parts=[ToolResultPart(call_id=call_id, output=output)])
        check_messages([result], max_attachment_size=self.blob_store.max_size)
        try:
            return await appending.complete_batch(
                BlobContext.of(self),
                conversation_id,
                result,
                tenant=tenant,
                expected_revision=expected_revision,
            )
        except NoChange as unchanged:
            same: ToolCall = unchanged.value
            return same

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
        tools: Sequence[ToolDefinition] | None = None,
        last: int | None = None,
        head_seq: int | None = None,
    ) -> Rendered:
        """Load a conversation and render it for ``target`` (see `convstore.render`).

        Only the attachments the target will receive inline are fetched, concurrently, and
        hash-verified. A missing or corrupted one raises (`AttachmentNotFoundError`,
        `AttachmentCorruptedError`), or with ``missing_attachments="placeholder"`` is rendered
        as a text note, listed in the diagnostics.

        ``tools`` defaults to the tool definitions kept with the conversation (`stored_tools`:
        an imported request's tools); pass ``[]`` to send none. ``last=N`` renders a window of
        the newest N messages that the target accepts (system prompt kept, no result without
        its call, the compaction summary kept; see `convstore.render`): the whole conversation
        is loaded so the window can reach back to the system prompt and the compaction.
        ``head_seq=N`` renders the path root → N of any branch (see `load`).
        """
        from convstore.rendering import render
        from convstore.store import attachments
        from convstore.store.attachments import BlobContext
        from convstore.store.conversations.tools import stored_tools
        from convstore.transcript.planner import attachments_needed

        self._check_ref(conversation_id, tenant)
        check_count(last, "last")
        conversation = await self.load(conversation_id, tenant=tenant, head_seq=head_seq)
        if tools is None:
            tools = stored_tools(conversation)
        needed = attachments_needed(
            conversation.messages,
            target=target,
            model=model,
            compaction=conversation.compaction,
            last=last,
        )
        fetched = await attachments.fetch_attachments(
            BlobContext.of(self), conversation_id, needed, missing_attachments
        )
        return render(
            conversation,
            target,
            model=model,
            reasoning=reasoning,
            orphan_results=orphan_results,
            attachments=fetched,
            tools=tools,
            last=last,
        )

    # -- attachments ----------------------------------------------------------------------------

    async def read_attachment(self, part: FilePart, *, tenant: str | None = None) -> bytes:
        """The bytes of a stored file part, hash-verified.

        With ``tenant``, the attachment must be referenced by a conversation of that tenant;
        otherwise it is reported as not found.
        """
        from convstore.store import attachments
        from convstore.store.attachments import BlobContext

        self._require_open()
        check_text(tenant, "tenant")
        if part.data is not None:
            return part.data
        if part.attachment is None:
            raise InvalidInputError("only stored or inline file parts have bytes to read")
        return await attachments.read_attachment(BlobContext.of(self), part, tenant)

    # -- data in and out ------------------------------------------------------------------------

    async def export(
        self,
        path: str | PathLike[str],
        *,
        tenant: str | None = None,
        conversation_ids: Sequence[str] | None = None,
        progress: Progress = silent,
    ) -> ExportReport:
        """Write conversations, their blobs and a manifest to the zip ``path``.

        Every conversation of ``tenant`` (``None``: of every tenant), or only
        ``conversation_ids``. ``convstore.imports.import_file(store, path, "convstore")``
        restores it exactly (`convstore.store.transfer.export`).
        """
        from convstore.store.transfer.export import export_archive

        self._require_open()
        return await export_archive(
            self, path, tenant=tenant, conversation_ids=conversation_ids, progress=progress
        )
