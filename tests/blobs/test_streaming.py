"""Streaming puts: every kind of source, the size limit and media types, decided early."""

from __future__ import annotations

import hashlib
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from convstore.blobs import BlobStore
from convstore.errors import AttachmentTooLargeError, InvalidInputError, MediaTypeMismatchError
from convstore.media_types import SNIFF_PREFIX_BYTES
from tests.blobs.conftest import MakeStore
from tests.support.storage import MiB, RawStorage

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2000
PDF = b"%PDF-1.7\n" + b"x" * 3000


class CountingSource:
    """An async generator of ``count`` chunks that records how far it was read and if closed."""

    def __init__(self, chunk: bytes, count: int) -> None:
        self.chunk = chunk
        self.count = count
        self.consumed = 0
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            for _ in range(self.count):
                self.consumed += 1
                yield self.chunk
        finally:
            self.closed = True


async def test_put_stream_from_path(blob_store: BlobStore, tmp_path: Path) -> None:
    data = bytes(range(256)) * 10_000  # 2.5 MiB: several 1 MiB reads
    source = tmp_path / "upload.bin"
    source.write_bytes(data)

    stored = await blob_store.put_stream(source)

    assert stored.sha256 == hashlib.sha256(data).hexdigest()
    assert stored.size == len(data)
    assert await blob_store.get(stored.sha256) == data


async def test_put_stream_from_binary_file_leaves_it_open(blob_store: BlobStore) -> None:
    data = b"header" + bytes(range(256)) * 5000
    stream = io.BytesIO(data)
    stream.seek(6)  # read from the current position

    stored = await blob_store.put_stream(stream)

    assert not stream.closed
    assert await blob_store.get(stored.sha256) == data[6:]


async def test_put_stream_from_async_iterator(blob_store: BlobStore) -> None:
    source = CountingSource(b"0123456789" * 100, count=50)

    stored = await blob_store.put_stream(source.chunks())

    assert stored.size == 50_000
    assert await blob_store.get(stored.sha256) == b"0123456789" * 5000
    assert source.consumed == 50


async def test_large_stream_round_trips(make_store: MakeStore, raw: RawStorage) -> None:
    # Over two S3 parts: exercises a completed multipart upload, not just a single PUT.
    store = make_store(max_size=16 * MiB)
    chunk = bytes(range(256)) * 4096
    source = CountingSource(chunk, count=12)

    stored = await store.put_stream(source.chunks())

    assert stored.size == 12 * MiB
    assert await store.get(stored.sha256) == chunk * 12
    assert raw.keys() == {f"sha256/{stored.sha256[:2]}/{stored.sha256}"}
    assert raw.pending_uploads() == 0


async def test_streamed_and_whole_puts_agree(blob_store: BlobStore, tmp_path: Path) -> None:
    data = PDF * 3
    path = tmp_path / "doc.pdf"
    path.write_bytes(data)

    whole = await blob_store.put(data)
    results = {
        whole,
        await blob_store.put_stream(path),
        await blob_store.put_stream(io.BytesIO(data)),
        await blob_store.put_stream(CountingSource(data, count=1).chunks()),
    }

    assert results == {whole}
    assert whole.media_type == "application/pdf"


async def test_oversized_stream_is_refused_as_soon_as_it_crosses_the_limit(
    make_store: MakeStore, raw: RawStorage
) -> None:
    store = make_store(max_size=10 * 1024)
    source = CountingSource(b"x" * 1024, count=1000)

    with pytest.raises(AttachmentTooLargeError):
        await store.put_stream(source.chunks())

    assert source.consumed == 11  # the eleventh KiB crosses 10 KiB; nothing after it is read
    assert source.closed
    assert raw.keys() == set()  # no blob, no staging object
    assert raw.pending_uploads() == 0


async def test_oversized_multipart_stream_is_aborted(
    make_store: MakeStore, raw: RawStorage
) -> None:
    # Large enough that S3 has uploaded a part before the limit is crossed.
    store = make_store(max_size=7 * MiB)
    source = CountingSource(b"y" * MiB, count=20)

    with pytest.raises(AttachmentTooLargeError):
        await store.put_stream(source.chunks())

    assert source.consumed == 8
    assert raw.keys() == set()
    assert raw.pending_uploads() == 0


