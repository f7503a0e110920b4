"""Media types: normalising what callers declare and sniffing what the bytes say.

Invariants:

- Only formats with a mandatory, unambiguous signature are sniffed. Container formats that
  other formats reuse (ZIP under DOCX, XML under SVG) are never guessed, so a correct declared
  type is never contradicted by a too-clever sniffer.
- A declared type is *contradicted* when the bytes carry a known signature of another type, or
  when the declared type is one whose signature is mandatory and the bytes lack it.
- Pure functions, no I/O: the model and the blob layer both call them.
"""

from __future__ import annotations

import mimetypes
from typing import Final

__all__ = [
    "OCTET_STREAM",
    "SNIFF_PREFIX_BYTES",
    "contradicts",
    "guess_from_name",
    "normalize_media_type",
    "resolve_media_type",
    "sniff",
]

OCTET_STREAM: Final = "application/octet-stream"

#: How many leading bytes `sniff` needs to see to decide.
SNIFF_PREFIX_BYTES: Final = 1024

# Aliases seen in the wild, mapped to their registered names.
_ALIASES: Final[dict[str, str]] = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "application/x-pdf": "application/pdf",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/x-flac": "audio/flac",
}

# Types whose files always start with their signature: bytes without it are not that type.
_MANDATORY_SIGNATURE: Final = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}
)


def normalize_media_type(media_type: str) -> str:
    """Lower-case, drop parameters (``; charset=...``) and map common aliases."""
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def sniff(prefix: bytes) -> str | None:
    """The media type that ``prefix`` (the first bytes of a file) proves, or ``None``."""
    if prefix.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if prefix.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if prefix.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if prefix[:4] == b"RIFF" and prefix[8:12] == b"WEBP":
        return "image/webp"
    if prefix[:4] == b"RIFF" and prefix[8:12] == b"WAVE":
        return "audio/wav"
    if prefix.startswith(b"fLaC"):
        return "audio/flac"
    if prefix.startswith(b"OggS"):
        return "audio/ogg"
    if prefix.startswith(b"BM") and len(prefix) >= 14 and prefix[6:10] == b"\x00\x00\x00\x00":
        return "image/bmp"
    if prefix.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    # PDF readers accept up to 1 KiB of leading junk before the header (ISO 32000-1, 7.5.2 note).
    if b"%PDF-" in prefix[:SNIFF_PREFIX_BYTES]:
        return "application/pdf"
    return None


def contradicts(declared: str, sniffed: str | None) -> bool:
    """Whether the bytes' signature contradicts the declared (normalised) media type."""
    if declared == OCTET_STREAM:
        return False
    if sniffed is not None:
        return sniffed != declared
    return declared in _MANDATORY_SIGNATURE


def guess_from_name(name: str) -> str | None:
    """The media type a file name's extension suggests (never used to contradict bytes)."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return normalize_media_type(guessed) if guessed else None


def not_a_media_type(declared: str) -> str:
    """Why ``declared`` (a bare extension such as ``png``) is refused, and what to write."""
    guess = guess_from_name(f"file.{declared.strip().lstrip('.')}") if declared.strip() else None
    hint = f" (for {declared!r} files: {guess!r})" if guess else ""
    return f"{declared[:80]!r} is not a media type: write it as type/subtype{hint}"


def resolve_media_type(declared: str | None, prefix: bytes) -> str:
    """The media type to record for bytes starting with ``prefix``.

    Raises ``ValueError`` (callers translate it into their own typed error) when the bytes
    contradict ``declared``. An undeclared or generic type is replaced by the sniffed one.
    """
    sniffed = sniff(prefix)
    if declared is None:
        return sniffed or OCTET_STREAM
    normalized = normalize_media_type(declared)
    if "/" not in normalized:
        raise ValueError(not_a_media_type(declared))
    if contradicts(normalized, sniffed):
        raise ValueError(
            f"declared media type {normalized!r} is contradicted by the bytes"
            + (f", which are {sniffed!r}" if sniffed else "")
        )
    if normalized == OCTET_STREAM and sniffed is not None:
        return sniffed
    return normalized
