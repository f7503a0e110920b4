"""Reading untrusted JSON: typed access with paths, base64, ``data:`` URLs and inline files.

What every reader of JSON from outside shares: the provider parsers (`convstore.providers`),
the framework integrations (`convstore.integrations`) and the importers.

Invariants:

- Untrusted JSON is read only through `Json`, so malformed input (a missing key, a wrong type)
  raises `MalformedPayloadError` naming the source and the JSON path, never a
  ``KeyError``/``TypeError``/``AttributeError``.
- Base64 in either alphabet (standard or URL-safe), padded or not, decodes; anything else is
  malformed.
- Strings that are not Unicode (lone surrogates) and numbers that are not JSON (NaN,
  infinities) are malformed (`check_json_text`): no database can store them.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from convstore.errors import MalformedPayloadError, MediaTypeMismatchError
from convstore.limits import has_lone_surrogate
from convstore.media_types import (
    SNIFF_PREFIX_BYTES,
    contradicts,
    guess_from_name,
    normalize_media_type,
    sniff,
)
from convstore.model import FilePart

__all__ = [
    "Json",
    "check_json_text",
    "decode_base64",
    "inline_file",
    "kind_of",
    "parse_data_url",
    "root_object",
]

_DATA_URL: Final = re.compile(
    r"^data:(?P<type>[^;,]*)(?P<params>(;[^;,]*)*?)(;base64)?,", re.IGNORECASE
)


class Json:
    """A node of untrusted JSON with its path, for typed, well-reported access."""

    __slots__ = ("path", "source", "value")

    def __init__(self, value: Any, source: str, path: str = "$") -> None:
        self.value = value
        self.source = source
        self.path = path

    def fail(self, what: str) -> MalformedPayloadError:
        """An error for this node."""
        return MalformedPayloadError(f"{self.source} payload: {self.path}: {what}")

    def _child(self, value: Any, suffix: str) -> Json:
        return Json(value, self.source, f"{self.path}{suffix}")

    # shape checks

    def object(self) -> dict[str, Any]:
        """The node as a JSON object."""
        if not isinstance(self.value, dict):
            raise self.fail(f"expected an object, got {kind_of(self.value)}")
        return self.value

    def array(self) -> list[Any]:
        """The node as a JSON array."""
        if not isinstance(self.value, list):
            raise self.fail(f"expected an array, got {kind_of(self.value)}")
        return self.value

    def string(self) -> str:
        """The node as a string."""
        if not isinstance(self.value, str):
            raise self.fail(f"expected a string, got {kind_of(self.value)}")
        return self.value

    def boolean(self) -> bool:
        """The node as a boolean."""
        if not isinstance(self.value, bool):
            raise self.fail(f"expected a boolean, got {kind_of(self.value)}")
        return self.value

    # navigation

    def has(self, *keys: str) -> bool:
        """Whether this object has any of ``keys`` with a non-null value."""
        obj = self.object()
        return any(obj.get(k) is not None for k in keys)

    def get(self, *keys: str) -> Json | None:
        """The first of ``keys`` present with a non-null value, or ``None``."""
        obj = self.object()
        for key in keys:
            if obj.get(key) is not None:
                return self._child(obj[key], f".{key}")
        return None

    def require(self, *keys: str) -> Json:
        """The first of ``keys`` present with a non-null value; malformed when none is."""
        found = self.get(*keys)
        if found is None:
            raise self.fail(f"missing {' / '.join(repr(k) for k in keys)}")
        return found

    def str_or_none(self, *keys: str) -> str | None:
        """An optional string field."""
        found = self.get(*keys)
        return None if found is None else found.string()

    def items(self) -> Iterator[Json]:
        """The elements of this array."""
        for index, item in enumerate(self.array()):
            yield self._child(item, f"[{index}]")


def kind_of(value: Any) -> str:
    """How an error names a JSON value's type (``an object``, ``null``, ...)."""
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def check_json_text(value: Any, source: str) -> None:
    """Refuse lone surrogates (in strings and keys) and NaN/infinite numbers anywhere in ``value``.

    Walks iteratively, so a payload nested deeper than Python's recursion limit is safe.
    """
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if has_lone_surrogate(node):
                raise Json(node, source, path).fail("a string holds a lone surrogate (not Unicode)")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise Json(node, source, path).fail(f"{node} is not a JSON number")
        elif isinstance(node, dict):
            for key, child in node.items():
                if isinstance(key, str) and has_lone_surrogate(key):
                    raise Json(node, source, path).fail(
                        "a key holds a lone surrogate (not Unicode)"
                    )
                stack.append((child, f"{path}.{key}"))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(node))


def decode_base64(text: str, node: Json) -> bytes:
    """Bytes from standard or URL-safe base64 (padding optional); malformed otherwise."""
    cleaned = "".join(text.split())
    if "-" in cleaned or "_" in cleaned:
        cleaned = cleaned.replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise node.fail("invalid base64 data") from exc


def parse_data_url(url: str, node: Json) -> tuple[str | None, bytes] | None:
    """(media type or ``None``, bytes) of a ``data:`` URL; ``None`` for any other URL."""
    match = _DATA_URL.match(url)
    if match is None:
        if url[:5].lower() == "data:":
            raise node.fail("malformed data: URL")
        return None
    payload = url[match.end() :]
    media_type = match.group("type") or None
    if url[: match.end()].lower().endswith(";base64,"):
        return media_type, decode_base64(payload, node)
    return media_type, unquote_to_bytes(payload)


def inline_file(data: bytes, declared: str | None, filename: str | None, node: Json) -> FilePart:
    """Inline bytes as a `FilePart`, typed by what they are.

    One policy for every parser:

    - a declared type contradicted by a signature the bytes carry gives way to the bytes (the
      provider sniffs them too, and a history stored under a wrong label must still import);
    - a declared type whose mandatory signature the bytes lack is malformed (no provider
      accepted those bytes as that type);
    - without a declared type, the file name's type is used unless the bytes contradict it.
    """
    sniffed = sniff(data[:SNIFF_PREFIX_BYTES])
    media_type = normalize_media_type(declared) if declared else None
    if media_type is None:
        guessed = guess_from_name(filename) if filename else None
        if guessed is not None and not contradicts(guessed, sniffed):
            media_type = guessed
    elif sniffed is not None and contradicts(media_type, sniffed):
        media_type = sniffed
    try:
        return FilePart.from_bytes(data, media_type=media_type, filename=filename)
    except MediaTypeMismatchError as exc:
        raise node.fail(str(exc)) from exc


def root_object(payload: Any, source: str) -> Json:
    """A payload's top-level object (any mapping, copied to a dict); malformed when not one.

    Callers hand in whatever they stored: check, never trust.
    """
    root = Json(dict(payload) if isinstance(payload, Mapping) else payload, source)
    root.object()
    return root
