"""Synchronous fsspec filesystems (a local directory, ``memory://``, ...) driven from threads.

Invariants:

- Every filesystem call runs in `asyncio.to_thread`: the event loop never waits on a disk.
- A write always goes to a staging path first and is moved onto the blob's path afterwards:
  a synchronous filesystem's open-for-write exposes bytes as they arrive (``memory://`` even
  publishes the file when it is opened), so writing in place would let readers see a partial
  blob.
- Directories are created on demand, so a local root that does not exist yet is created by the
  first write.
- The local directory backend goes to the operating system for what fsspec does not promise:
  `os.replace` (atomic, replaces an existing blob), ``fsync`` of the file before the rename, of
  the directory after it, and of the parent of every directory the move created, up to a new
  blob root (a blob is durable before the rows that reference it are committed), and
  `os.utime` to touch.
- A staging file is removed when its put fails, times out or is cancelled, even when the
  cancellation arrives while a worker thread is still creating it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
from typing import IO, Any

from convstore.blobs._backend import BlobBackend, Writer, bounded, translated


class ThreadedBackend(BlobBackend):
    """Any synchronous fsspec filesystem."""

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await bounded(
            self.timeout, asyncio.to_thread(getattr(self._fs, method), *args, **kwargs)
        )

    async def _open_writer(self, path: str) -> Writer:
        opening = asyncio.ensure_future(asyncio.to_thread(self._open_for_write, path))
        try:
            with translated("write", self.url(path)):
                handle = await bounded(self.timeout, asyncio.shield(opening))
        except BaseException:
            # Cancelled or timed out while the thread may still be creating the file: whatever
            # it creates is removed once it is done, so a failed put leaves no staging file.
            opening.add_done_callback(lambda done: self._discard_opened(done, path))
            raise
        return _HandleWriter(self, path, handle)

    def _discard_opened(self, opening: asyncio.Future[IO[bytes]], path: str) -> None:
        if opening.cancelled() or opening.exception() is not None:
            return  # nothing was opened
        handle = opening.result()
        asyncio.get_running_loop().run_in_executor(None, self._discard, handle, path)

    async def move(self, src: str, dst: str) -> None:
        with translated("move", self.url(src)):
            await bounded(self.timeout, asyncio.to_thread(self._move, src, dst))

    def _open_for_write(self, path: str) -> IO[bytes]:
        self._fs.makedirs(posixpath.dirname(path), exist_ok=True)
        handle: IO[bytes] = self._fs.open(path, "wb")
        return handle

    def _finish(self, handle: IO[bytes]) -> None:
        handle.close()

    def _move(self, src: str, dst: str) -> None:
        self._fs.makedirs(posixpath.dirname(dst), exist_ok=True)
        self._fs.mv(src, dst)

    def _discard(self, handle: IO[bytes], path: str) -> None:
        try:
            handle.close()
        finally:
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm_file(path)


class LocalBackend(ThreadedBackend):
    """A directory on the local filesystem (a plain path or a ``file://`` URL)."""

    async def touch(self, path: str) -> bool:
        with translated("touch", self.url(path)):
            try:
                await bounded(self.timeout, asyncio.to_thread(os.utime, path))
            except FileNotFoundError:
                return False
        return True

    def _open_for_write(self, path: str) -> IO[bytes]:
        # The staging directory is usually the first thing a new store creates (its root
        # included): make those entries durable too, like the blob directories in `_move`.
        created = _missing_directories(os.path.dirname(path))
        handle = super()._open_for_write(path)
        for new_directory in created:
            _fsync_directory(os.path.dirname(new_directory))
        return handle

    def _finish(self, handle: IO[bytes]) -> None:
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()

    def _move(self, src: str, dst: str) -> None:
        directory = os.path.dirname(dst)
        created = _missing_directories(directory)
        os.makedirs(directory, exist_ok=True)
        os.replace(src, dst)
        _fsync_directory(directory)
        # A new directory's own entry lives in its parent: fsync each parent of one that was
        # created (the shard, ``sha256/``, a new root), or a power loss can lose the blob with
        # its directory although the blob file itself was fsynced.
        for new_directory in created:
            _fsync_directory(os.path.dirname(new_directory))


def _missing_directories(directory: str) -> list[str]:
    """``directory`` and those of its ancestors that do not exist yet, deepest first."""
    missing = []
    current = os.path.abspath(directory)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return missing


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable. Windows cannot open a directory; NTFS journals renames.
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _HandleWriter:
    """Writes a staging object through a synchronous file handle, one thread hop per call."""

    def __init__(self, backend: ThreadedBackend, path: str, handle: IO[bytes]) -> None:
        self._backend = backend
        self._path = path
        self._handle = handle

    async def write(self, data: bytes) -> None:
        with translated("write", self._backend.url(self._path)):
            await bounded(self._backend.timeout, asyncio.to_thread(self._handle.write, data))

    async def commit(self) -> None:
        with translated("write", self._backend.url(self._path)):
            await bounded(
                self._backend.timeout, asyncio.to_thread(self._backend._finish, self._handle)
            )

    async def discard(self) -> None:
        with translated("discard", self._backend.url(self._path)):
            await bounded(
                self._backend.timeout,
                asyncio.to_thread(self._backend._discard, self._handle, self._path),
            )
