"""An export as the product hands it over: a JSON file, a directory, or a ``.zip``.

Every method blocks (file and zip reads) except `ExportSource.asset`'s stream: callers run
them in a worker thread.

Invariants (an export is a stranger's file; see also `convstore.imports._limits`):

- Nothing outside the export is read. A JSON file handed alone is the whole export: no file
  beside it is looked at. A directory is listed without following symbolic links, and every
  file is opened one path component at a time with ``O_NOFOLLOW`` below the directory given,
  so a link (or one swapped in after the listing) is never followed out of it. A zip's members
  are read from the zip.
- Conversation files are found by name (``conversations.json``, ``conversations-000.json``,
  ...), in name order, at the top of the export or one directory down (a zip that wraps its
  files in a folder).
- An asset (an uploaded or generated file) is found by one exact key: the export names files
  ``<id>-<original name>``, ``<id>.<ext>`` or ``<id>``, so a file's keys are its whole base
  name, the base name up to its first ``.``, and, for ChatGPT's ids (``file-…``, ``file_…``),
  the id it starts with. A pointer matches a key exactly or nothing: never a prefix, so
  ``file-service://tax`` cannot reach ``tax-2025.pdf``. Several files with one key: the
  shallowest, then the first by name.
- Sizes are never trusted: every read is counted against the member and import limits as it
  happens (`ExportLimitError`); a zip or file that fails mid-read is `MalformedExportError`
  naming the member. An asset whose declared size is over the store's attachment limit is not
  read (the caller keeps a reference); one that lies about its size is stopped by the blob
  store's own limit while streaming.
- Assets are never held in memory whole: `ExportSource.asset` returns a pending file part that
  streams the member into the blob store when the conversation is written (each attempt opens
  it afresh), at most ``_STREAMS`` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import stat
import threading
import zipfile
import zlib
from collections.abc import AsyncIterator
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, Final

from convstore.errors import ExportLimitError, InvalidInputError, MalformedExportError
from convstore.model import FilePart
from convstore.zip_input import open_zip

from ._limits import DEFAULT_LIMITS, Budget, ImportLimits

__all__ = ["ExportSource"]

_CHUNK: Final = 1 << 20
_STREAMS: Final = 4
"""Assets streamed into the blob store at once (each holds about one chunk)."""
_MAX_DEPTH: Final = 16
"""Directory levels listed below a directory export (real exports use three)."""
_CHATGPT_ID: Final = re.compile(r"file[-_][A-Za-z0-9]+")
_READ_ERRORS: Final = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError)
_CAN_WALK_SAFELY: Final = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


def _keys(basename: str) -> set[str]:
    """The exact keys an asset pointer may name a file by (see the module docstring)."""
    keys = {basename, basename.split(".", 1)[0]}
    if match := _CHATGPT_ID.match(basename):
        keys.add(match.group())
    keys.discard("")
    return keys


class _Counted:
    """A member being read: every byte counted against its limit and the import's."""

    def __init__(self, raw: IO[bytes], member: str, limit: int, budget: Budget) -> None:
        self._raw = raw
        self._member = member
        self._limit = limit
        self._budget = budget
        self._read = 0

    def read(self, size: int = _CHUNK) -> bytes:
        size = _CHUNK if size is None or size < 0 else size
        try:
            data = self._raw.read(size)
        except _READ_ERRORS as exc:
            raise MalformedExportError(
                f"cannot read it: {exc}", position=f"{self._member}, byte {self._read}"
            ) from exc
        self._read += len(data)
        if self._read > self._limit:
            raise ExportLimitError(
                f"the file is larger than {self._limit:,} bytes (ImportLimits.member_bytes)",
                position=self._member,
                limit="member_bytes",
            )
        self._budget.spend(len(data), self._member)
        return data

    def tell(self) -> int:
        """Bytes read so far (after decompression)."""
        return self._read

    def close(self) -> None:
        with contextlib.suppress(*_READ_ERRORS):
            self._raw.close()

    def __enter__(self) -> _Counted:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class ExportSource:
    """The files of one export."""

    def __init__(
        self,
        path: Path,
        *,
        limits: ImportLimits = DEFAULT_LIMITS,
        budget: Budget | None = None,
        max_asset_bytes: int | None = None,
    ) -> None:
        self.path = path
        self.limits = limits
        self.budget = budget if budget is not None else Budget(limits)
        self._max_asset = max_asset_bytes
        self._zip: zipfile.ZipFile | None = None
        self._dir_fd: int | None = None
        self._lock = threading.Lock()
        self._streams: asyncio.Semaphore | None = None
        self._sizes: dict[str, int] = {}
        names: list[str]
        try:
            if path.is_dir():
                names = self._list_directory(path)
            elif zipfile.is_zipfile(path):
                self._zip = open_zip(
                    path,
                    max_entries=limits.zip_entries,
                    max_directory_bytes=limits.zip_directory_bytes,
                )
                infos = [i for i in self._zip.infolist() if not i.is_dir()]
                names = [i.filename for i in infos]
                self._sizes = {i.filename: i.file_size for i in infos}
            elif path.is_file():
                names = [path.name]
            else:
                raise InvalidInputError(f"no export at {path}")
        except ExportLimitError:
            self.close()
            raise
        except (*_READ_ERRORS, ValueError) as exc:
            self.close()
            raise InvalidInputError(f"cannot read the export at {path}: {exc}") from exc
        self._names = names
        self._single = self._dir_fd is None and self._zip is None
        # A file handed alone is the whole export: it has no assets.
        by_key: dict[str, str] = {}
        if not self._single:
            for name in sorted(names, key=lambda n: (n.count("/"), n)):
                for key in _keys(PurePosixPath(name).name):
                    by_key.setdefault(key, name)
        self._assets = by_key

    def _list_directory(self, root: Path) -> list[str]:
        """Regular files below ``root``, never through a symbolic link."""
        if _CAN_WALK_SAFELY:
            self._dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        names: list[str] = []
        pending: list[tuple[str, int]] = [("", 0)]
        while pending:
            prefix, depth = pending.pop()
            with os.scandir(root / prefix if prefix else root) as entries:
                for entry in entries:
                    name = f"{prefix}{entry.name}"
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 < _MAX_DEPTH:
                            pending.append((f"{name}/", depth + 1))
                    elif entry.is_file(follow_symlinks=False):
                        names.append(name)
        return sorted(names)

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

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

    def _open_raw(self, name: str) -> IO[bytes]:
        if self._zip is not None:
            with self._lock:  # ZipFile.open counts its open members without a lock of its own
                return self._zip.open(name)
        if self._single:
            return self.path.open("rb")
        if self._dir_fd is None:  # no dir_fd / O_NOFOLLOW here: check each component instead
            path = self.path
            for part in name.split("/"):
                path = path / part
                if path.is_symlink():
                    raise OSError(f"{name} is reached through a symbolic link")
            return path.open("rb")
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise OSError(f"{name!r} is not a name inside the export")
        fd = self._dir_fd
        opened: list[int] = []
        try:
            for part in parts[:-1]:
                fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                opened.append(fd)
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        finally:
            for held in opened:
                os.close(held)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{name} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")

    def open(self, name: str) -> _Counted:
        """The member ``name``, counted as it is read (`ExportLimitError` past a limit)."""
        try:
            raw = self._open_raw(name)
        except (*_READ_ERRORS, KeyError) as exc:
            raise MalformedExportError(f"cannot open it: {exc}", position=name) from exc
        return _Counted(raw, name, self.limits.member_bytes, self.budget)

    def size(self, name: str) -> int:
        """The size the export declares for ``name`` (for progress only: never trusted)."""
        if self._zip is not None:
            return self._sizes.get(name, 0)
        try:
            if self._single:
                return self.path.stat().st_size
            return os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False).st_size
        except (OSError, NotImplementedError):
            return 0

    def find_asset(self, asset_id: str) -> str | None:
        """The file the export stores ``asset_id`` under (an exact key), if any."""
        return self._assets.get(asset_id) if asset_id else None

    def asset(self, name: str, filename: str | None) -> FilePart | None:
        """A file part streaming ``name`` into the blob store on write; None if it is too large.

        ``filename`` defaults to the member's base name.
        """
        if self._max_asset is not None and self.size(name) > self._max_asset:
            return None
        return FilePart.from_stream(
            _AssetStream(self, name), filename=filename or PurePosixPath(name).name
        )

    def streams(self) -> asyncio.Semaphore:
        """Bounds how many assets are read at once (created on first use, in the event loop)."""
        if self._streams is None:
            self._streams = asyncio.Semaphore(_STREAMS)
        return self._streams


class _AssetStream:
    """The bytes of one asset, as an async iterable that opens the member afresh each time."""

    def __init__(self, source: ExportSource, name: str) -> None:
        self._source = source
        self._name = name

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        async with self._source.streams():
            reader = await asyncio.to_thread(self._source.open, self._name)
            try:
                while chunk := await asyncio.to_thread(reader.read, _CHUNK):
                    yield chunk
            finally:
                await asyncio.to_thread(reader.close)
