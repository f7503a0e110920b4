"""Every error convstore raises on purpose.

One tree, rooted in :class:`ConvstoreError`, so that ``except ConvstoreError`` catches all of
it and nothing else::

    ConvstoreError
    ├── InvalidInputError (ValueError)           bad data handed to the library
    │   ├── InvalidMessageError                  a message or part that breaks the model's rules
    │   ├── MalformedPayloadError                provider JSON that `parse` cannot read
    │   │   └── MalformedExportError             an export file that cannot be read (names where)
    │   │       ├── ExportLimitError             an export crossed an import limit (names which)
    │   │       └── ConversationRefusedError     one conversation of an export cannot be stored
    │   ├── UnsupportedFormatError               an unknown parse source or render target
    │   ├── AttachmentTooLargeError              over the per-attachment size limit
    │   └── MediaTypeMismatchError               declared media type contradicted by the bytes
    ├── NotFoundError (LookupError)
    │   ├── ConversationNotFoundError            missing, deleted or another tenant's (never says)
    │   │   └── ConversationOwnedByAnotherTenantError  an id to create is another tenant's
    │   ├── ToolCallNotFoundError
    │   ├── MessageNotFoundError                 no message with that id (in that conversation)
    │   ├── AttachmentNotFoundError              a referenced blob is missing
    │   └── DatabaseNotFoundError                no SQLite file where a command reads one
    ├── ConflictError
    │   ├── ToolCallConflictError                a second, different completion; a reused call id
    │   └── RevisionConflictError                a stale ``expected_revision``; nothing written
    ├── AttachmentCorruptedError                 stored bytes no longer match their hash
    ├── SchemaError
    │   └── SchemaOutOfDateError                 the database is behind the migration head
    ├── StorageError                             the database or blob backend failed
    │   ├── DatabaseError
    │   └── BlobStorageError
    ├── ClosedError                              the store was used outside ``async with``
    ├── AsyncOnlyError (NotImplementedError)     a blocking method of an async-only integration
    └── MissingDependencyError (ImportError)     an optional extra is not installed (names it)

Driver and filesystem exceptions never escape: they are translated where they are caught
(``db``, ``blobs``) and chained with ``raise ... from exc`` so the cause stays visible.
"""

from __future__ import annotations

__all__ = [
    "AsyncOnlyError",
    "AttachmentCorruptedError",
    "AttachmentNotFoundError",
    "AttachmentTooLargeError",
    "BlobStorageError",
    "ClosedError",
    "ConflictError",
    "ConversationNotFoundError",
    "ConversationOwnedByAnotherTenantError",
    "ConversationRefusedError",
    "ConvstoreError",
    "DatabaseError",
    "DatabaseNotFoundError",
    "ExportLimitError",
    "InvalidInputError",
    "InvalidMessageError",
    "MalformedExportError",
    "MalformedPayloadError",
    "MediaTypeMismatchError",
    "MessageNotFoundError",
    "MissingDependencyError",
    "NotFoundError",
    "RevisionConflictError",
    "SchemaError",
    "SchemaOutOfDateError",
    "StorageError",
    "ToolCallConflictError",
    "ToolCallNotFoundError",
    "UnsupportedFormatError",
]


class ConvstoreError(Exception):
    """Root of every error the library raises on purpose."""


class InvalidInputError(ConvstoreError, ValueError):
    """Data handed to the library is not acceptable; nothing was written."""


class InvalidMessageError(InvalidInputError):
    """A message or part breaks the canonical model's rules."""


class MalformedPayloadError(InvalidInputError):
    """A provider payload cannot be read as that provider's format."""


class MalformedExportError(MalformedPayloadError):
    """An export file (ChatGPT, Claude.ai, Open WebUI) is truncated or is not its format.

    ``position`` names where: the file, the character offset and, when known, the
    conversation (its index in the file and its id). Nothing of that conversation was written.
    """

    def __init__(self, problem: str, *, position: str) -> None:
        super().__init__(f"{position}: {problem}")
        self.problem = problem
        self.position = position


class ExportLimitError(MalformedExportError):
    """Reading an export crossed one of its import limits (`convstore.imports.ImportLimits`).

    ``limit`` names the limit (``"conversation_size"``, ``"member_bytes"``, ``"total_bytes"``);
    ``position`` where reading stopped. The conversations before it were imported.
    """

    def __init__(self, problem: str, *, position: str, limit: str) -> None:
        super().__init__(problem, position=position)
        self.limit = limit


class ConversationRefusedError(MalformedExportError):
    """One conversation of a readable export cannot be stored (``import_file(strict=True)``).

    ``position`` names the conversation (file, index, character offset); ``problem`` why (a
    node id over the store's limits, text that is not Unicode, a value of the wrong type...).
    Without ``strict`` the import reports it and goes on with the next conversation.
    """


class UnsupportedFormatError(InvalidInputError):
    """An unknown `parse` source or `render` target was named."""


class AttachmentTooLargeError(InvalidInputError):
    """An attachment exceeds the configured size limit; it was refused while streaming."""


class MediaTypeMismatchError(InvalidInputError):
    """The declared media type is contradicted by the attachment's bytes."""


class NotFoundError(ConvstoreError, LookupError):
    """Something asked for does not exist (or is not visible to the caller)."""


