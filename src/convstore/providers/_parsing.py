"""Mechanics every provider parser shares.

Tool arguments, proto3 base64 text, OpenAI ``file_data`` and canonical ids for provider call
ids; typed access to untrusted JSON, base64 and data URLs come from `convstore.json_input`
(re-exported here for the parsers).

Invariants:

- Parsers read untrusted JSON only through `Json` (malformed input is a `MalformedPayloadError`
  naming the source and the JSON path). A bytes field kept as its text (`is_base64`) is held to
  the proto3 JSON form exactly: one alphabet, padding optional, no whitespace.
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
import re
from typing import Any, Final

from pydantic import JsonValue

from convstore.errors import MalformedPayloadError
from convstore.json_input import (
    Json,
    check_json_text,
    decode_base64,
    inline_file,
    kind_of,
    parse_data_url,
    root_object,
)
from convstore.limits import MAX_JSON_DEPTH, json_depth
from convstore.model import FilePart, ToolCallPart

__all__ = [
    "CallIds",
    "Json",
    "check_json_text",
    "decode_base64",
    "inline_file",
    "is_base64",
    "parse_arguments",
    "parse_data_url",
    "root_object",
]

_BASE64_TEXT: Final = re.compile(r"(?:[A-Za-z0-9+/]*|[A-Za-z0-9_-]*)={0,2}")


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
        raise node.fail(f"tool arguments must be an object or a JSON string, got {kind_of(value)}")
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

    def call_part(
        self,
        provider_id: str | None,
        name: str,
        arguments: dict[str, JsonValue],
        raw_arguments: str | None,
        details: dict[str, JsonValue] | None = None,
    ) -> ToolCallPart:
        """A new call's part, under the canonical id `call` gives it."""
        return ToolCallPart(
            id=self.call(provider_id, name),
            name=name,
            arguments=arguments,
            raw_arguments=raw_arguments,
            provider_id=provider_id,
            provider_details=details,
        )

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
