"""An export as the product hands it over: a JSON file, a directory, or a ``.zip``.

Every method blocks (file and zip reads): callers run them in a worker thread.

Invariants:

- Conversation files are found by name (``conversations.json``, ``conversations-000.json``,
  ...), in name order, at the top of the export or one directory down (a zip that wraps
  its files in a folder).
- Assets (uploaded and generated images, files) are found by the id the conversation names
  them with: the export stores them under file names that start with that id, anywhere in
  the tree. A name that is not there resolves to nothing; the caller keeps a reference.
"""

from __future__ import annotations

import bisect
import fnmatch
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO, Final

from convstore.errors import InvalidInputError

__all__ = ["ExportSource"]

_MAX_ASSET_BYTES: Final = 512 * 1024 * 1024
"""An asset larger than this is kept as a reference rather than read into memory."""


class ExportSource:
    """The files of one export."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        names: list[str]
        try:
            if path.is_dir():
                names = [p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()]
            elif zipfile.is_zipfile(path):
                self._zip = zipfile.ZipFile(path)
                names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
            elif path.is_file():
                names = [path.name]
            else:
                raise InvalidInputError(f"no export at {path}")
        except (OSError, zipfile.BadZipFile) as exc:
            raise InvalidInputError(f"cannot read the export at {path}: {exc}") from exc
        self._names = names
        self._single = not path.is_dir() and self._zip is None
        assets = names
        if self._single:
            # A conversations file handed alone: its assets are the files beside it.
            try:
                assets = [p.name for p in path.parent.iterdir() if p.is_file() and p != path]
            except OSError:
                assets = []
        # Asset lookup by id prefix: basenames sorted, each with its full name.
        self._assets = sorted((PurePosixPath(n).name, n) for n in assets)
        self._asset_keys = [basename for basename, _ in self._assets]

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def conversation_files(self, patterns: tuple[str, ...]) -> list[str]:
        """The conversation files (by name patterns), in name order."""
        if self._single:
            return list(self._names)
        found = [
            n
            for n in self._names
            if len(PurePosixPath(n).parts) <= 2
            and any(fnmatch.fnmatch(PurePosixPath(n).name, p) for p in patterns)
        ]
        return sorted(found, key=lambda n: (len(PurePosixPath(n).parts), n))

    def _file(self, name: str) -> Path:
        if self._single:
            return self.path if name == self.path.name else self.path.parent / name
        return self.path / name

    def open(self, name: str) -> IO[bytes]:
        try:
            if self._zip is not None:
                return self._zip.open(name)
            return self._file(name).open("rb")
        except (OSError, zipfile.BadZipFile, KeyError) as exc:
            raise InvalidInputError(f"cannot read {name} in {self.path}: {exc}") from exc

    def size(self, name: str) -> int:
        if self._zip is not None:
            return self._zip.getinfo(name).file_size
        return self._file(name).stat().st_size

    def find_asset(self, asset_id: str) -> str | None:
        """The file whose name starts with ``asset_id`` (the export's naming), if any."""
        if not asset_id:
            return None
        at = bisect.bisect_left(self._asset_keys, asset_id)
        while at < len(self._assets) and self._asset_keys[at].startswith(asset_id):
            # The id is followed by a separator (``file-abc-name.png``), not more id.
            rest = self._asset_keys[at][len(asset_id) :]
            if not rest or rest[0] in "-._":
                return self._assets[at][1]
            at += 1
        return None

    def read_asset(self, name: str) -> bytes | None:
        """The bytes of an asset; None when it is too large to hold or cannot be read."""
        try:
            if self.size(name) > _MAX_ASSET_BYTES:
                return None
            with self.open(name) as f:
                return f.read()
        except (OSError, InvalidInputError, zipfile.BadZipFile):
            return None
