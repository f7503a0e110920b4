"""`check_messages`: the limits of `convstore.limits`, enforced on a batch of messages.

`ConversationStore.append` (and `complete_tool_call`) call `check_messages` on a batch before
any blob or row is written, so a refused batch leaves nothing behind. The limits, their values
and the reasons for them are documented in `convstore.limits`.

Speed: `check_messages` runs on every append. It first takes a verdict-only pass (no field paths
built, one loop over every value), and only when that pass refuses does it run the detailed walk
that names the offending field; the two agree on every input (a property test holds them to it),
so the error is the same as the detailed walk alone would raise.

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
from convstore.limits import (
    JSON_INT_MAX,
    JSON_INT_MIN,
    MAX_FILENAME_LENGTH,
    MAX_JSON_DEPTH,
    MAX_MEDIA_TYPE_LENGTH,
    MAX_MESSAGE_CHARS,
    MAX_PART_CHARS,
    MAX_PARTS_PER_MESSAGE,
    NUL_REFUSED,
    SURROGATE,
    has_lone_surrogate,
    number_problem,
)
from convstore.media_types import not_a_media_type
from convstore.model import FilePart, Message

__all__ = ["check_messages"]

_MEDIA_TYPE: Final = re.compile(
    r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
)

# C0 and C1 controls (DEL included), and the bidi embedding/override/isolate controls.
_UNSAFE_IN_FILENAME: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def check_messages(messages: Sequence[Message], *, max_attachment_size: int | None = None) -> None:
    """Refuse a batch that breaks a documented limit (see `convstore.limits`).

    Args:
        messages: the batch, as `ConversationStore.append` received it.
        max_attachment_size: the store's per-attachment limit; inline bytes over it are refused
            here, before any blob is written.

    Raises:
        InvalidMessageError: a limit on text, JSON, numbers, file names, media types, parts per
            message or message size is broken; the message names the offending field
            (``messages[i].parts[j]...``).
        AttachmentTooLargeError: inline file bytes exceed ``max_attachment_size``.
    """
    for message in messages:
        if not _message_ok(message, max_attachment_size):
            break
    else:
        return
    # Refused: the detailed walk finds the first problem and says where it is.
    _explain(messages, max_attachment_size)
    raise AssertionError("the verdict-only check refused a batch the detailed check accepts")


# The verdict-only pass. It must refuse exactly what `_explain` refuses (a property test holds
# them together); it differs only in building no paths and raising nothing.


def _message_ok(message: Message, max_attachment_size: int | None) -> bool:
    parts = message.parts
    if len(parts) > MAX_PARTS_PER_MESSAGE:
        return False
    total = 0
    for name, value in message.__dict__.items():
        if value is None or name == "parts":
            continue  # most fields of most messages
        if isinstance(value, str):  # the role (an enum), ids, provider, model
            total += len(value)
            if "\x00" in value or (not value.isascii() and SURROGATE.search(value) is not None):
                return False
        else:
            chars = _chars_ok(value, max_attachment_size)
            if chars < 0:
                return False
            total += chars
    if total > MAX_PART_CHARS:
        return False
    for part in parts:
        chars = _chars_ok(part, max_attachment_size)
        if chars < 0:
            return False
        total += chars
    return total <= MAX_MESSAGE_CHARS


_MODEL, _FILE, _OTHER = 1, 2, 0
_CLASSES: dict[type, int] = {}
"""What each class met is (a model, a file part, anything else): ``isinstance`` against
pydantic's ABC metaclass costs more than the rest of a part's check."""


def _class_of(cls: type) -> int:
    found = _CLASSES.get(cls)
    if found is None:
        found = _CLASSES[cls] = (
            _FILE if issubclass(cls, FilePart) else _MODEL if issubclass(cls, BaseModel) else _OTHER
        )
    return found


def _chars_ok(root: Any, max_attachment_size: int | None) -> int:
    """Characters of text in ``root`` (one unit: a part or a header field), or -1 if refused."""
    chars = 0
    # (value, depth of the JSON container holding it; 0 directly under a model). Plain strings
    # and None, most of what a message holds, are handled where they are found, not pushed.
    stack: list[tuple[Any, int]] = [(root, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        cls = type(node)
        if cls is str:
            chars += len(node)
            if "\x00" in node or (not node.isascii() and SURROGATE.search(node) is not None):
                return -1
        elif cls is dict or cls is list:
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return -1
            # A dict's keys are checked as its values are (a None key, like a None value, has
            # nothing to check).
            for child in (*node, *node.values()) if cls is dict else node:
                if type(child) is str:
                    chars += len(child)
                    if "\x00" in child or (
                        not child.isascii() and SURROGATE.search(child) is not None
                    ):
                        return -1
                elif child is not None:
                    push((child, depth))
        elif node is None or cls is bool:
            continue
        elif cls is int:
            if not JSON_INT_MIN <= node <= JSON_INT_MAX:
                return -1
        elif cls is float:
            if not math.isfinite(node):
                return -1
        elif (kind := _class_of(cls)) != _OTHER:  # a model
            if kind == _FILE and not _file_ok(node, max_attachment_size):
                return -1
            for name, value in node.__dict__.items():
                if type(value) is str:
                    if name != "kind":  # the discriminator, not content
                        chars += len(value)
                        if "\x00" in value or (
                            not value.isascii() and SURROGATE.search(value) is not None
                        ):
                            return -1
                elif value is not None:
                    push((value, 0))
        elif isinstance(node, dict):  # subclasses: walked as the plain value they hold
            push((dict(node), depth))
        elif isinstance(node, list):
            push((list(node), depth))
        elif isinstance(node, str):  # a str subclass (an enum value)
            chars += len(node)
            if "\x00" in node or has_lone_surrogate(node):
                return -1
        elif number_problem(node) is not None:  # int and float subclasses, non-string keys
            return -1
        if chars > MAX_PART_CHARS:
            return -1
    return chars if chars <= MAX_PART_CHARS else -1


def _file_ok(part: FilePart, max_attachment_size: int | None) -> bool:
    name = part.filename
    if name is not None and (
        len(name) > MAX_FILENAME_LENGTH or _UNSAFE_IN_FILENAME.search(name) is not None
    ):
        return False
    media_type = part.media_type
    if len(media_type) > MAX_MEDIA_TYPE_LENGTH or _MEDIA_TYPE.fullmatch(media_type) is None:
        return False
    data = part.data
    return max_attachment_size is None or data is None or len(data) <= max_attachment_size


# The detailed pass: the same rules, raising an error that names the field.


def _explain(messages: Sequence[Message], max_attachment_size: int | None) -> None:
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if len(message.parts) > MAX_PARTS_PER_MESSAGE:
            raise InvalidMessageError(
                f"{where}: has {len(message.parts):,} parts, more than the "
                f"{MAX_PARTS_PER_MESSAGE:,} a message may hold"
            )
        header = _Walk(where)
        for name, value in message.__dict__.items():
            if name != "parts":
                header.field(value, f".{name}")
        total = header.chars
        for position, part in enumerate(message.parts):
            walk = _Walk(f"{where}.parts[{position}]", max_attachment_size)
            walk.model(part, "")
            total += walk.chars
        if total > MAX_MESSAGE_CHARS:
            raise InvalidMessageError(
                f"{where}: holds {total:,} characters of text, more than the "
                f"{MAX_MESSAGE_CHARS:,} a message may hold"
            )


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
            return
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
            if "\x00" in value:
                raise self.fail(path, NUL_REFUSED)
            if has_lone_surrogate(value):
                raise self.fail(path, "is not valid Unicode (it holds a lone surrogate)")
        elif problem := number_problem(value):
            raise self.fail(path, problem)

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
            raise self.fail(f"{path}.media_type", not_a_media_type(media_type))
        limit = self.max_attachment_size
        if limit is not None and part.data is not None and len(part.data) > limit:
            raise AttachmentTooLargeError(
                f"{self.where}{path}: {len(part.data):,} bytes of inline data, over the "
                f"{limit:,}-byte attachment limit"
            )
