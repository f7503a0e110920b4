"""Where each file goes in a render, decided from the capabilities table.

Invariants:

- A file is sent inline only when its bytes are at hand (inline in the message, or fetched by
  the store before rendering) and the target takes its type where it stands; by URI only when
  the target fetches that scheme and type. Nothing is downloaded here.
- Media returned by a tool stays inside the result where the target can see it there
  (``NATIVE``/``NESTED``); otherwise the result gets a text reference ("See file 3f2a9c.") and
  the media moves to one user turn after that step's results ("This is file 3f2a9c:" + the
  file), which is what Chat Completions and Gemini 2.x models can see.
- A text document (`convstore.capabilities.is_text_document`: plain text, Markdown, CSV, JSON,
  HTML, source code, ...) that the target has no slot for is sent in place as text: decoded as
  UTF-8 (invalid bytes replaced), headed by its name and type, at most
  `MAX_TEXT_DOCUMENT_CHARS` characters, the remainder noted in the text itself.
- A file that cannot be sent at all becomes a text note in place, saying why (the target
  cannot take the type at all, the model reads text only, ...). Every decision is a
  `MediaNote` in the diagnostics; nothing is dropped silently.
- Labels are short hashes of the bytes (or of the URI), unique within the render.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Mapping
from typing import Final

from convstore.capabilities import Capabilities, MediaPlacement, is_text_document
from convstore.model import FilePart
from convstore.transcript.diagnostics import Diagnostics, MediaNote, MediaPlacementName
from convstore.transcript.plan import Media, Text

__all__ = ["MAX_TEXT_DOCUMENT_CHARS", "MediaResolver", "document_text"]

MAX_TEXT_DOCUMENT_CHARS: Final = 100_000
"""Most characters of one text document sent as text (about 25k tokens): enough for a CSV
export or a source file, small enough that one attachment cannot crowd out a conversation."""


def document_text(data: bytes, *, media_type: str, name: str) -> tuple[str, bool]:
    """A text document as the text block a model reads, and whether it was shortened."""
    # Decode at most 4 bytes per character kept; a multi-byte sequence cut at the limit is
    # held back by the incremental decoder instead of becoming a replacement character.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    limit = MAX_TEXT_DOCUMENT_CHARS * 4
    text = decoder.decode(data[:limit], final=len(data) <= limit)
    text = text.removeprefix("\ufeff")
    shortened = len(text) > MAX_TEXT_DOCUMENT_CHARS or len(data) > limit
    body = text[:MAX_TEXT_DOCUMENT_CHARS]
    header = f"[file {name} ({media_type})]\n"
    if shortened:
        rest = len(data) - len(body.encode("utf-8", errors="replace"))
        tail = (
            f"\n[file {name} continues: about {rest:,} more bytes not shown "
            f"(limit {MAX_TEXT_DOCUMENT_CHARS:,} characters)]"
        )
        return header + body + tail, True
    return header + body + f"\n[end of file {name}]", False


class MediaResolver:
    """Turns `FilePart`s into `Media` or text for one render."""

    def __init__(
        self,
        capabilities: Capabilities,
        attachments: Mapping[str, bytes],
        diagnostics: Diagnostics,
    ) -> None:
        self._caps = capabilities
        self._model = diagnostics.model or "(any)"
        self._attachments = attachments
        self._notes = diagnostics.media
        self._labels: dict[str, str] = {}
        self._taken: set[str] = set()

    def _label(self, part: FilePart) -> str:
        key = part.sha256 or hashlib.sha256((part.uri or "").encode()).hexdigest()
        label = self._labels.get(key)
        if label is None:
            size = 6
            while key[:size] in self._taken and size < len(key):
                size += 2
            label = key[:size]
            self._taken.add(label)
            self._labels[key] = label
        return label

    def _media(self, part: FilePart, label: str) -> Media | None:
        """The part as `Media` with bytes or a URI, or ``None`` when its bytes are not at hand."""
        data = part.data
        if data is None and part.attachment is not None:
            data = self._attachments.get(part.attachment.sha256)
        if data is not None:
            return Media(part.media_type, data=data, filename=part.filename, label=label)
        if part.uri is not None:
            return Media(part.media_type, uri=part.uri, filename=part.filename, label=label)
        return None

    def _sendable(self, media: Media, inline_types: frozenset[str]) -> bool:
        if media.data is not None:
            return media.media_type in inline_types
        assert media.uri is not None
        return self._caps.fetches(media.uri, media.media_type)

    def _as_text(
        self, part: FilePart, label: str, seq: int | None, call_id: str | None
    ) -> Text | None:
        """A text document as a text block, when its bytes are at hand."""
        if not is_text_document(part.media_type):
            return None
        data = part.data
        if data is None and part.attachment is not None:
            data = self._attachments.get(part.attachment.sha256)
        if data is None:
            return None
        text, shortened = document_text(
            data, media_type=part.media_type, name=part.filename or f"file {label}"
        )
        reason = f"{self._caps.target} has no slot for {part.media_type}: sent as text"
        if shortened:
            reason += f", shortened to {MAX_TEXT_DOCUMENT_CHARS:,} characters"
        self._notes.append(MediaNote(seq, part.media_type, "text", call_id, label, reason))
        return Text(text)

    def _note(self, part: FilePart, label: str, seq: int | None, call_id: str | None) -> Text:
        where = self._caps.target
        if self._caps.text_only and not is_text_document(part.media_type):
            reason = f"the {where} model {self._model} reads text only"
            text = f"[file {label} ({part.media_type}) omitted: this model reads text only]"
        elif part.uri is not None and part.data is None and part.attachment is None:
            reason = f"{where} cannot fetch {part.media_type} from this URI"
            text = f"[file {label} ({part.media_type}) at {part.uri}]"
        elif self._caps.inlines(part.media_type) and part.data is None:
            reason = "its bytes were not available to the render"
            text = f"[file {label} ({part.media_type}) is not available]"
        elif not self._caps.inlines(part.media_type):
            reason = f"{where} cannot take {part.media_type} at all"
            text = f"[file {label} ({part.media_type}) omitted: {where} cannot take this type]"
        else:
            reason = f"{where} cannot receive {part.media_type} here"
            text = f"[file {label} ({part.media_type}) omitted: not supported by {where}]"
        self._notes.append(MediaNote(seq, part.media_type, "text_note", call_id, label, reason))
        return Text(text)

    def in_message(self, part: FilePart, seq: int | None, *, assistant: bool) -> Media | Text:
        """A file in a user (or assistant) message."""
        label = self._label(part)
        media = self._media(part, label)
        types = self._caps.assistant_media if assistant else self._caps.user_media
        if media is None or not self._sendable(media, types):
            return self._as_text(part, label, seq, None) or self._note(part, label, seq, None)
        placement: MediaPlacementName = "assistant" if assistant else "user"
        self._notes.append(MediaNote(seq, part.media_type, placement, None, label))
        return media

    def in_result(
        self, part: FilePart, seq: int | None, call_id: str, moved: list[Media | Text]
    ) -> Media | Text:
        """A file in a tool result: kept in it, or referenced there and moved.

        Moved media are appended to ``moved``: the parts of the user turn that follows the
        step's results.
        """
        caps = self._caps
        label = self._label(part)
        media = self._media(part, label)
        if media is None:
            return self._as_text(part, label, seq, call_id) or self._note(part, label, seq, call_id)
        in_result = self._sendable(media, caps.result_media) and (
            media.data is not None or caps.result_uris
        )
        if in_result:
            nested = caps.tool_result_media is MediaPlacement.NESTED
            placement: MediaPlacementName = "nested" if nested else "native"
            self._notes.append(MediaNote(seq, part.media_type, placement, call_id, label))
            return media
        as_text = self._as_text(part, label, seq, call_id)
        if as_text is not None:
            return as_text
        if self._sendable(media, caps.user_media):
            # Gemini carries moved media as standalone parts after the responses; the others as
            # a user message after the step's tool messages.
            gemini_like = caps.tool_result_media in (MediaPlacement.SIBLING, MediaPlacement.NESTED)
            placement = "sibling" if gemini_like else "user_message"
            self._notes.append(MediaNote(seq, part.media_type, placement, call_id, label))
            moved.extend((Text(f"This is file {label}:"), media))
            return Text(f"See file {label}.")
        return self._note(part, label, seq, call_id)
