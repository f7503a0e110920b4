"""What the templates show, computed from the store's read models: pure functions, no I/O.

Invariants:

- Nothing here escapes or marks anything safe: the templates autoescape every value, so a
  stored string reaches the page only as text.
- Only raster images in `INLINE_TYPES` are ever shown inline; every other attachment is a
  download link (see ``_attachments``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from convstore.model import Compaction, Conversation, FilePart, JsonOutput, ToolCall, ToolOutput

__all__ = [
    "INLINE_TYPES",
    "FileView",
    "calls_by_id",
    "compaction_marks",
    "file_view",
    "output_json",
    "pretty_json",
    "shorten_media",
]

INLINE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Media types a browser decodes as pictures and nothing else: safe to show inline."""

_SHORTEN_OVER: Final = 200


@dataclass(frozen=True, slots=True)
class FileView:
    """One file part as the page shows it."""

    media_type: str
    filename: str | None
    sha256: str | None
    """The stored attachment's hash (``None``: an external URI or inline bytes)."""
    size: int | None
    inline: bool
    """Shown as an ``<img>``; otherwise a download link (stored) or plain text (external)."""
    uri: str | None
    """An external location, shown as text (never a link: its scheme is not ours to trust)."""


def file_view(part: FilePart) -> FileView:
    """How a file part is shown: an image inline, anything else as a download or a note."""
    sha = part.attachment.sha256 if part.attachment is not None else None
    size = part.attachment.size if part.attachment is not None else None
    if size is None and part.data is not None:
        size = len(part.data)
    return FileView(
        media_type=part.media_type,
        filename=part.filename,
        sha256=sha,
        size=size,
        inline=sha is not None and part.media_type in INLINE_TYPES,
        uri=part.uri,
    )


def compaction_marks(conversation: Conversation) -> dict[int, list[Compaction]]:
    """For each shown message seq, the compactions that cut right after it."""
    marks: dict[int, list[Compaction]] = {}
    seqs = [m.seq for m in conversation.messages if m.seq is not None]
    for compaction in conversation.compactions:
        # The cut sits after the newest shown message the compaction covers.
        covered = [s for s in seqs if s <= compaction.through_seq]
        if covered:
            marks.setdefault(covered[-1], []).append(compaction)
    return marks


def calls_by_id(conversation: Conversation) -> dict[str, ToolCall]:
    """The loaded calls by canonical id, for the status shown beside each call and result."""
    return {call.id: call for call in conversation.tool_calls}


def output_json(output: ToolOutput) -> str | None:
    """A JSON result's value, pretty-printed (``None`` for content and error outputs)."""
    if isinstance(output, JsonOutput):
        return pretty_json(output.value)
    return None


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON text, non-ASCII kept readable."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def shorten_media(value: Any) -> Any:
    """``value`` with long unbroken strings (base64 media, signatures) cut, for reading.

    The cut string says how long the original was, so nothing looks smaller than it is.
    """
    if isinstance(value, dict):
        return {k: shorten_media(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten_media(v) for v in value]
    if isinstance(value, str) and len(value) > _SHORTEN_OVER and " " not in value:
        return f"{value[:48]}…({len(value):,} chars)"
    return value