async def test_stream_of_exactly_max_size_is_accepted(make_store: MakeStore) -> None:
    store = make_store(max_size=4096)

    stored = await store.put_stream(CountingSource(b"z" * 1024, count=4).chunks())

    assert stored.size == 4096


async def test_oversized_bytes_are_refused_up_front(make_store: MakeStore, raw: RawStorage) -> None:
    store = make_store(max_size=100)

    with pytest.raises(AttachmentTooLargeError):
        await store.put(b"x" * 101)

    assert raw.keys() == set()
    assert store.max_size == 100


async def test_media_type_contradiction_is_refused_before_writing(
    blob_store: BlobStore, raw: RawStorage
) -> None:
    with pytest.raises(MediaTypeMismatchError):
        await blob_store.put(PNG, media_type="image/jpeg")
    with pytest.raises(MediaTypeMismatchError):
        await blob_store.put_stream(io.BytesIO(PNG), media_type="application/pdf")

    assert raw.keys() == set()


async def test_stream_reads_only_the_sniff_prefix_before_refusing(
    blob_store: BlobStore, raw: RawStorage
) -> None:
    source = CountingSource(PNG[:100], count=1000)  # a PNG signature, then more of it

    with pytest.raises(MediaTypeMismatchError):
        await blob_store.put_stream(source.chunks(), media_type="image/gif")

    assert source.consumed == -(-SNIFF_PREFIX_BYTES // 100)  # ceil: just enough to decide
    assert source.closed
    assert raw.keys() == set()


async def test_a_stream_shorter_than_the_prefix_is_still_checked(blob_store: BlobStore) -> None:
    with pytest.raises(MediaTypeMismatchError):
        await blob_store.put_stream(
            CountingSource(b"plain", count=1).chunks(), media_type="image/png"
        )


@pytest.mark.parametrize(
    ("data", "declared", "expected"),
    [
        (PNG, None, "image/png"),
        (PDF, None, "application/pdf"),
        (PNG, "application/octet-stream", "image/png"),
        (b"just some text", None, "application/octet-stream"),
        (b"just some text", "text/plain; charset=utf-8", "text/plain"),
        (PNG, "image/x-png", "image/png"),
    ],
)
async def test_media_type_is_sniffed_or_normalised(
    blob_store: BlobStore, data: bytes, declared: str | None, expected: str
) -> None:
    assert (await blob_store.put(data, media_type=declared)).media_type == expected
    streamed = await blob_store.put_stream(io.BytesIO(data), media_type=declared)
    assert streamed.media_type == expected


@pytest.mark.parametrize("source", ["/a/path/as/str", b"raw bytes", 42])
async def test_unsupported_sources_are_bad_input(blob_store: BlobStore, source: object) -> None:
    with pytest.raises(InvalidInputError):
        await blob_store.put_stream(source)  # type: ignore[arg-type]


async def test_unreadable_path_is_bad_input(blob_store: BlobStore, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        await blob_store.put_stream(tmp_path / "missing.bin")


async def test_text_stream_is_bad_input(blob_store: BlobStore, raw: RawStorage) -> None:
    with pytest.raises(InvalidInputError):
        await blob_store.put_stream(io.StringIO("not bytes"))  # type: ignore[arg-type]
    assert raw.keys() == set()


async def test_non_bytes_chunks_are_bad_input(blob_store: BlobStore, raw: RawStorage) -> None:
    async def text_chunks() -> AsyncIterator[str]:
        yield "not bytes"

    with pytest.raises(InvalidInputError):
        await blob_store.put_stream(text_chunks())  # type: ignore[arg-type]
    assert raw.keys() == set()


async def test_callers_iterator_errors_propagate_and_leave_nothing(
    blob_store: BlobStore, raw: RawStorage
) -> None:
    class UploadInterrupted(Exception):
        pass

    async def interrupted() -> AsyncIterator[bytes]:
        yield b"a" * (2 * 1024)
        yield b"b" * (2 * 1024)
        raise UploadInterrupted

    with pytest.raises(UploadInterrupted):
        await blob_store.put_stream(interrupted())

    assert raw.keys() == set()
    assert raw.pending_uploads() == 0
