"""Realistic test images: real PNGs of photo-like noise, which barely compress.

Noise makes the base64 of any image past a few hundred bytes use both alphabets' own
characters (``+``/``/`` and ``-``/``_``), as real photos do and tiny test PNGs often do not.
"""

from __future__ import annotations

import random
import struct
import zlib

__all__ = ["noise_png"]


def noise_png(seed: int, width: int, height: int) -> bytes:
    """A valid RGB PNG of random pixels (about ``3 * width * height`` bytes)."""
    rng = random.Random(seed)
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
