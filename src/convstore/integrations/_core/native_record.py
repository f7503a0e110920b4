"""A framework's own record of what it stored, kept beside the canonical messages.

The pydantic-ai and google-adk integrations store each unit of their framework (an entry, an
event) as a short run of canonical messages, the last of which carries the unit's id and the
unit itself, as the framework serializes it, as its `NativeRecord`. `NativeFormat` is that
path, once for every integration:

- `NativeFormat.attach`: the record, its inline bytes replaced by blob placeholders
  (`convstore.integrations._core.native_blobs`), on the last message of the run, which takes the
  unit's id; the canonical `FilePart`s of the run carry the bytes into the blob store.
- `NativeFormat.data`: the record a stored message carries in this format, or ``None``.
- `NativeFormat.restore`: records as read, their placeholders replaced by the same base64
  text they held (bytes read with `ConversationStore.read_attachment`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pydantic import JsonValue

from convstore.integrations._core.native_blobs import Alphabet, Matcher, externalize, restore
from convstore.model import FilePart, Message, NativeRecord
from convstore.store import ConversationStore

__all__ = ["MARKER_KEY", "NativeFormat", "restore_from"]

MARKER_KEY: Final = "convstore.integration"
"""The metadata key naming the integration (its format) that owns a conversation."""


@dataclass(frozen=True, slots=True)
class NativeFormat:
    """One framework's records: their `NativeRecord.format`, where their bytes are, how encoded."""

    name: str
    match: Matcher
    """Which JSON objects of a record hold bytes (`native_blobs.externalize`)."""
    alphabet: Alphabet
    """The base64 alphabet the framework writes bytes in."""

    def data(self, message: Message) -> dict[str, JsonValue] | None:
        """The record ``message`` carries in this format, or ``None``."""
        native = message.native
        if native is None or native.format != self.name or not isinstance(native.data, dict):
            return None
        return native.data

    def strip(self, record: JsonValue) -> JsonValue:
        """A copy of ``record`` with its bytes replaced by blob placeholders."""
        stripped, _ = externalize(record, self.match, self.alphabet)
        return stripped

    def attach(
        self, messages: list[Message], unit_id: str | None, data: JsonValue
    ) -> list[Message]:
        """``messages`` with the last one carrying ``unit_id`` and ``data`` as its record.

        ``data`` holds no bytes of its own: strip them first (`strip`).
        """
        native = NativeRecord(format=self.name, data=data)
        last = messages[-1].model_copy(update={"id": unit_id, "native": native})
        return [*messages[:-1], last]

    async def restore(self, store: ConversationStore, records: list[JsonValue]) -> list[JsonValue]:
        """``records`` with the bytes their placeholders name put back as base64 text."""
        return await restore_from(store, records, self.alphabet)


async def restore_from(
    store: ConversationStore, records: list[JsonValue], alphabet: Alphabet
) -> list[JsonValue]:
    """``records`` with the bytes their blob placeholders name put back as base64 text."""

    async def fetch(part: FilePart) -> bytes:
        return await store.read_attachment(part)

    return await restore(records, fetch, alphabet)
