"""What the templates show, computed from the store's read models: pure functions, no I/O.

Invariants:

- Nothing here escapes or marks anything safe: the templates autoescape every value, so a
  stored string reaches the page only as text.
- Only raster images in `INLINE_TYPES` are ever shown inline; every other attachment is a
  download link (see ``_attachments``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from convstore.model import (
    Compaction,
    Conversation,
    FilePart,
    JsonOutput,
    Message,
    Role,
    ToolCall,
    ToolOutput,
    Usage,
)

__all__ = [
    "INLINE_TYPES",
    "FileView",
    "author",
    "calls_by_id",
    "compaction_marks",
    "duration",
    "file_view",
    "first_words",
    "is_blank",
    "json_string",
    "output_json",
    "pretty_json",
    "preview_text",
    "relative_time",
    "shorten_media",
    "usage_json",
    "usage_totals",
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


def json_string(output: ToolOutput) -> str | None:
    """A JSON result that is a string holding a JSON object or array, shown as that JSON.

    LangChain tools often return ``json.dumps(...)``: shown as one pretty JSON value instead
    of a string full of escaped quotes. ``None``: not such a result.
    """
    if not isinstance(output, JsonOutput) or not isinstance(output.value, str):
        return None
    text = output.value.strip()
    if text[:1] not in ("{", "[") or len(text) > _JSON_STRING_CHARS:
        return None
    try:
        return pretty_json(json.loads(text))
    except ValueError:
        return None


_JSON_STRING_CHARS: Final = 1_000_000
_AUTHOR_PATHS: Final = {"langchain": ("data", "name")}
"""Where a native record keeps the agent or node that produced a message (data, not code)."""


def author(message: Message) -> str | None:
    """The agent or node name a message's native record holds, where one was stored."""
    native = message.native
    path = _AUTHOR_PATHS.get(native.format) if native is not None else None
    if native is None or path is None:
        return None
    value: Any = native.data
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) and value else None


def usage_json(usage: Usage) -> str:
    """Usage as the compact JSON of ``data-usage``."""
    return json.dumps(usage.model_dump(mode="json"), separators=(",", ":"))


def usage_totals(messages: Sequence[Message]) -> Usage | None:
    """The usage of ``messages`` added up (``None``: none reported any)."""
    reported = [m.usage for m in messages if m.usage is not None]
    if not reported:
        return None
    return Usage(
        input_tokens=sum(u.input_tokens for u in reported),
        output_tokens=sum(u.output_tokens for u in reported),
        cached_tokens=sum(u.cached_tokens for u in reported),
        reasoning_tokens=sum(u.reasoning_tokens for u in reported),
    )


def duration(delta: timedelta) -> str:
    """A short human duration: ``850 ms``, ``4.2 s``, ``3 min``, ``2 h``, ``5 d``."""
    seconds = delta.total_seconds()
    if seconds < 0:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} d"


def relative_time(at: datetime, now: datetime) -> str:
    """``at`` relative to ``now``: ``just now``, ``5 min ago``, ``3 d ago``."""
    delta = now - at
    if delta.total_seconds() < 45:
        return "just now"
    return f"{duration(delta)} ago"


def first_words(messages: Sequence[Message], limit: int = 80) -> str | None:
    """The first user message's text, cut to ``limit`` characters (a title for the untitled)."""
    for message in messages:
        if message.role is Role.USER:
            text = " ".join(message.text[: limit * 4].split())
            if text:
                return text if len(text) <= limit else text[: limit - 1] + "…"
    return None


def preview_text(message: Message, limit: int = 140) -> str:
    """One line saying what a message holds: its text, else its calls, results or files."""
    text = " ".join(message.text[: limit * 4].split())
    if not text:
        said = []
        for part in message.parts:
            match part.kind:
                case "tool_call":
                    said.append(f"calls {part.name}")
                case "tool_result":
                    said.append(f"result for {part.call_id}")
                case "file":
                    said.append(f"[{part.media_type}]")
                case "thinking":
                    said.append("(thinking)")
                case _:
                    pass
        text = ", ".join(said) or "(empty)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_blank(message: Message) -> bool:
    """No part, or only empty text (ChatGPT's hidden root and system nodes): shown as a line."""
    return all(part.kind == "text" and not part.text.strip() for part in message.parts)
