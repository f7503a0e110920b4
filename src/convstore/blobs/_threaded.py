"""Synchronous fsspec filesystems (a local directory, ``memory://``, ...) driven from threads.

Invariants:

- Every filesystem call runs in a worker thread (`asyncio.to_thread`, or the deletion threads
  of `remove_stale`): the event loop never waits on a disk.
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
  `os.utime` to touch. Its stats, listings (`os.scandir`, one worker call for a group of
  shards), storage clock probes and deletions go to the operating system too, for speed: the
  modified times it reports all come from `file_modified`.
- A staging file is removed when its put fails, times out or is cancelled, even when the
  cancellation arrives while a worker thread is still creating it.
- `remove_stale` splits its objects into at most ``concurrency`` runs, each checked and deleted
  in one call on a thread of its own (one hop per run, not two per object); each object is
  still stat'ed immediately before its own deletion. A run that times out or is cancelled stops
  before its next deletion; the one in progress may still complete, as a single abandoned
  deletion may.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import stat
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import IO, Any

from convstore.blobs._backend import (
    REMOVAL_CONCURRENCY,
    BlobBackend,
    Listing,
    ObjectStat,
    Removal,
    Writer,
    bounded,
    modified_time,
    storage_error,
    translated,
)


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
        if not paths:
            return Removal(removed=[])
        removed: list[str] = []  # appended by the worker threads as each deletion succeeds
        size = -(-len(paths) // concurrency)
        runs = [paths[i : i + size] for i in range(0, len(paths), size)]
        # Threads of its own, one per run: a deletion can wait long on the filesystem's journal
        # (on ext4 mounted with ``discard``, one thread deleted fsynced files at ~700/s and 16
        # at ~10,000/s), and the default executor, which every put shares, has a handful.
        pool = ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="convstore-delete")
        loop = asyncio.get_running_loop()

        async def remove_run(run: Sequence[str]) -> BaseException | None:
            stop = threading.Event()
            try:
                with translated("delete", self.url(run[0])):
                    work = loop.run_in_executor(pool, self._remove_run, run, before, removed, stop)
                    return await bounded(self.timeout, work)
            finally:
                stop.set()  # a run abandoned on a timeout or cancellation deletes no more

        try:
            outcomes = await asyncio.gather(*map(remove_run, runs), return_exceptions=True)
        finally:
            pool.shutdown(wait=False)
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
                if self._remove_if_stale(path, before):
                    removed.append(path)
            except Exception as exc:
                # Translated here, not around each path: a URL costs more than a deletion.
                if failure is None:
                    failure = storage_error("delete", self.url(path), exc)
                    failure.__cause__ = exc
        return failure

    def _remove_if_stale(self, path: str, before: datetime) -> bool:
        try:
            entry = self._fs.info(path)
        except FileNotFoundError:
            return False
        if entry.get("type") != "file" or modified_time(entry) >= before:
            return False
        return self._delete_file(path)

    def _delete_file(self, path: str) -> bool:
        """Delete the file at ``path``; whether it was there."""
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
    """A directory on the local filesystem (a plain path or a ``file://`` URL).

    Stats, listings, the clock probe and deletions go to `os` directly: fsspec's local
    filesystem normalises the path and builds a dictionary per call and per listed entry,
    which cost garbage collection several times the system calls themselves.
    """

    async def info(self, path: str) -> ObjectStat | None:
        with translated("inspect", self.url(path)):
            return await bounded(self.timeout, asyncio.to_thread(self._stat, path))

    async def listdir(self, path: str) -> Listing:
        with translated("list", self.url(path)):
            return await bounded(self.timeout, asyncio.to_thread(self._scan, path))

    async def listdirs(self, paths: Sequence[str]) -> list[Listing]:
        if not paths:
            return []
        # One worker call for the lot: a thread hop costs more than listing a small shard.
        with translated("list", self.url(paths[0])):
            return await bounded(self.timeout, asyncio.to_thread(self._scan_each, paths))

    async def clock(self, probe: str, *, staging: str) -> datetime:
        del staging  # the probe is created, read and removed in place, in one worker call
        with translated("read the clock at", self.url(probe)):
            return await bounded(self.timeout, asyncio.to_thread(self._probe, probe))

    def _stat(self, path: str) -> ObjectStat | None:
        try:
            status = os.stat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(status.st_mode):
            return None
        return ObjectStat(path=path, size=status.st_size, modified=file_modified(status))

    def _scan(self, path: str) -> Listing:
        """One directory level in one pass; each file's stat comes with its entry."""
        path = path.rstrip("/")
        dirs: list[str] = []
        files: list[ObjectStat] = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir():
                            dirs.append(f"{path}/{entry.name}")
                        elif entry.is_file():
                            status = entry.stat()
                            files.append(
                                ObjectStat(
                                    path=f"{path}/{entry.name}",
                                    size=status.st_size,
                                    modified=file_modified(status),
                                )
                            )
                    except FileNotFoundError:
                        continue  # deleted since the directory was read
        except FileNotFoundError:
            return Listing(dirs=[], files=[])
        return Listing(dirs=dirs, files=files)

    def _scan_each(self, paths: Sequence[str]) -> list[Listing]:
        listings = []
        for path in paths:
            try:
                listings.append(self._scan(path))
            except Exception as exc:
                raise storage_error("list", self.url(path), exc) from exc
        return listings

    def _probe(self, path: str) -> datetime:
        # A clock reading needs no durability: no fsync, no staging, no rename.
        os.makedirs(os.path.dirname(path), exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            return file_modified(os.fstat(descriptor))
        finally:
            os.close(descriptor)
            os.unlink(path)

    def _remove_if_stale(self, path: str, before: datetime) -> bool:
        found = self._stat(path)
        if found is None or found.modified >= before:
            return False
        return self._delete_file(path)

    def _delete_file(self, path: str) -> bool:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True

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


def file_modified(status: os.stat_result) -> datetime:
    """A local file's modified time, as fsspec's ``mtime`` reports it (UTC)."""
    return datetime.fromtimestamp(status.st_mtime, UTC)


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
