"""The elements of a top-level JSON array, one at a time, in memory bounded by a limit.

Exports hold every conversation in one JSON array (a ChatGPT ``conversations.json`` reaches a
gigabyte); a whole-file ``json.load`` would hold all of it, and its objects, at once. This
reader decodes one element at a time with the standard library's C decoder
(`json.JSONDecoder.raw_decode`) from a text buffer read forward in chunks.

Invariants:

- Whitespace between elements costs constant memory and linear time: it is skipped by a
  regular expression (one pass, no backtracking) and dropped from the buffer as soon as it
  is passed, however much of it there is.
- An element is first decoded from at most one chunk of text (its decoded objects then take
  a bounded amount of memory, whatever they are). An element longer than that is retried on
  a window twice as long each time (amortised linear time, never quadratic). Beyond the first
  chunk only the part of the window whose estimated decoded size (`estimate`: every character
  at least a byte, plus a fixed cost per object, array, string and element) is within
  ``max_size`` is decoded; an element that does not end inside it is refused with
  `ExportLimitError` (to within `_STEP` characters) before anything of it is decoded, and no
  more than ``max_size`` characters of it are ever read.
- A decoding error far from the end of the window is the file's fault and is reported at once;
  one at the end of the window only means "read more". At the end of the file every error is
  final. Either way the error names the file, the character offset and the element's index.
- A top-level object (not an array) is read as an array of that one element.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Final, Protocol

from convstore.errors import ExportLimitError, MalformedExportError

from ._limits import DEFAULT_LIMITS

__all__ = ["Readable", "array_items", "estimate"]

_CHUNK: Final = 1 << 20
_NEAR_END: Final = 16
"""An error this close to the window's end may be an element cut by the window
(``\\uXXXX`` escapes are the longest token a boundary can split: 6 characters)."""
_STEP: Final = 1 << 16
"""The granularity of the limit: an element within it by less than this much may be refused."""
_NOT_SPACE: Final = re.compile(r"[^ \t\n\r]")
_NOT_ASCII: Final = re.compile(r"[^\x00-\x7f]")
_DECODER: Final = json.JSONDecoder()

# What one decoded JSON token can cost in CPython beyond its characters (measured upper
# bounds, 64-bit): a dict with its first entries ~200 bytes, an empty list 56 + slot, a str
# object 49 + slot, a float or large int ~32 with its slot; every element after the first in
# an array or object is preceded by a comma.
_OBJECT_COST: Final = 232
_ARRAY_COST: Final = 72
_STRING_COST: Final = 32  # per quote character: two per string
_ELEMENT_COST: Final = 40  # per comma


def estimate(text: str, start: int = 0, end: int | None = None, *, width: int = 0) -> int:
    """An upper bound on the bytes ``text[start:end]`` takes once decoded (counted in C).

    ``width``: bytes per character (default: 1 if the range is ASCII, else 4).
    """
    end = len(text) if end is None else min(end, len(text))
    if not width:
        width = 1 if _NOT_ASCII.search(text, start, end) is None else 4
    return (
        (end - start) * width
        + _OBJECT_COST * text.count("{", start, end)
        + _ARRAY_COST * text.count("[", start, end)
        + _STRING_COST * text.count('"', start, end)
        + _ELEMENT_COST * text.count(",", start, end)
    )


class Readable(Protocol):
    """A binary stream (a file, a zip member, a counted reader)."""

    def read(self, size: int, /) -> bytes: ...


class _Buffer:
    """Decoded text of a binary stream, read forward in chunks; ``base`` is ``text[0]``'s offset."""

    def __init__(self, raw: Readable, name: str, chunk: int) -> None:
        self._raw = raw
        self._chunk = chunk
        self._name = name
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self._bytes = 0
        self.text = ""
        self.base = 0
        self.eof = False

    def more(self, at_least: int = 0) -> bool:
        """Append at least ``at_least`` characters (fewer at the end); False at end of file."""
        if self.eof:
            return False
        pieces = [self.text]
        got = 0
        while got < max(at_least, 1):
            data = self._raw.read(max(self._chunk, min(at_least - got, 4 * self._chunk)))
            final = not data
            try:
                piece = self._decoder.decode(data, final=final)
            except UnicodeDecodeError as exc:
                raise MalformedExportError(
                    f"not UTF-8 text ({exc.reason})",
                    position=f"{self._name}, byte {self._bytes + exc.start}",
                ) from exc
            self._bytes += len(data)
            pieces.append(piece)
            got += len(piece)
            if final:
                self.eof = True
                break
        self.text = "".join(pieces)
        return got > 0 or not self.eof

    def fill(self, upto: int) -> None:
        """Read until the text holds ``upto`` characters, or to the end of the file."""
        if len(self.text) < upto:
            self.more(upto - len(self.text))

    def drop(self, upto: int) -> None:
        """Forget the text before ``upto`` (already consumed)."""
        self.text = self.text[upto:]
        self.base += upto

    def skip_space(self, pos: int) -> int:
        """The index of the next non-blank character at or after ``pos`` (``len`` at EOF).

        Blank text is dropped as it is passed, so a run of any length costs one chunk.
        """
        while True:
            found = _NOT_SPACE.search(self.text, pos)
            if found is not None:
                return found.start()
            self.drop(len(self.text))
            pos = 0
            if not self.more():
                return 0


