"""Properties: any bytes round-trip, and a blob's key depends on its bytes alone.

They exercise hashing, key derivation and the put paths, which do not depend on the backend, so
they run on memory:// and a local directory only; S3 is covered example by example elsewhere
(a moto round trip per hypothesis example would make this module take minutes).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore.blobs import BlobStore, StoredBlob
from convstore.errors import MediaTypeMismatchError
from tests.support.storage import BackendCase, backend_case

# One store serves every example; examples only add blobs, which is what the properties are about.
_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(params=["memory", "local"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendCase]:
    with backend_case(request.param, request, tmp_path) as case:
        yield case


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[start:end] for start, end in itertools.pairwise(points)]


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


@_SETTINGS
@given(data=st.binary(max_size=4096))
async def test_put_then_get_round_trips_any_bytes(blob_store: BlobStore, data: bytes) -> None:
    stored = await blob_store.put(data)

    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    assert stored.size == len(data)
    assert await blob_store.get(stored.sha256) == data


@_SETTINGS
@given(
    data=st.binary(max_size=4096) | st.sampled_from([b"%PDF-1.7\n", b"\x89PNG\r\n\x1a\n"]),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
    media_type=st.sampled_from(
        [None, "application/octet-stream", "text/plain", "image/png", "application/pdf"]
    ),
)
async def test_key_depends_only_on_the_bytes(
    blob_store: BlobStore, data: bytes, cuts: list[int], media_type: str | None
) -> None:
    undeclared = await blob_store.put(data)
    outcomes: list[StoredBlob | type[MediaTypeMismatchError]] = []
    for put in (
        blob_store.put(data, media_type=media_type),
        blob_store.put_stream(_chunks(_split(data, cuts)), media_type=media_type),
    ):
        try:
            outcomes.append(await put)
        except MediaTypeMismatchError:
            outcomes.append(MediaTypeMismatchError)

    # Whole and streamed puts decide alike, however the stream is chunked.
    assert outcomes[0] == outcomes[1]
    # The address comes from the bytes alone, whatever media type was declared.
    assert undeclared.sha256 == hashlib.sha256(data).hexdigest()
    if isinstance(outcomes[0], StoredBlob):
        assert outcomes[0].sha256 == undeclared.sha256
        assert blob_store.key(outcomes[0].sha256) == blob_store.key(undeclared.sha256)
    digest = undeclared.sha256
    assert blob_store.key(digest).endswith(f"/sha256/{digest[:2]}/{digest}")
    assert await blob_store.get(digest) == data
