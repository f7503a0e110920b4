"""Moving inline bytes out of a framework's native JSON record and back.

A framework record (a pydantic-ai message, an ADK event) carries files as base64 text inside
its JSON. Stored as is, the image would sit in the database row. The integrations instead keep
the bytes as canonical `FilePart`s (stored as content-addressed blobs on append) and replace the
base64 text in the record by a placeholder naming the blob; reading the record back puts the
same base64 text where it was, so the record round-trips exactly.

Invariants:

- A string is only externalised when decoding and re-encoding it (in the framework's alphabet)
  gives the identical text; anything else stays inline, so restoring is always exact.
- The placeholder is a JSON object ``{"convstore.blob": {"sha256", "size", "media_type"}}`` in
  place of a string, which no framework writes for its bytes field, so it cannot be confused
  with data. A ``data:`` URL (``data:image/png;base64,...``) keeps its text before the base64
  payload in the placeholder's ``prefix`` and gets it back on restore.
- This module does no I/O of its own: reading bytes goes through the caller's ``fetch``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from convstore.errors import MediaTypeMismatchError
from convstore.model import AttachmentRef, FilePart

__all__ = [
    "BLOB_KEY",
    "InlineFile",
    "decode_inline",
    "externalize",
    "placeholder",
    "restore",
    "stored_part",
]

BLOB_KEY = "convstore.blob"
"""The key of a placeholder object."""

Alphabet = Literal["standard", "urlsafe"]

# A matcher looks at one JSON object and says which of its keys holds base64 bytes, and their
# media type, or None when the object is not a file.
Matcher = Callable[[dict[str, JsonValue]], tuple[str, str | None] | None]


@dataclass(frozen=True, slots=True)
class InlineFile:
    """Bytes found in a record: where they were and what they are."""

    data: bytes
    media_type: str | None

    @property
    def sha256(self) -> str:
        """The content hash the blob store files them under."""
        return hashlib.sha256(self.data).hexdigest()

    def part(self) -> FilePart:
        """A canonical inline `FilePart` of the bytes (stored as a blob on append).

        A declared media type that the bytes contradict gives way to the sniffed one: the
        framework record keeps what the framework said, the canonical part what the bytes are.
        """
        try:
            return FilePart.from_bytes(self.data, media_type=self.media_type)
        except MediaTypeMismatchError:
            return FilePart.from_bytes(self.data)


def decode_inline(text: str, alphabet: Alphabet) -> bytes | None:
    """The bytes base64 ``text`` encodes, if re-encoding them gives ``text`` back exactly."""
    try:
        raw = (
            base64.urlsafe_b64decode(text)
            if alphabet == "urlsafe"
            else base64.b64decode(text, validate=True)
        )
    except (binascii.Error, ValueError):
        return None
    return raw if _encode(raw, alphabet) == text else None


def _encode(raw: bytes, alphabet: Alphabet) -> str:
    encoded = base64.urlsafe_b64encode(raw) if alphabet == "urlsafe" else base64.b64encode(raw)
    return encoded.decode("ascii")


def externalize(
    record: JsonValue, match: Matcher, alphabet: Alphabet
) -> tuple[JsonValue, list[InlineFile]]:
    """A copy of ``record`` with every matched bytes field replaced by a placeholder.

    Returns the copy and the files found, in document order (one per field; the same bytes twice
    give two entries, which the blob store stores once).
    """
    found: list[InlineFile] = []

    def walk(node: JsonValue) -> JsonValue:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        copy = {key: walk(value) for key, value in node.items()}
        hit = match(node)
        if hit is not None:
            key, media_type = hit
            text = node.get(key)
            prefix, payload = _split_data_url(text) if isinstance(text, str) else ("", None)
            raw = decode_inline(payload, alphabet) if payload is not None else None
            if raw is not None:
                if prefix and media_type is None:
                    media_type = prefix[5 : prefix.find(";")] or None
                found.append(InlineFile(raw, media_type))
                copy[key] = placeholder(raw, media_type, prefix)
        return copy

    return walk(record), found


def placeholder(raw: bytes, media_type: str | None, prefix: str = "") -> dict[str, JsonValue]:
    """What stands in a record for ``raw``: `restore` puts back ``prefix`` + its base64 text.

    Only for bytes whose base64 text (in the alphabet `restore` is given) is exactly what the
    record held, after ``prefix`` (a ``data:`` URL's head).
    """
    ref: dict[str, JsonValue] = {
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw),
        "media_type": media_type,
    }
    if prefix:
        ref["prefix"] = prefix
    return {BLOB_KEY: ref}


def _split_data_url(text: str) -> tuple[str, str | None]:
    """``("data:...;base64,", payload)`` of a base64 data URL, ``("", text)`` of anything else."""
    if text[:5].lower() != "data:":
        return "", text
    head, sep, payload = text.partition(",")
    if not sep or not head.lower().endswith(";base64"):
        return "", None
    return head + sep, payload


def stored_part(placeholder: dict[str, JsonValue]) -> FilePart:
    """A `FilePart` referring to the blob a placeholder names (for `read_attachment`)."""
    sha = placeholder["sha256"]
    size = placeholder["size"]
    media_type = placeholder.get("media_type")
    # Both written by `externalize`.
    assert isinstance(sha, str)
    assert isinstance(size, int)
    return FilePart(
        attachment=AttachmentRef(sha256=sha, size=size),
        media_type=media_type if isinstance(media_type, str) else "application/octet-stream",
    )


def _placeholders(node: JsonValue, into: dict[str, dict[str, JsonValue]]) -> None:
    if isinstance(node, list):
        for item in node:
            _placeholders(item, into)
    elif isinstance(node, dict):
        if len(node) == 1 and isinstance(ref := node.get(BLOB_KEY), dict):
            sha = ref.get("sha256")
            if isinstance(sha, str):
                into[sha] = ref
            return
        for value in node.values():
            _placeholders(value, into)


async def restore(
    records: list[JsonValue],
    fetch: Callable[[FilePart], Awaitable[bytes]],
    alphabet: Alphabet,
) -> list[JsonValue]:
    """``records`` with every placeholder replaced by the base64 text of its bytes.

    Each distinct blob is fetched once, all of them concurrently.
    """
    refs: dict[str, dict[str, JsonValue]] = {}
    for record in records:
        _placeholders(record, refs)
    if not refs:
        return records
    shas = list(refs)
    payloads = await asyncio.gather(*(fetch(stored_part(refs[sha])) for sha in shas))
    texts = {sha: _encode(raw, alphabet) for sha, raw in zip(shas, payloads, strict=True)}

    def walk(node: JsonValue) -> JsonValue:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1 and isinstance(ref := node.get(BLOB_KEY), dict):
            sha = ref.get("sha256")
            if isinstance(sha, str) and sha in texts:
                prefix = ref.get("prefix")
                return (prefix if isinstance(prefix, str) else "") + texts[sha]
        return {key: walk(value) for key, value in node.items()}

    return [walk(record) for record in records]
