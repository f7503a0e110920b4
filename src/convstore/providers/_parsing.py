"""Mechanics every provider parser shares.

Typed access to untrusted JSON, base64 and data URLs, tool arguments, and canonical ids for
provider call ids.

Invariants:

- Parsers read untrusted JSON only through `Json`, so malformed input (a missing key, a wrong
  type) raises `MalformedPayloadError` naming the source and the JSON path, never a
  ``KeyError``/``TypeError``/``AttributeError``.
- Base64 in either alphabet (standard or URL-safe, as Gemini emits), padded or not, decodes;
  anything else is malformed. A bytes field kept as its text (`is_base64`) is held to the
  proto3 JSON form exactly: one alphabet, padding optional, no whitespace.
- Strings that are not Unicode (lone surrogates) and numbers that are not JSON (NaN,
  infinities) are malformed (`check_json_text`): no provider received them as JSON text, and no
  database can store them.
- Tool arguments that are not a JSON object the model can hold (broken JSON, JSON nested deeper
  than `convstore.limits.MAX_JSON_DEPTH`, or too deep for Python to decode) are kept verbatim.
- `CallIds` gives every call a canonical id unique within one parse: the provider's id when it
  is new, a re-minted ``{id}~{n}`` when a provider reused it across rounds, and a positional
  id when the provider gave none. Results find the latest open call with their provider id.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from pydantic import JsonValue

from convstore.errors import MalformedPayloadError, MediaTypeMismatchError
from convstore.limits import MAX_JSON_DEPTH, has_lone_surrogate, json_depth
from convstore.media_types import (
    SNIFF_PREFIX_BYTES,
    contradicts,
    guess_from_name,
    normalize_media_type,
    sniff,
)
from convstore.model import FilePart

__all__ = [
    "CallIds",
    "Json",
    "check_json_text",
    "decode_base64",
    "inline_file",
    "is_base64",
    "parse_arguments",
    "parse_data_url",
]

_BASE64_TEXT: Final = re.compile(r"(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}")
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
            raise self.fail(f"expected an object, got {_kind(self.value)}")
        return self.value

    def array(self) -> list[Any]:
        """The node as a JSON array."""
        if not isinstance(self.value, list):
            raise self.fail(f"expected an array, got {_kind(self.value)}")
        return self.value

    def string(self) -> str:
        """The node as a string."""
        if not isinstance(self.value, str):
            raise self.fail(f"expected a string, got {_kind(self.value)}")
        return self.value

    def boolean(self) -> bool:
        """The node as a boolean."""
        if not isinstance(self.value, bool):
            raise self.fail(f"expected a boolean, got {_kind(self.value)}")
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


def _kind(value: Any) -> str:
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


def is_base64(text: str) -> bool:
    """Whether ``text`` is bytes as proto3 JSON writes them, to be sent back as it is.

    Standard or URL-safe base64 (not both at once), with full padding or none, unused bits of
    the last character zero, and nothing else: what Google's own clients (google-genai's
    ``bytes`` fields) accept. Unlike `decode_base64`, which reads media, whitespace is not
    tolerated: the text is resent as it is.
    """
    if _BASE64_TEXT.fullmatch(text) is None:
        return False
    data = text.rstrip("=")
    padding = len(text) - len(data)
    if len(data) % 4 == 1 or (padding and (len(data) + padding) % 4):
        return False
    standard = data.replace("-", "+").replace("_", "/")
    try:
        decoded = base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    # Encoding again gives the canonical text: it differs exactly when unused bits were set.
    return base64.b64encode(decoded).decode("ascii").rstrip("=") == standard


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


def inline_file_data(node: Json, filename: str | None) -> FilePart:
    """An OpenAI ``file_data`` string: a ``data:`` URL or bare base64."""
    text = node.string()
    decoded = parse_data_url(text, node)
    declared, data = decoded if decoded is not None else (None, decode_base64(text, node))
    return inline_file(data, declared, filename, node)


def parse_arguments(node: Json | None) -> tuple[dict[str, JsonValue], str | None]:
    """(arguments object, raw text kept when the model's text was not a JSON object).

    ``node`` is the arguments as the payload holds them (absent: no arguments).
    """
    if node is None:
        return {}, None
    value = node.value
    if isinstance(value, dict):
        return value, None
    if not isinstance(value, str):
        raise node.fail(f"tool arguments must be an object or a JSON string, got {_kind(value)}")
    if not value.strip():
        return {}, None
    try:
        # NaN and infinities are not JSON: such text is broken like any other.
        decoded = json.loads(value, parse_constant=_not_json)
        if not isinstance(decoded, dict) or json_depth(decoded) > MAX_JSON_DEPTH:
            return {}, value
        check_json_text(decoded, node.source)  # a lone surrogate escape is not Unicode
    except (ValueError, RecursionError, MalformedPayloadError):
        # Models do emit broken JSON (or JSON too deep to decode): keep it verbatim.
        return {}, value
    return decoded, None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


class CallIds:
    """Canonical ids for the calls of one parsed history."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._used: set[str] = set()
        self._open: dict[str, list[str]] = {}  # provider id -> canonical ids without a result
        self._by_name: dict[str, list[str]] = {}  # tool name -> canonical ids without a result
        self._answered: dict[str, str] = {}  # provider id -> the call it last answered
        self._names: dict[str, str] = {}  # canonical id -> tool name
        self._count = 0

    def call(self, provider_id: str | None, name: str) -> str:
        """The canonical id for a new call."""
        self._count += 1
        base = provider_id or f"{self._prefix}_{self._count}"
        canonical, n = base, 1
        while canonical in self._used:
            n += 1
            canonical = f"{base}~{n}"
        self._used.add(canonical)
        if provider_id:
            self._open.setdefault(provider_id, []).append(canonical)
        self._by_name.setdefault(name, []).append(canonical)
        self._names[canonical] = name
        return canonical

    def name_of(self, canonical: str) -> str | None:
        """The tool name of the call ``canonical`` names, if it is one of this parse's."""
        return self._names.get(canonical)

    def result(self, provider_id: str | None, name: str | None = None) -> str:
        """The canonical id of the call a result answers.

        The latest open call with the provider id, else (no id, as Gemini 2 allows) the oldest
        open call with that tool name; a result for no known call keeps its provider id (or a
        positional id), so it is stored as an orphan rather than lost.
        """
        if provider_id and self._open.get(provider_id):
            canonical = self._open[provider_id].pop()
            self._forget_name(canonical)
            self._answered[provider_id] = canonical
            return canonical
        if not provider_id and name and self._by_name.get(name):
            canonical = self._by_name[name].pop(0)
            for pending in self._open.values():
                if canonical in pending:
                    pending.remove(canonical)
            return canonical
        if provider_id and provider_id in self._answered:
            return self._answered[provider_id]  # a repeated result: a duplicate of that call's
        self._count += 1
        return provider_id or f"{self._prefix}_result_{self._count}"

    def _forget_name(self, canonical: str) -> None:
        for pending in self._by_name.values():
            if canonical in pending:
                pending.remove(canonical)
                return
