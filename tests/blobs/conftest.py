"""Fixtures for the blob layer: one `BlobStore` per backend, and raw access to its storage.

Every backend test runs on ``memory://``, on a local directory and, marked ``s3``, on S3 served
by the session's moto server (see `tests.support.storage`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from convstore.blobs import BlobStore
from tests.support.storage import BackendCase, RawStorage, backend_case

MakeStore = Callable[..., BlobStore]


@pytest.fixture(params=["memory", "local", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendCase]:
    """Each backend in turn."""
    with backend_case(request.param, request, tmp_path) as case:
        yield case


@pytest.fixture
def raw(backend: BackendCase) -> RawStorage:
    return backend.raw


@pytest.fixture
async def make_store(backend: BackendCase) -> AsyncIterator[MakeStore]:
    """Open stores on the current backend (e.g. with another ``max_size``); all closed after."""
    stores: list[BlobStore] = []

    def make(**kwargs: Any) -> BlobStore:
        store = BlobStore(backend.url, storage_options=backend.storage_options, **kwargs)
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
def blob_store(make_store: MakeStore) -> BlobStore:
    return make_store()
