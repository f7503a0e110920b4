"""``/attachments/{sha256}``: stored bytes, served so that a browser can never run them.

Invariants:

- The bytes come from `ConversationStore.read_attachment` with the app's tenant: hash-verified,
  and bytes no conversation of that tenant references are a 404, worded like missing ones.
- The media type is what the bytes' signature proves (`convstore.media_types.sniff`), never what a
  writer declared; bytes without a known signature are ``application/octet-stream``, except
  UTF-8 text declared ``text/plain`` (the link says so), which is served as
  ``text/plain; charset=utf-8`` (still a download, ``nosniff``: a browser renders it as text).
- A download keeps its stored file name: plain ASCII in ``filename``, the name itself (any
  script) in ``filename*`` (RFC 6266 / 8187), control and path characters removed.
- Only raster images are served inline. Everything else (SVG, HTML, PDF, unknown types) is a
  download: ``Content-Disposition: attachment``. Every response is ``nosniff`` and under a
  sandboxing Content-Security-Policy, so even a download opened in place runs nothing.
- Content-addressed bytes never change: they are cacheable for a year (privately: the token
  and tenant checks apply to every request).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from convstore.errors import AttachmentNotFoundError
from convstore.media_types import OCTET_STREAM, SNIFF_PREFIX_BYTES, sniff
from convstore.model import FilePart
from convstore.model.content import AttachmentRef
from convstore.store import ConversationStore
from convstore.web._views import INLINE_TYPES

__all__ = ["ATTACHMENT_CSP", "Attachments"]

ATTACHMENT_CSP: Final = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_SAFE_NAME: Final = re.compile(r"[^A-Za-z0-9._-]+")
_UNSAFE_CHARS: Final = re.compile(r'[\x00-\x1f\x7f-\x9f/\\"*:<>?|\u202a-\u202e\u2066-\u2069]+')
_TEXT_SNIFF: Final = 64 * 1024


def _download_name(raw: str | None, sha256: str) -> str:
    """A file name safe in a header: the given one's plain characters, or the hash."""
    name = _SAFE_NAME.sub("_", raw or "").strip("._")[:100]
    return name or sha256[:16]


def _disposition(raw: str | None, sha256: str) -> str:
    """``attachment`` with an ASCII ``filename`` and, for any other name, ``filename*``."""
    ascii_name = _download_name(raw, sha256)
    full = _UNSAFE_CHARS.sub("_", raw or "").strip(" ._")[:200]
    if not full or full == ascii_name:
        return f'attachment; filename="{ascii_name}"'
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(full, safe='')}"


def _is_text(data: bytes) -> bool:
    """UTF-8 without NUL (a cut multi-byte character at the sniffed prefix's end is fine)."""
    head = data[:_TEXT_SNIFF]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return len(data) > _TEXT_SNIFF and exc.start >= len(head) - 3
    return True


class Attachments:
    """The attachment route, bound to one store and tenant."""

    def __init__(self, store: ConversationStore, *, tenant: str | None) -> None:
        self._store = store
        self._tenant = tenant

    async def get(self, request: Request) -> Response:
        """The bytes with their sniffed type; images inline, anything else a download."""
        sha256 = request.path_params["sha256"]
        if not _SHA256.fullmatch(sha256):
            raise AttachmentNotFoundError.not_visible(sha256[:64])
        # The reference's size is not used to read: the bytes are checked against the hash.
        part = FilePart(attachment=AttachmentRef(sha256=sha256, size=0))
        data = await self._store.read_attachment(part, tenant=self._tenant)
        media_type = sniff(data[:SNIFF_PREFIX_BYTES]) or OCTET_STREAM
        declared = request.query_params.get("type", "")
        if media_type == OCTET_STREAM and declared == "text/plain" and _is_text(data):
            media_type = "text/plain; charset=utf-8"
        inline = media_type in INLINE_TYPES and request.query_params.get("download") is None
        name = request.query_params.get("name")
        disposition = "inline" if inline else _disposition(name, sha256)
        return Response(
            data,
            media_type=media_type,
            headers={
                "content-disposition": disposition,
                "content-security-policy": ATTACHMENT_CSP,
                "cache-control": "private, max-age=31536000, immutable",
                "cross-origin-resource-policy": "same-origin",
                "etag": f'"{sha256}"',
            },
        )
