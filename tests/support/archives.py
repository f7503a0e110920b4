"""Export archives to attack a restore with: real exports, edited, and zips built by hand.

`tamper` rewrites the rows of one conversation member of a real export (what an attacker who
downloaded their own export can do); `write_zip` builds a zip whose members may be far larger
than the file on disk (`Repeat`: a deflate block repeated, never compressed in full), for
memory bombs that take milliseconds to make.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Repeat", "Tables", "crowded_zip", "rows", "set_rows", "tamper", "write_zip"]

Tables = dict[str, Any]
"""An archive document's ``tables``: name -> {"columns": [...], "rows": [[...], ...]}."""


def rows(tables: Tables, name: str) -> list[dict[str, Any]]:
    """The rows of one table as dicts (a copy; write them back with `set_rows`)."""
    body = tables.get(name)
    if body is None:
        return []
    return [dict(zip(body["columns"], row, strict=True)) for row in body["rows"]]


def set_rows(tables: Tables, name: str, new: list[dict[str, Any]]) -> None:
    """Replace one table's rows (columns taken from the first row, or kept)."""
    columns = list(new[0]) if new else tables.get(name, {}).get("columns", [])
    tables[name] = {"columns": columns, "rows": [[r.get(c) for c in columns] for r in new]}


def tamper(source: Path, target: Path, edit: Callable[[Tables], None], *, member: int = 0) -> Path:
    """``source`` with the tables of its ``member``-th conversation changed by ``edit``."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        manifest = json.loads(src.read("manifest.json"))
        name = manifest["conversations"][member]["file"]
        for item in src.infolist():
            data = src.read(item)
            if item.filename == name:
                document = json.loads(data)
                edit(document["archive"]["tables"])
                data = json.dumps(document).encode()
            dst.writestr(item, data)
    return target


@dataclass(frozen=True)
class Repeat:
    """A member's bytes: ``head``, then ``block`` repeated ``times``, then ``tail``.

    Written as deflate blocks compressed once each (a full flush makes them independent), so a
    gigabyte costs a millisecond. The CRC is not computed (zero): whoever reads the member to
    its end finds it wrong, which is the point of a reader that stops at its limit first.
    """

    head: bytes
    block: bytes
    times: int
    tail: bytes

    @property
    def size(self) -> int:
        return len(self.head) + len(self.block) * self.times + len(self.tail)


def _deflated(data: bytes, mode: int) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(mode)


def write_zip(path: Path, members: dict[str, bytes | Repeat]) -> Path:
    """A zip of deflated ``members``; a `Repeat` is written without being compressed whole."""
    offsets: list[tuple[bytes, int, int, int, int]] = []
    with path.open("wb") as out:
        for name, content in members.items():
            encoded = name.encode()
            offset = out.tell()
            if isinstance(content, Repeat):
                head = _deflated(content.head, zlib.Z_FULL_FLUSH)
                block = _deflated(content.block, zlib.Z_FULL_FLUSH)
                tail = _deflated(content.tail, zlib.Z_FINISH)
                compressed = len(head) + len(block) * content.times + len(tail)
                crc, size = 0, content.size
            else:
                whole = _deflated(content, zlib.Z_FINISH)
                compressed, crc, size = len(whole), zlib.crc32(content), len(content)
            out.write(
                struct.pack(
                    "<4s5H3L2H",
                    b"PK\x03\x04",
                    20,
                    0,
                    8,
                    0,
                    0,
                    crc,
                    compressed,
                    size,
                    len(encoded),
                    0,
                )
            )
            out.write(encoded)
            if isinstance(content, Repeat):
                out.write(head)
                for _ in range(content.times):
                    out.write(block)
                out.write(tail)
            else:
                out.write(whole)
            offsets.append((encoded, offset, crc, compressed, size))
        directory = out.tell()
        for encoded, offset, crc, compressed, size in offsets:
            out.write(
                struct.pack(
                    "<4s6H3L5H2L",
                    b"PK\x01\x02",
                    20,
                    20,
                    0,
                    8,
                    0,
                    0,
                    crc,
                    compressed,
                    size,
                    len(encoded),
                    0,
                    0,
                    0,
                    0,
                    0,
                    offset,
                )
            )
            out.write(encoded)
        end = out.tell()
        out.write(
            struct.pack(
                "<4s4H2LH",
                b"PK\x05\x06",
                0,
                0,
                len(offsets),
                len(offsets),
                end - directory,
                directory,
                0,
            )
        )
    return path


def crowded_zip(
    path: Path,
    members: dict[str, bytes],
    *,
    entries: int,
    declared: int | None = None,
) -> Path:
    """A zip of ``members`` whose central directory then lists ``entries`` more empty files.

    Built byte by byte in one pass (two million entries in about a second): the extra entries
    are directory records only, each naming a 7-character file at the first member's offset.
    ``declared`` is the entry count the end records state (default: the true count); it may
    understate the directory, as an attacker's may. ZIP64 end records carry counts over 65,535.
    """
    body = bytearray()
    directory = bytearray()
    for name, data in members.items():
        raw = name.encode()
        crc = zlib.crc32(data)
        offset = len(body)
        body += struct.pack(
            "<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(raw), 0
        )
        body += raw + data
        directory += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data),
            len(raw), 0, 0, 0, 0, 0, offset,
        ) + raw  # fmt: skip
    blank = struct.pack(
        "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0
    )
    directory += b"".join(blank + b"e%06x" % (i % 0xFFFFFF) for i in range(entries))
    total = len(members) + entries if declared is None else declared
    start, size = len(body), len(directory)
    end64 = start + size
    tail = struct.pack(
        "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, total, total, size, start
    ) + struct.pack("<4sLQL", b"PK\x06\x07", 0, end64, 1)
    short = min(total, 0xFFFF)
    tail += struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, short, short, min(size, 0xFFFFFFFF),
        min(start, 0xFFFFFFFF), 0,
    )  # fmt: skip
    path.write_bytes(bytes(body) + bytes(directory) + tail)
    return path
