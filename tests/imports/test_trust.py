"""Issue 32, the importers' side: an export is a stranger's file.

- Only the export is read: a ``conversations.json`` handed alone reads no neighbouring file;
  an asset pointer names one exact file, never a prefix; a directory export is never left
  through a symbolic link.
- One conversation that cannot be stored is reported with its position and why, and the
  import goes on (``strict=True``: the first one raises `ConversationRefusedError`).
- Limits (`ImportLimits`) stop reading with `ExportLimitError` naming the member and limit.
- Open WebUI's ``<details>`` blocks are parsed in linear time.

Memory under the bomb inputs is `test_memory.py`'s; random damage is `test_fuzz.py`'s.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import time
import tracemalloc
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore
from convstore.errors import (
    ConversationRefusedError,
    ExportLimitError,
    MalformedExportError,
)
from convstore.imports import ImportLimits, import_file, openwebui
from convstore.imports._jsonstream import array_items
from convstore.imports._sources import ExportSource
from convstore.imports.openwebui import _attributes, _details_blocks, _without_summaries
from convstore.model import FilePart

from .exports import ChatGPT, claude_conversation, claude_message, png


def _chatgpt_with_pointers(*pointers: str) -> tuple[ChatGPT, str]:
    c = ChatGPT()
    parts: list[object] = [
        {"content_type": "image_asset_pointer", "asset_pointer": p, "size_bytes": 10}
        for p in pointers
    ]
    q = c.message(c.root, "user", {"content_type": "multimodal_text", "parts": [*parts, "hi"]})
    c.current = q
    return c, q


async def _files(store: ConversationStore, cid: str, tenant: str | None = None) -> list[FilePart]:
    convo = await store.load(cid, tenant=tenant)
    return [f for m in convo.messages for f in m.files]


# -- only the export is read ---------------------------------------------------------------------


async def test_a_conversations_file_alone_reads_no_neighbouring_file(
    store: ConversationStore, tmp_path: Path
) -> None:
    # The finding: pointers matched names by prefix, and a file handed alone took the files
    # beside it as its assets: `id_rsa` and `tax-2025.pdf` were stored as attachments.
    (tmp_path / "id_rsa").write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    (tmp_path / "tax-2025.pdf").write_bytes(b"%PDF-1.7\n% tax return\n")
    (tmp_path / "file-Abc123-photo.png").write_bytes(png())
    c, _ = _chatgpt_with_pointers(
        "file-service://id_rsa", "sediment://tax", "file-service://file-Abc123"
    )
    (tmp_path / "conversations.json").write_text(json.dumps([c.document()]))

    report = await import_file(store, tmp_path / "conversations.json", "chatgpt-export")

    files = await _files(store, f"chatgpt-{c.id}")
    assert [f.attachment for f in files] == [None, None, None]
    assert [f.uri for f in files] == [
        "file-service://id_rsa",
        "sediment://tax",
        "file-service://file-Abc123",
    ]
    assert report.imported["attachment"] == 0
    assert report.unmapped["file not in export (kept as a reference)"] == 3


async def test_an_asset_pointer_names_one_exact_file_never_a_prefix(
    store: ConversationStore, tmp_path: Path
) -> None:
    export = tmp_path / "export"
    export.mkdir()
    (export / "tax-2025.pdf").write_bytes(b"%PDF-1.7\n% tax return\n")
    (export / "file-Abc123X-other.png").write_bytes(png(seed=9))  # a longer id, same start
    (export / "file-Abc123-photo.png").write_bytes(png(seed=1))
    c, _ = _chatgpt_with_pointers(
        "file-service://tax", "file-service://file-Abc", "file-service://file-Abc123"
    )
    (export / "conversations.json").write_text(json.dumps([c.document()]))

    await import_file(store, export, "chatgpt-export")

    files = await _files(store, f"chatgpt-{c.id}")
    assert [f.uri for f in files[:2]] == ["file-service://tax", "file-service://file-Abc"]
    assert files[2].attachment is not None
    assert await store.read_attachment(files[2]) == png(seed=1)
    assert files[2].filename == "file-Abc123-photo.png"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
async def test_a_directory_export_is_never_left_through_a_symbolic_link(
    store: ConversationStore, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file-Secret1-key.png").write_bytes(png(seed=3))
    (outside / "file-Secret2-key.png").write_bytes(png(seed=4))
    export = tmp_path / "export"
    export.mkdir()
    # A link to a file, and a link to a directory holding another.
    (export / "file-Secret1-key.png").symlink_to(outside / "file-Secret1-key.png")
    (export / "user-abc").symlink_to(outside, target_is_directory=True)
    c, _ = _chatgpt_with_pointers("file-service://file-Secret1", "sediment://file-Secret2")
    (export / "conversations.json").write_text(json.dumps([c.document()]))

    report = await import_file(store, export, "chatgpt-export")

    files = await _files(store, f"chatgpt-{c.id}")
    assert [f.attachment for f in files] == [None, None]
    assert report.imported["attachment"] == 0


# -- one conversation at a time -----------------------------------------------------------------


def _good_chatgpt() -> ChatGPT:
    c = ChatGPT()
    c.current = c.text(c.root, "user", "still imported")
    return c


@pytest.mark.parametrize("strict", [False, True])
async def test_a_conversation_that_cannot_be_stored_is_reported_and_the_rest_imported(
    store: ConversationStore, tmp_path: Path, strict: bool
) -> None:
    long_id = ChatGPT()
    long_id.current = long_id.text(
        long_id.root,
        "user",
        "hi",
    )
    node = long_id.mapping.pop(long_id.current)
    node["id"] = node["message"]["id"] = "n" * 300  # a node id over 255 characters
    long_id.mapping["n" * 300] = node
    long_id.current = "n" * 300
    surrogate = ChatGPT()
    surrogate.current = surrogate.text(surrogate.root, "user", "\ud800 lone")
    good = _good_chatgpt()
    text = json.dumps([long_id.document(), surrogate.document(), good.document()])
    (tmp_path / "conversations.json").write_text(text)

    if strict:
        with pytest.raises(ConversationRefusedError) as raised:
            await import_file(store, tmp_path, "chatgpt-export", strict=True)
        assert raised.value.position.startswith("conversations.json, conversation 0 (character")
        assert "255" in raised.value.problem
        return
    report = await import_file(store, tmp_path, "chatgpt-export")

    assert report.imported["conversation"] == 1
    assert (await store.load(f"chatgpt-{good.id}")).messages[-1].text == "still imported"
    first, second = report.errors
    assert first.startswith(f"conversations.json, conversation 0 (character 1), id {long_id.id!r}")
    assert "255" in first
    assert second.startswith("conversations.json, conversation 1 (character ")
    assert "surrogate" in second
    assert all("unexpected" not in e for e in report.errors)


async def test_a_claude_message_whose_content_is_not_a_list_is_its_conversation_s_error(
    store: ConversationStore, tmp_path: Path
) -> None:
    broken = claude_message("human", [{"type": "text", "text": "x"}], "2025-03-02T10:00:00Z")
    broken["content"] = 5  # the finding: a TypeError traceback that ended the import
    good = claude_conversation(
        [claude_message("human", [{"type": "text", "text": "fine"}], "2025-03-02T10:00:00Z")]
    )
    bad = claude_conversation([broken])
    (tmp_path / "conversations.json").write_text(json.dumps([bad, good]))

    report = await import_file(store, tmp_path, "claude-export")

    assert (await store.load(f"claude-{good['uuid']}")).messages[0].text == "fine"
    assert all("unexpected" not in e for e in report.errors)
    # The number is not content: the message keeps its text (the export's `text` field).
    assert (await store.load(f"claude-{bad['uuid']}")).messages[0].text == "x"


# -- limits -------------------------------------------------------------------------------------


def test_whitespace_between_conversations_is_dropped_as_it_is_read() -> None:
    class Reader(io.RawIOBase):
        """32 MiB of blanks between two elements, made as they are read."""

        def __init__(self) -> None:
            self.parts = [b'[{"a": 1}', b" \n\t\r" * (8 << 20), b',{"b": 2}]']
            self.at = 0  # in the first part (no copy of what is left: only reads count)

        def read(self, size: int = -1) -> bytes:
            if not self.parts:
                return b""
            part = self.parts[0]
            head = part[self.at : self.at + size] if size >= 0 else part[self.at :]
            self.at += len(head)
            if self.at >= len(part):
                self.parts.pop(0)
                self.at = 0
            return head

    # Finding 4: the blanks were kept in the read buffer until the next element (212 MB for
    # 64 MiB). Now the buffer holds at most a few chunks, whatever the run of blanks.
    reader = Reader()
    tracemalloc.start()
    try:
        items = [value for _, _, value in array_items(reader, "c.json", chunk=1 << 16)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert items == [{"a": 1}, {"b": 2}]
    assert peak < 4 << 20, f"{peak:,} bytes held for 32 MiB of blanks"


async def test_a_conversation_over_the_size_limit_stops_the_import_where_it_is(
    store: ConversationStore, tmp_path: Path
) -> None:
    small = _good_chatgpt()
    padded = _good_chatgpt().document()
    padded["padding"] = " " * (3 << 20)  # 3 MiB of text in one conversation
    after = _good_chatgpt()
    (tmp_path / "conversations.json").write_text(
        json.dumps([small.document(), padded, after.document()])
    )
    with pytest.raises(ExportLimitError) as raised:
        await import_file(
            store, tmp_path, "chatgpt-export", limits=ImportLimits(conversation_size=2 << 20)
        )
    assert raised.value.limit == "conversation_size"
    assert raised.value.position.startswith("conversations.json, character ")
    assert raised.value.position.endswith(", conversation 1")
    assert (await store.load(f"chatgpt-{small.id}")).messages[-1].text == "still imported"


async def test_a_member_is_counted_as_it_is_read_whatever_its_header_says(
    store: ConversationStore, tmp_path: Path
) -> None:
    documents = [_good_chatgpt().document() for _ in range(40)]
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", json.dumps(documents))
    with pytest.raises(ExportLimitError) as raised:
        await import_file(store, path, "chatgpt-export", limits=ImportLimits(member_bytes=20_000))
    assert (raised.value.limit, raised.value.position) == ("member_bytes", "conversations.json")
    with pytest.raises(ExportLimitError) as raised:
        await import_file(store, path, "chatgpt-export", limits=ImportLimits(total_bytes=20_000))
    assert raised.value.limit == "total_bytes"


async def test_a_zip_member_that_lies_about_its_size_is_a_malformed_export(
    store: ConversationStore, tmp_path: Path
) -> None:
    c, _ = _chatgpt_with_pointers("file-service://file-Big1")
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", json.dumps([c.document()]))
        z.writestr("file-Big1-zeros.png", png() + bytes(4 << 20))
    data = bytearray(path.read_bytes())
    # Every copy of the member's uncompressed size (local header, central directory): 100 bytes.
    declared = (len(png()) + (4 << 20)).to_bytes(4, "little")
    for found in [m.start() for m in re.finditer(re.escape(declared), data)]:
        data[found : found + 4] = (100).to_bytes(4, "little")
    path.write_bytes(bytes(data))

    report = await import_file(store, path, "chatgpt-export")

    # The member could not be read as declared (its CRC no longer matches what was read).
    (error,) = report.errors
    assert "file-Big1-zeros.png" in error
    assert report.imported["conversation"] == 0


async def test_an_asset_over_the_attachment_limit_is_kept_as_a_reference(
    tmp_path: Path,
) -> None:
    c, _ = _chatgpt_with_pointers("file-service://file-Big2")
    export = tmp_path / "export"
    export.mkdir()
    (export / "conversations.json").write_text(json.dumps([c.document()]))
    (export / "file-Big2-zeros.png").write_bytes(png() + bytes(2 << 20))
    url = f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    async with ConversationStore(url, blobs=str(tmp_path / "b"), max_attachment_size=1 << 20) as s:
        report = await import_file(s, export, "chatgpt-export")
        (part,) = await _files(s, f"chatgpt-{c.id}")
    assert part.uri == "file-service://file-Big2"
    assert report.unmapped["file over the attachment size limit (kept as a reference)"] == 1


# -- Open WebUI's inline blocks -----------------------------------------------------------------

_OLD_DETAILS = re.compile(r"<details\s+([^>]*)>(.*?)</details>", re.DOTALL)
_OLD_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_OLD_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_TOKENS = ("<details", " ", "\n", ">", "</details>", "<summary>", "</summary>", "a", '"', "=")


def test_the_details_parser_reads_what_the_regular_expression_read() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=500, derandomize=True, deadline=None)
    @given(st.lists(st.sampled_from(_TOKENS), max_size=40))
    def check(tokens: list[str]) -> None:
        text = "".join(tokens)
        old = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _OLD_DETAILS.finditer(text)]
        new = [(b.start, b.end, b.attributes.lstrip(), b.body) for b in _details_blocks(text)]
        assert [(s, e, a.lstrip(), b) for s, e, a, b in old] == new
        assert _attributes(text) == {k: html.unescape(v) for k, v in _OLD_ATTRIBUTE.findall(text)}
        assert _without_summaries(text) == _OLD_SUMMARY.sub("", text)

    check()


class _Counted(str):
    """A str whose ``find`` counts the characters it scans (the parser's only scanning)."""

    scanned = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        found = str.find(self, sub, begin)
        _Counted.scanned += (found + len(sub) if found >= 0 else len(self)) - begin
        return found


@pytest.mark.parametrize(
    "unit",
    [
        "<details a>",  # the finding: 440k characters of this took 104 s
        "<details a></details>",
        "<details\n",
        '<details type="reasoning">x',
        "<summary><details b>",
        'a="',
    ],
)
def test_details_blocks_take_linear_time(unit: str) -> None:
    """Counted work: the characters ``str.find`` scans stay within a small multiple of the text,
    for every repetition count (a quadratic parser scans the rest of the text per block)."""
    for repeat in (1_000, 4_000, 40_000):
        text = _Counted(unit * repeat)
        _Counted.scanned = 0
        blocks = list(_details_blocks(text))
        for block in blocks:
            _attributes(_Counted(block.attributes))
            _without_summaries(_Counted(block.body))
        _without_summaries(text)
        assert _Counted.scanned <= 4 * len(text), (unit, repeat, _Counted.scanned)


def test_the_finding_s_input_converts_at_once() -> None:
    """440k characters of ``<details a>`` in one Open WebUI answer (104 s before)."""
    content = "<details a>" * 40_000
    began = time.perf_counter()
    tree = openwebui.convert(
        {
            "id": "x",
            "chat": {
                "history": {
                    "messages": {"m": {"id": "m", "role": "assistant", "content": content}},
                    "currentId": "m",
                }
            },
        },
        ExportSource(Path(__file__)),
        Counter(),
    )
    took = time.perf_counter() - began
    print(f"440k characters of <details a>: {took * 1e3:.1f} ms")
    assert tree.nodes[0].messages[0].text == content
    assert took < 10  # generous: linear work of a few milliseconds


async def test_malformed_json_is_still_a_malformed_export(
    store: ConversationStore, tmp_path: Path
) -> None:
    (tmp_path / "conversations.json").write_text('[{"uuid": "x", "chat_messages": [}]')
    with pytest.raises(MalformedExportError):
        await import_file(store, tmp_path, "claude-export")
