"""Raw access to blob storage backends, for tests that must see (or damage) what is stored.

`RawStorage` reaches the storage under a store's root without going through `BlobStore`
(boto3 for S3), so tests can check what is really stored, corrupt it, age it, or make the
backend fail part-way through a write. `backend_case` gives each test a root of its own on
memory, a local directory or S3 (a moto server on 127.0.0.1, see `s3_server`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import fsspec
import pytest
from fsspec.implementations.local import LocalFileOpener, LocalFileSystem
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem
from moto.server import ThreadedMotoServer
from s3fs import S3FileSystem

MiB = 1024 * 1024
BUCKET = "convstore-blobs-test"
S3_CREDENTIALS = {"key": "testing", "secret": "testing"}
REGION = "us-east-1"


class RawStorage(ABC):
    """The storage under one store's root, reached without `BlobStore`."""

    @abstractmethod
    def keys(self) -> set[str]:
        """Every object under the root, as paths relative to it (``sha256/ab/ab..``, ``tmp/..``)."""

    @abstractmethod
    def overwrite(self, key: str, data: bytes) -> None:
        """Replace the object at ``key`` (a `BlobStore.key` URL) with ``data``."""

    @abstractmethod
    async def make_stale(self, key: str) -> None:
        """Make the object's modified time lie in the past (or let time pass, where it can't)."""

    @abstractmethod
    def fail_writes_after(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        """Make the backend raise once more than ``limit`` bytes have been written to it."""

    def pending_uploads(self) -> int:
        """Unfinished multipart uploads under the root (only S3 has them)."""
        return 0


class _ByteBudget:
    """Counts bytes written to a backend and raises OSError past the limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.written = 0

    def spend(self, size: int) -> None:
        self.written += size
        if self.written > self.limit:
            raise OSError(f"injected failure after {self.limit} bytes")


class MemoryStorage(RawStorage):
    def __init__(self, prefix: str) -> None:
        self.root = f"/{prefix}"
        self.fs = fsspec.filesystem("memory")

    def keys(self) -> set[str]:
        start = self.root + "/"
        return {path.removeprefix(start) for path in self.fs.store if path.startswith(start)}

    def overwrite(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(key, data)

    async def make_stale(self, key: str) -> None:
        memory_file = self.fs.store[MemoryFileSystem._strip_protocol(key)]
        memory_file.created = memory_file.modified = datetime.now(UTC) - timedelta(hours=1)

    def fail_writes_after(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        budget = _ByteBudget(limit)
        original = MemoryFile.write

        def write(self: MemoryFile, data: Any) -> int:
            budget.spend(len(data))
            return original(self, data)

        monkeypatch.setattr(MemoryFile, "write", write)

    def remove_all(self) -> None:
        for key in self.keys():
            del self.fs.store[f"{self.root}/{key}"]


class LocalStorage(RawStorage):
    def __init__(self, root: Path) -> None:
        self.root = root

    def keys(self) -> set[str]:
        if not self.root.exists():
            return set()
        return {p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()}

    def overwrite(self, key: str, data: bytes) -> None:
        path = Path(LocalFileSystem._strip_protocol(key))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    async def make_stale(self, key: str) -> None:
        an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).timestamp()
        os.utime(LocalFileSystem._strip_protocol(key), (an_hour_ago, an_hour_ago))

    def fail_writes_after(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        budget = _ByteBudget(limit)
        original = LocalFileOpener.write

        def write(self: LocalFileOpener, data: Any) -> int:
            budget.spend(len(data))
            return int(original(self, data))

        monkeypatch.setattr(LocalFileOpener, "write", write)


class S3Storage(RawStorage):
    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def keys(self) -> set[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=self.prefix + "/"
        )
        return {
            item["Key"].removeprefix(self.prefix + "/")
            for page in pages
            for item in page.get("Contents", [])
        }

    def overwrite(self, key: str, data: bytes) -> None:
        bucket, _, object_key = key.removeprefix("s3://").partition("/")
        self.client.put_object(Bucket=bucket, Key=object_key, Body=data)

    async def make_stale(self, key: str) -> None:
        # S3 cannot back-date an object; LastModified has one-second resolution, so wait it out
        # (gc compares it with the storage's own one-second clock: a second on each side).
        await asyncio.sleep(2.1)

    def fail_writes_after(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        budget = _ByteBudget(limit)
        original = S3FileSystem._call_s3

        async def call_s3(self: S3FileSystem, method: str, *args: Any, **kwargs: Any) -> Any:
            body = kwargs.get("Body")
            if method in {"put_object", "upload_part"} and body is not None:
                budget.spend(len(body.getbuffer()) if hasattr(body, "getbuffer") else len(body))
            return await original(self, method, *args, **kwargs)

        monkeypatch.setattr(S3FileSystem, "_call_s3", call_s3)

    def pending_uploads(self) -> int:
        uploads = self.client.list_multipart_uploads(Bucket=BUCKET, Prefix=self.prefix + "/")
        return len(uploads.get("Uploads", []))


@dataclass
class BackendCase:
    """A storage URL with its options, and raw access to what is stored there."""

    name: str
    url: str
    raw: RawStorage
    storage_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    client: Any


@contextmanager
def running_s3_server() -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1 with one bucket, for the whole session."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=S3_CREDENTIALS["key"],
        aws_secret_access_key=S3_CREDENTIALS["secret"],
    )
    client.create_bucket(Bucket=BUCKET)
    try:
        yield S3Server(endpoint=endpoint, client=client)
    finally:
        client.close()
        server.stop()


def s3_options(server: S3Server) -> dict[str, Any]:
    """Storage options for s3fs against the moto server."""
    return {
        **S3_CREDENTIALS,
        "client_kwargs": {"endpoint_url": server.endpoint, "region_name": REGION},
    }


@contextmanager
def backend_case(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[BackendCase]:
    """The named backend under a root no other test uses, emptied afterwards where it persists."""
    prefix = f"convstore-test-{uuid.uuid4().hex}"
    if name == "memory":
        memory = MemoryStorage(prefix)
        try:
            yield BackendCase("memory", f"memory://{prefix}", memory)
        finally:
            memory.remove_all()
    elif name == "local":
        root = tmp_path / "blobs"
        yield BackendCase("local", str(root), LocalStorage(root))
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        storage = S3Storage(server.client, prefix)
        yield BackendCase("s3", f"s3://{BUCKET}/{prefix}", storage, s3_options(server))