class ConversationNotFoundError(NotFoundError):
    """The conversation does not exist, was deleted, or belongs to another tenant."""

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id!r} not found")
        self.conversation_id = conversation_id


class ConversationOwnedByAnotherTenantError(ConversationNotFoundError):
    """An id given to create or open a conversation is another tenant's.

    `get_or_create_conversation` raises it: a LangGraph thread id, an openai-agents or ADK
    session id, a LangChain session id. Raised only where the caller chose the id; reads of
    another tenant's conversation stay a plain `ConversationNotFoundError`. Ids are global:
    make a framework's ids unique across tenants (prefix them with the tenant, say).
    """

    def __init__(self, conversation_id: str) -> None:
        NotFoundError.__init__(
            self,
            f"conversation id {conversation_id!r} belongs to another tenant, so this tenant "
            "cannot create or use it: conversation ids are global; give each tenant its own "
            "ids (prefix thread or session ids with the tenant)",
        )
        self.conversation_id = conversation_id


class ToolCallNotFoundError(NotFoundError):
    """No tool call with that id exists in the conversation."""

    def __init__(self, conversation_id: str, call_id: str) -> None:
        super().__init__(f"tool call {call_id!r} not found in conversation {conversation_id!r}")
        self.conversation_id = conversation_id
        self.call_id = call_id


class MessageNotFoundError(NotFoundError):
    """No message with that id exists (in that conversation, or in the tenant's)."""

    def __init__(self, message_id: str, conversation_id: str | None = None) -> None:
        where = f" in conversation {conversation_id!r}" if conversation_id is not None else ""
        super().__init__(f"message {message_id!r} not found{where}")
        self.message_id = message_id
        self.conversation_id = conversation_id


class AttachmentNotFoundError(NotFoundError):
    """A referenced blob is missing from the blob store (or is not the caller's to read)."""

    def __init__(self, key: str, *, message: str | None = None) -> None:
        super().__init__(message or f"attachment blob {key!r} is missing from the blob store")
        self.key = key

    @classmethod
    def not_visible(cls, sha256: str) -> AttachmentNotFoundError:
        """The error a tenant sees for an attachment it may not read, or that is missing.

        It names only the digest the caller gave: no storage path, and the same words whether
        the blob belongs to another tenant or to nobody.
        """
        return cls(f"sha256:{sha256}", message=f"attachment sha256:{sha256} not found")


class DatabaseNotFoundError(NotFoundError):
    """A command that only reads found no database file (it never creates one)."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"no database at {path}: check --url (or CONVSTORE_URL); "
            "`convstore migrate --url URL` creates a new one"
        )
        self.path = path


class ConflictError(ConvstoreError):
    """The request contradicts what is already stored."""


class ToolCallConflictError(ConflictError):
    """A tool call was completed twice with different outputs, or a call id was reused."""


class RevisionConflictError(ConflictError):
    """The conversation changed since the caller read it: ``expected_revision`` is stale."""

    def __init__(self, conversation_id: str, expected: str, actual: str) -> None:
        super().__init__(
            f"conversation {conversation_id!r} is at revision {actual!r}, not the expected "
            f"{expected!r}: reload it and retry"
        )
        self.conversation_id = conversation_id
        self.expected = expected
        self.actual = actual


class AttachmentCorruptedError(ConvstoreError):
    """A blob's bytes do not hash to the key they are stored under."""

    def __init__(self, key: str, actual: str) -> None:
        super().__init__(f"attachment blob {key!r} is corrupted: its bytes hash to {actual}")
        self.key = key
        self.actual = actual


class SchemaError(ConvstoreError):
    """The database schema is not what this version of convstore expects."""


class SchemaOutOfDateError(SchemaError):
    """The database is behind the migration head; run ``convstore migrate``."""

    def __init__(self, current: str | None, head: str) -> None:
        super().__init__(
            f"database schema is at revision {current or '<empty>'}, convstore needs {head}: "
            "run `convstore migrate --url URL` (or `alembic upgrade head`)"
        )
        self.current = current
        self.head = head


class StorageError(ConvstoreError):
    """A storage backend failed; the operation had no effect."""


class DatabaseError(StorageError):
    """The database driver failed (connection lost, disk full, locked past all retries)."""


class BlobStorageError(StorageError):
    """The blob backend failed to read or write."""


class ClosedError(ConvstoreError):
    """The store was used before ``async with`` opened it or after it closed."""


class AsyncOnlyError(ConvstoreError, NotImplementedError):
    """A blocking method of an async-only integration was called.

    The message names the async method to call instead.
    """


class MissingDependencyError(ConvstoreError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it.

    Raised where the dependency is first needed: opening a ``postgresql+asyncpg://`` URL
    without ``asyncpg``, or importing an integration without its framework. An `ImportError`
    as well, so code that guards an optional import with ``except ImportError`` keeps working.
    """

    def __init__(self, needed_by: str, package: str, extra: str) -> None:
        super().__init__(
            f"{needed_by} needs {package}, which is not installed: "
            f"pip install 'convstore[{extra}]'",
            name=package,
        )
        self.extra = extra
        """The extra to install (``pip install 'convstore[EXTRA]'``)."""
