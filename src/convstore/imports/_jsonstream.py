"""The elements of a top-level JSON array, one at a time, with memory bounded by the largest.

Exports hold every conversation in one JSON array (a ChatGPT ``conversations.json`` reaches a
gigabyte); a whole-file ``json.load`` would hold all of it, and its objects, at once. This
reader decodes one element at a time with the standard library's C decoder
(`json.JSONDecoder.raw_decode`) from a text buffer that holds the element being read and at
most one chunk beyond it.

Invariants:

- An element that does not fit the buffer yet is retried after reading at least as much again
  as the buffer holds, so a large element costs amortised linear time, not quadratic. The
  text before the current element is dropped once it exceeds a chunk.
- A decoding error far from the end of the buffer is the file's fault and is reported at once;
  one at the end of the buffer only means "read more". At the end of the file every error is
  final. Either way the error names the file, the character offset and the element's index.
- A top-level object (not an array) is read as an array of that one element.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any, Final

from convstore.errors import MalformedExportError

__all__ = ["array_items"]

_CHUNK: Final = 1 << 20
_NEAR_END: Final = 16
"""An error this close to the buffer's end may be an element cut by the chunk boundary
(``\\uXXXX`` escapes are the longest token a boundary can split: 6 characters)."""
_WHITESPACE: Final = " \t\n\r"
_DECODER: Final = json.JSONDecoder()


class _Buffer:
    """Decoded text of a binary stream, read forward in chunks; ``base`` is ``text[0]``'s offset."""

    def __init__(self, raw: IO[bytes], name: str, chunk: int) -> None:
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
            data = self._raw.read(max(self._chunk, at_least - got))
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

    def drop(self, upto: int) -> None:
        """Forget the text before ``upto`` (already consumed)."""
        self.text = self.text[upto:]
        self.base += upto

    def skip_space(self, pos: int) -> int:
        """The index of the next non-blank character at or after ``pos`` (``len`` at EOF)."""
        while True:
            text = self.text
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
            if pos < len(text) or not self.more():
                return pos


def array_items(
    raw: IO[bytes], name: str, *, chunk: int = _CHUNK
) -> Iterator[tuple[int, int, Any]]:
    """``(index, character offset, value)`` of each element of the array ``raw`` holds.

    ``chunk`` is how many bytes are read at a time.
    """
    buf = _Buffer(raw, name, chunk)

    def fail(problem: str, pos: int, index: int | None) -> MalformedExportError:
        where = f"{name}, character {buf.base + pos}"
        if index is not None:
            where += f", conversation {index}"
        return MalformedExportError(problem, position=where)

    pos = buf.skip_space(0)
    if pos >= len(buf.text):
        raise fail("the file is empty", pos, None)
    if buf.text[pos] == "{":
        value, end = _decode(buf, pos, 0, fail)
        if buf.skip_space(end) < len(buf.text):
            raise fail("unexpected data after the conversation", buf.skip_space(end), None)
        yield 0, buf.base + pos, value
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
            value, end = _decode(buf, pos, index, fail)
            yield index, buf.base + pos, value
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


def _decode(buf: _Buffer, pos: int, index: int, fail: Any) -> tuple[Any, int]:
    while True:
        try:
            value, end = _DECODER.raw_decode(buf.text, pos)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(buf.text) - _NEAR_END or exc.msg.startswith("Unterminated")
            if cut and buf.more(len(buf.text) - pos):
                continue
            problem = exc.msg if not buf.eof or not cut else f"{exc.msg} (truncated file)"
            raise fail(problem, exc.pos, index) from exc
        except RecursionError as exc:
            raise fail("nested too deeply to decode", pos, index) from exc
        return value, end
