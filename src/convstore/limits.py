"""The documented limits on what convstore stores, and `check_messages`, which enforces them.

`ConversationStore.append` (and `complete_tool_call`) call `check_messages` on a batch before
any blob or row is written, so a refused batch leaves nothing behind. `convstore.parse` keeps
histories as they were stored: it refuses only what no provider can have received as JSON text
(lone surrogates, NaN and infinities) and what it would itself have to serialise past
`MAX_JSON_DEPTH` (a Gemini function response), and keeps tool-argument text too deep for it
verbatim. A parsed history that breaks another limit is refused when it is appended.

================================  ==============  =============================================
limit                             value           over it
================================  ==============  =============================================
`MAX_JSON_DEPTH`                  64 levels       `InvalidMessageError` (arguments, tool
                                                  outputs, error details, provider details)
`MAX_PART_CHARS`                  16 Mi chars     `InvalidMessageError`
`MAX_FILENAME_LENGTH`             1,024 chars     `InvalidMessageError`
filename characters               no C0/C1        `InvalidMessageError`
                                  controls, no
                                  bidi overrides
media type                        ``type/sub``    `InvalidMessageError`
                                  (RFC 6838),
                                  255 chars
strings                           valid Unicode   `InvalidMessageError` (a lone surrogate cannot
                                                  be stored as UTF-8 by any database)
numbers                           finite          `InvalidMessageError` (NaN and infinities are
                                                  not JSON; PostgreSQL refuses them)
inline file bytes                 the store's     `AttachmentTooLargeError`, before any blob is
                                  ``max_attach-   written (streams are checked as they arrive)
                                  ment_size``
================================  ==============  =============================================

Why these values:

- JSON depth: real payloads nest a few levels (the accepted corpus: 9 for whole requests);
  pydantic stops near 255 and every JSON encoder on the way to a database or a provider
  recurses once per level, so 64 keeps every layer far from Python's recursion limit whatever
  the caller's own stack depth, and is above any structured-output schema a provider accepts.
- Part size: the largest context window today is about 2 M tokens (~8 M characters); a single
  part larger than twice that can never be sent whole, and it bounds the memory one row costs
  on load and render. Characters are counted in the part's text fields and in every string and
  object key of its JSON values (a tool result's content parts included); file bytes are blobs
  and have their own limit.
- Filenames are metadata shown to a model or a person and are never used for storage keys
  (blob keys derive from the bytes alone). Path separators and ``..`` are therefore kept; what is
  refused is what would corrupt a log line or a rendered text note (control characters,
  newlines) or spoof a name's reading order (bidi embedding, override and isolate controls).
  Anthropic document titles and Gemini display names travel in the same field, hence 1,024
  rather than a file system's 255.

Invariant: `check_messages` only reads; it never changes a message, and it walks every value
iteratively, so no input can exhaust the stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import BaseModel

from convstore.errors import AttachmentTooLargeError, InvalidMessageError
from convstore.model import FilePart, Message

__all__ = [
    "MAX_FILENAME_LENGTH",
    "MAX_JSON_DEPTH",
    "MAX_MEDIA_TYPE_LENGTH",
    "MAX_PART_CHARS",
    "check_messages",
    "has_lone_surrogate",
    "json_depth",
]

MAX_JSON_DEPTH: Final = 64
"""Deepest nesting of arrays and objects in one JSON value (``{"a": [1]}`` is 2 deep)."""

MAX_PART_CHARS: Final = 16 * 1024 * 1024
"""Characters of text one part may hold: its text fields plus its JSON strings and keys."""

MAX_FILENAME_LENGTH: Final = 1024
"""Longest `FilePart.filename`, in characters."""

MAX_MEDIA_TYPE_LENGTH: Final = 255
"""Longest media type (the model's own limit)."""

_MEDIA_TYPE: Final = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (not Unicode: no database stores it as UTF-8)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


# C0 and C1 controls (DEL included), and the bidi embedding/override/isolate controls.
_UNSAFE_IN_FILENAME: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def check_messages(messages: Sequence[Message], *, max_attachment_size: int | None = None) -> None:
    """Refuse a batch that breaks a documented limit (see the module docstring).

    Args:
        messages: the batch, as `ConversationStore.append` received it.
        max_attachment_size: the store's per-attachment limit; inline bytes over it are refused
            here, before any blob is written.

    Raises:
        InvalidMessageError: a limit on text, JSON, file names or media types is broken; the
            message names the offending field (``messages[i].parts[j]...``).
        AttachmentTooLargeError: inline file bytes exceed ``max_attachment_size``.
    """
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        header = _Walk(where)
        for name, value in message.__dict__.items():
            if name != "parts":
                header.field(value, f".{name}")
        for position, part in enumerate(message.parts):
            walk = _Walk(f"{where}.parts[{position}]", max_attachment_size)
            walk.model(part, "")


class _Walk:
    """Checks one unit (a part with everything inside it, or a message's own fields)."""

    __slots__ = ("chars", "max_attachment_size", "where")

    def __init__(self, where: str, max_attachment_size: int | None = None) -> None:
        self.where = where
        self.max_attachment_size = max_attachment_size
        self.chars = 0

    def fail(self, path: str, what: str) -> InvalidMessageError:
        return InvalidMessageError(f"{self.where}{path}: {what}")

    def model(self, obj: BaseModel, path: str) -> None:
        if isinstance(obj, FilePart):
            self.file(obj, path)
        for name, value in obj.__dict__.items():
            if name != "kind":  # the discriminator, not content
                self.field(value, f"{path}.{name}")

    def field(self, value: Any, path: str) -> None:
        """A field of a model: a scalar, a nested model, or a JSON value."""
        if value is None:
            return  # most optional fields: skip the isinstance checks (append hot path)
        if isinstance(value, BaseModel):
            self.model(value, path)
        elif isinstance(value, dict | list):
            self.json(value, path)
        else:
            self.scalar(value, path)

    def scalar(self, value: Any, path: str) -> None:
        if isinstance(value, str):
            self.chars += len(value)
            if self.chars > MAX_PART_CHARS:
                raise self.fail(path, f"holds more than {MAX_PART_CHARS:,} characters of text")
            if has_lone_surrogate(value):
                raise self.fail(path, "is not valid Unicode (it holds a lone surrogate)")
        elif isinstance(value, float) and not math.isfinite(value):
            raise self.fail(path, f"{value} is not a JSON number")

    def json(self, value: dict[str, Any] | list[Any], path: str) -> None:
        """A JSON value (or a list of models), walked iteratively."""
        stack: list[tuple[Any, str, int]] = [(value, path, 1)]
        while stack:
            node, node_path, depth = stack.pop()
            if isinstance(node, dict | list):
                if depth > MAX_JSON_DEPTH:
                    raise self.fail(node_path, f"nests deeper than {MAX_JSON_DEPTH} levels")
                if isinstance(node, dict):
                    for key, child in node.items():
                        self.scalar(key, f"{node_path} (an object key)")
                        stack.append((child, f"{node_path}.{key}", depth + 1))
                else:
                    stack.extend(
                        (child, f"{node_path}[{i}]", depth + 1) for i, child in enumerate(node)
                    )
            elif isinstance(node, BaseModel):
                self.model(node, node_path)
            else:
                self.scalar(node, node_path)

    def file(self, part: FilePart, path: str) -> None:
        name = part.filename
        if name is not None:
            if len(name) > MAX_FILENAME_LENGTH:
                raise self.fail(
                    f"{path}.filename", f"is longer than {MAX_FILENAME_LENGTH} characters"
                )
            if _UNSAFE_IN_FILENAME.search(name):
                raise self.fail(f"{path}.filename", "holds a control or bidi override character")
        media_type = part.media_type
        if len(media_type) > MAX_MEDIA_TYPE_LENGTH or not _MEDIA_TYPE.fullmatch(media_type):
            raise self.fail(f"{path}.media_type", f"{media_type[:80]!r} is not a media type")
        limit = self.max_attachment_size
        if limit is not None and part.data is not None and len(part.data) > limit:
            raise AttachmentTooLargeError(
                f"{self.where}{path}: {len(part.data):,} bytes of inline data, over the "
                f"{limit:,}-byte attachment limit"
            )
