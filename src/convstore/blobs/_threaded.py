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
- `remove_stale` checks and deletes a run of up to `REMOVAL_RUN` objects in one worker thread
  (one hop, not two per object); each object is still stat'ed immediately before its own
  deletion. A run that times out or is cancelled stops before its next deletion; the one in
  progress may still complete, as a single abandoned deletion may.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import IO, Any, Final

from convstore.blobs._backend import (
    REMOVAL_CONCURRENCY,
    BlobBackend,
    Removal,
    Writer,
    bounded,
    modified_time,
    translated,
)
from convstore.errors import BlobStorageError

REMOVAL_RUN: Final = 16
"""Objects `ThreadedBackend.remove_stale` checks and deletes per worker-thread call."""


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

    async def remove_stale(
        self, paths: Sequence[str], before: datetime, *, concurrency: int = REMOVAL_CONCURRENCY
    ) -> Removal:
        limit = asyncio.Semaphore(concurrency)
        removed: list[str] = []  # appended by the worker threads as each deletion succeeds

        async def remove_run(run: Sequence[str]) -> BaseException | None:
            async with limit:
                stop = threading.Event()
                try:
                    with translated("delete", self.url(run[0])):
                        work = asyncio.to_thread(self._remove_run, run, before, removed, stop)
                        return await bounded(self.timeout, work)
                finally:
                    stop.set()  # a run abandoned on a timeout or cancellation deletes no more

        runs = [paths[i : i + REMOVAL_RUN] for i in range(0, len(paths), REMOVAL_RUN)]
        outcomes = await asyncio.gather(*map(remove_run, runs), return_exceptions=True)
        done = set(removed)
        failure = next((o for o in outcomes if o is not None), None)
        return Removal(removed=[path for path in paths if path in done], failure=failure)

    def _remove_run(
        self, paths: Sequence[str], before: datetime, removed: list[str], stop: threading.Event
    ) -> BaseException | None:
        """In a worker thread: `remove_stale` for ``paths``; the first failure, if any."""
        failure: BaseException | None = None
        for path in paths:
            if stop.is_set():
                break
            try:
                with translated("delete", self.url(path)):
                    if self._remove_if_stale(path, before):
                        removed.append(path)
            except BlobStorageError as exc:
                failure = failure or exc
        return failure

    def _remove_if_stale(self, path: str, before: datetime) -> bool:
        try:
            entry = self._fs.info(path)
        except FileNotFoundError:
            return False
        if entry.get("type") != "file" or modified_time(entry) >= before:
            return False
        try:
            self._fs.rm_file(path)
        except FileNotFoundError:
            return False
        return True

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
