"""An untrusted zip's central directory is bounded before `zipfile` reads it (issue 32).

`zipfile.ZipFile` reads every directory entry on open (about 700 bytes of memory each); a zip of
a few megabytes can list millions. `convstore.zip_input.open_zip` reads the end records and
walks the directory itself first, in constant memory, and refuses a zip over its entry or
directory-size limit before `zipfile` is called: whether the end records state the count
truly, overstate it, or understate it. The importers and the restore open zips through it;
the subprocess memory bounds are `tests/imports/test_memory.py` and
`tests/reliability/test_restore_memory.py`.
"""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore
from convstore.errors import ExportLimitError
from convstore.imports import ImportLimits, import_file
from convstore.store.transfer.restore import RestoreLimits, restore_archive
from convstore.zip_input import MAX_ENTRIES, directory_entries, open_zip
from tests.support.archives import crowded_zip

CONVERSATIONS = {"conversations.json": b"[]"}


@pytest.fixture
def no_zipfile(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Fail if `zipfile.ZipFile` is asked to open anything; the paths it was asked for."""
    asked: list[Path] = []

    def refuse(path: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(path)
        raise AssertionError("zipfile.ZipFile opened a zip the limits refuse")

    monkeypatch.setattr("convstore.zip_input.zipfile.ZipFile", refuse)
    return asked


def _refused(path: Path, **limits: int) -> tuple[ExportLimitError, int]:
    """The refusal of ``path`` and the peak memory (bytes) it took."""
    tracemalloc.start()
    try:
        with pytest.raises(ExportLimitError) as refused:
            open_zip(path, **limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return refused.value, peak


def test_a_huge_declared_count_is_refused_unread(tmp_path: Path, no_zipfile: list[Path]) -> None:
    path = crowded_zip(tmp_path / "declared.zip", CONVERSATIONS, entries=10, declared=5_000_000)
    error, peak = _refused(path)
    assert error.limit == "zip_entries"
    assert "more than 100,000 entries (ImportLimits.zip_entries)" in str(error)
    assert peak < 1 << 20, peak  # the end records: well under a megabyte
    assert no_zipfile == []


def test_an_understated_count_is_counted_in_the_directory(
    tmp_path: Path, no_zipfile: list[Path]
) -> None:
    # The end records say one entry; the directory lists 150,001 (8 MB): `zipfile` would read
    # them all (~100 MB of `ZipInfo`). The walk counts to the limit in constant memory.
    path = crowded_zip(tmp_path / "understated.zip", CONVERSATIONS, entries=150_000, declared=1)
    error, peak = _refused(path)
    assert error.limit == "zip_entries"
    assert peak < 4 << 20, peak  # one read chunk and a few headers
    with path.open("rb") as raw:
        count, _size = directory_entries(raw, max_entries=MAX_ENTRIES, max_bytes=1 << 30) or (0, 0)
    assert count == MAX_ENTRIES + 1  # it stopped one past the limit
    assert no_zipfile == []


def test_a_directory_over_its_byte_limit_is_refused(tmp_path: Path, no_zipfile: list[Path]) -> None:
    path = crowded_zip(tmp_path / "wide.zip", CONVERSATIONS, entries=1_000)
    error, _peak = _refused(path, max_directory_bytes=10_000)
    assert error.limit == "zip_directory_bytes"
    assert "more than the 10,000 it may be (ImportLimits.zip_directory_bytes)" in str(error)
    assert no_zipfile == []


@pytest.mark.parametrize("entries", [0, 3, 70_000], ids=["one", "four", "zip64-counts"])
def test_zips_within_the_limits_open_as_zipfile_reads_them(tmp_path: Path, entries: int) -> None:
    path = crowded_zip(tmp_path / "fine.zip", CONVERSATIONS, entries=entries)
    with open_zip(path) as archive:
        assert len(archive.infolist()) == entries + 1
        assert archive.read("conversations.json") == b"[]"


def test_a_zip_written_by_zipfile_with_data_before_it_opens(tmp_path: Path) -> None:
    # A self-extracting archive: a program before the zip, offsets relative to the zip.
    inner = tmp_path / "inner.zip"
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as z:
        for n in range(5):
            z.writestr(f"c{n}.json", json.dumps({"n": n}))
        z.comment = b"a comment at the end"
    path = tmp_path / "prefixed.zip"
    path.write_bytes(b"MZ" + bytes(5_000) + inner.read_bytes())
    with open_zip(path, max_entries=5) as archive:
        assert [json.loads(archive.read(f"c{n}.json"))["n"] for n in range(5)] == list(range(5))
    with pytest.raises(ExportLimitError):
        open_zip(path, max_entries=4)


async def test_an_import_and_a_restore_refuse_a_crowded_zip(
    store: ConversationStore, tmp_path: Path
) -> None:
    path = crowded_zip(tmp_path / "crowded.zip", CONVERSATIONS, entries=150_000, declared=1)
    # The PostgreSQL store is shared with the worker's other tests: nothing new, not nothing.
    before = {c.id for c in await store.list_conversations(limit=10_000)}
    with pytest.raises(ExportLimitError, match=r"ImportLimits\.zip_entries"):
        await import_file(store, path, "chatgpt-export")
    with pytest.raises(ExportLimitError, match=r"RestoreLimits\.zip_entries"):
        await restore_archive(store, path)
    assert {c.id for c in await store.list_conversations(limit=10_000)} == before


async def test_the_limits_are_settable(store: ConversationStore, tmp_path: Path) -> None:
    path = crowded_zip(tmp_path / "three.zip", CONVERSATIONS, entries=2)
    with pytest.raises(ExportLimitError, match="more than 2 entries"):
        await import_file(store, path, "chatgpt-export", limits=ImportLimits(zip_entries=2))
    report = await import_file(store, path, "chatgpt-export", limits=ImportLimits(zip_entries=3))
    assert report.imported["conversation"] == 0
    with pytest.raises(ExportLimitError, match=r"RestoreLimits\.zip_directory_bytes"):
        await restore_archive(store, path, limits=RestoreLimits(zip_directory_bytes=100))