def array_items(
    raw: Readable, name: str, *, chunk: int = _CHUNK, max_size: int | None = None
) -> Iterator[tuple[int, int, Any]]:
    """``(index, character offset, value)`` of each element of the array ``raw`` holds.

    ``chunk`` is how many bytes are read at a time; ``max_size`` bounds one element's estimated
    decoded size (default: `ImportLimits.conversation_size`).
    """
    buf = _Buffer(raw, name, chunk)
    limit = DEFAULT_LIMITS.conversation_size if max_size is None else max_size

    def fail(problem: str, pos: int, index: int | None) -> MalformedExportError:
        where = f"{name}, character {buf.base + pos}"
        if index is not None:
            where += f", conversation {index}"
        return MalformedExportError(problem, position=where)

    pos = buf.skip_space(0)
    if pos >= len(buf.text):
        raise fail("the file is empty", pos, None)
    if buf.text[pos] == "{":
        held = [_decode(buf, pos, 0, fail, chunk, limit)]
        if buf.skip_space(held[0][1]) < len(buf.text):
            raise fail("unexpected data after the conversation", buf.skip_space(held[0][1]), None)
        yield 0, buf.base + pos, held.pop()[0]
        return
    if buf.text[pos] != "[":
        raise fail("expected a JSON array of conversations", pos, None)
    pos = buf.skip_space(pos + 1)
    index = 0
    if pos < len(buf.text) and buf.text[pos] == "]":
        pos += 1
    else:
        while True:
            if pos >= len(buf.text):
                raise fail("the file ends inside the array (truncated)", pos, index)
            if pos >= chunk:
                # Forget what was read, now and then: dropping after every element would copy
                # the rest of the buffer each time.
                buf.drop(pos)
                pos = 0
            start = buf.base + pos
            held = [_decode(buf, pos, index, fail, chunk, limit)]
            end = held[0][1]
            if end >= chunk:
                # A large element's text is not kept while the element is being used.
                buf.drop(end)
                end = 0
            # Handed over, not kept: this frame holds nothing of the element while suspended.
            yield index, start, held.pop()[0]
            index += 1
            pos = buf.skip_space(end)
            if pos >= len(buf.text):
                raise fail("the file ends inside the array (truncated)", pos, index)
            if buf.text[pos] == "]":
                pos += 1
                break
            if buf.text[pos] != ",":
                raise fail("expected ',' or ']' after a conversation", pos, index)
            pos = buf.skip_space(pos + 1)
    rest = buf.skip_space(pos)
    if rest < len(buf.text):
        raise fail("unexpected data after the array", rest, None)


def _decode(
    buf: _Buffer,
    pos: int,
    index: int,
    fail: Callable[[str, int, int | None], MalformedExportError],
    chunk: int,
    limit: int,
) -> tuple[Any, int]:
    """The element at ``pos`` and the index after it, decoded from a growing window."""
    window = chunk
    while True:
        buf.fill(pos + window)
        text = buf.text
        # Decode in place when the buffer holds little beyond the window; else a copy of the
        # window, so no more than the window can ever be decoded.
        stop = pos + window if len(text) - pos > window + chunk else len(text)
        capped = False
        if window > chunk:
            fits = _fit(text, pos, stop, limit)
            if fits == 0:
                raise _too_large(fail, pos, index, limit)
            # Only what the limit allows is decoded: an element cut there is too large.
            capped = fits < stop - pos
            stop = pos + fits
        piece, at = (text, pos) if stop == len(text) else (text[pos:stop], 0)
        last = stop == len(text) and buf.eof
        try:
            value, end = _DECODER.raw_decode(piece, at)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(piece) - _NEAR_END or exc.msg.startswith("Unterminated")
            if cut and capped:
                raise _too_large(fail, pos, index, limit) from exc
            if cut and not last:
                window = _grow(window, limit, fail, pos, index)
                continue
            problem = exc.msg if not cut else f"{exc.msg} (truncated file)"
            raise fail(problem, exc.pos - at + pos, index) from exc
        except RecursionError as exc:
            raise fail("nested too deeply to decode", pos, index) from exc
        if end == len(piece) and not last:
            # A value ending exactly at the window's end may go on (a number cut short).
            if capped:
                raise _too_large(fail, pos, index, limit)
            window = _grow(window, limit, fail, pos, index)
            continue
        return value, end - at + pos


def _fit(text: str, start: int, stop: int, limit: int) -> int:
    """How much of ``text[start:stop]`` (whole `_STEP` blocks, or all of it) stays within ``limit``.

    Each character costs its width in the whole range (4 bytes if any is not ASCII: a decoded
    string is as wide as its widest character, and so is the text itself).
    """
    width = 1 if _NOT_ASCII.search(text, start, stop) is None else 4
    total = length = 0
    while start + length < stop:
        upto = min(length + _STEP, stop - start)
        cost = estimate(text, start + length, start + upto, width=width)
        if total + cost > limit:
            break
        total += cost
        length = upto
    return length


def _grow(
    window: int,
    limit: int,
    fail: Callable[[str, int, int | None], MalformedExportError],
    pos: int,
    index: int,
) -> int:
    """The next window: twice as long, never past ``limit`` characters (each costs a byte)."""
    if window >= limit:
        raise _too_large(fail, pos, index, limit)
    return min(window * 2, limit)


def _too_large(
    fail: Callable[[str, int, int | None], MalformedExportError], pos: int, index: int, limit: int
) -> ExportLimitError:
    return ExportLimitError(
        f"the conversation takes more than {limit:,} bytes of memory to decode "
        "(ImportLimits.conversation_size)",
        position=fail("", pos, index).position,
        limit="conversation_size",
    )
