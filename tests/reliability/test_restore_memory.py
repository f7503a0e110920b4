"""Restore memory is bounded whatever the archive says (issue 32, finding 4).

Each bomb is a zip whose members decompress to far more than the file holds, built in
milliseconds (`tests.support.archives.Repeat`), restored in a child process whose peak RSS
(``VmHWM``) must stay at most `PEAK_MB`: the limits of
`convstore.store.transfer.restore.RestoreLimits` stop reading at the member's limit, never trusting
the zip's sizes or the manifest's. The largest archive the limits accept is restored too, under the
same bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, FilePart, Message
from convstore.store.transfer.restore import RestoreLimits
from tests.support.archives import Repeat, crowded_zip, write_zip
from tests.support.images import noise_png

pytestmark = pytest.mark.slow  # thousands of inputs or subprocesses: make test, not test-fast

REPO = Path(__file__).resolve().parents[2]
PEAK_MB = 300
GIB = 1024**3
MIB = 1024**2
LIMITS = RestoreLimits()


async def _real_export(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The manifest and conversation document of a real one-conversation export, and a digest."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'source.db'}"
    png = noise_png(3, 16, 16)
    async with ConversationStore(url, blobs=str(tmp_path / "src-blobs"), auto_migrate=True) as s:
        conv = await s.create_conversation(title="t")
        await s.append(conv.id, [Message.user("pic", FilePart.from_bytes(png))])
        await s.export(tmp_path / "real.zip")
    (tmp_path / "blob.bin").write_bytes(png)
    import zipfile

    with zipfile.ZipFile(tmp_path / "real.zip") as real:
        manifest = json.loads(real.read("manifest.json"))
        document = json.loads(real.read(manifest["conversations"][0]["file"]))
    return manifest, document, manifest["blobs"][0]["sha256"]


def _restore(archive: Path, tmp_path: Path) -> dict[str, Any]:
    work = tmp_path / f"work-{archive.stem}"
    work.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "tests.reliability.restore_memory", str(archive), str(work)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"{archive.name}: peak {result['peak_mb']:.0f} MB, {result['error'] or 'restored'}")
    return result


def _split(document: dict[str, Any], marker: str) -> tuple[bytes, bytes]:
    """The document's JSON text before and after ``marker`` (a string value in it)."""
    text = json.dumps(document)
    head, _, tail = text.partition(json.dumps(marker))
    return head.encode(), tail.encode()


@pytest.fixture
async def export(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    return await _real_export(tmp_path)


def _bombs(
    tmp_path: Path, manifest: dict[str, Any], document: dict[str, Any], sha: str
) -> dict[str, Path]:
    member = manifest["conversations"][0]["file"]
    lying = {**manifest, "blobs": [{**manifest["blobs"][0], "size": 19}]}
    body = json.dumps(document).encode()
    tables = document["archive"]["tables"]["conversations"]
    tables["rows"][0][tables["columns"].index("title")] = "TITLE-HERE"
    title_head, title_tail = _split(document, "TITLE-HERE")
    return {
        # A blob member of 1.5 GiB where the manifest says 19 bytes.
        "blob": write_zip(
            tmp_path / "blob.zip",
            {
                "manifest.json": json.dumps(lying).encode(),
                member: body,
                f"blobs/{sha}": Repeat(b"", bytes(MIB), 1536, b""),
            },
        ),
        # The conversation document padded with 1 GiB of whitespace.
        "padded": write_zip(
            tmp_path / "padded.zip",
            {
                "manifest.json": json.dumps(manifest).encode(),
                member: Repeat(body[:-1], b" " * MIB, 1024, b"}"),
            },
        ),
        # A 1 GiB title.
        "title": write_zip(
            tmp_path / "title.zip",
            {
                "manifest.json": json.dumps(manifest).encode(),
                member: Repeat(title_head + b'"', b"a" * MIB, 1024, b'"' + title_tail),
            },
        ),
    }


@pytest.mark.parametrize("bomb", ["blob", "padded", "title"])
async def test_a_bomb_is_refused_within_the_memory_bound(
    tmp_path: Path, export: tuple[dict[str, Any], dict[str, Any], str], bomb: str
) -> None:
    archive = _bombs(tmp_path, *export)[bomb]
    assert archive.stat().st_size < 8 * MIB  # the point: a small file, a huge member
    result = _restore(archive, tmp_path)
    # The bound first: the code before it read each bomb whole (the finding: 3.16 GB for the
    # blob) and then failed the member's CRC.
    assert result["peak_mb"] <= PEAK_MB, result
    assert result["error"] == "MalformedExportError", result
    expected = "the manifest says" if bomb == "blob" else "RestoreLimits.member_bytes"
    assert expected in result["message"]


@pytest.mark.parametrize(
    ("entries", "declared"),
    [(2_000_000, None), (600_000, 1)],
    ids=["two-million-entries", "600k-entries-declared-as-one"],
)
async def test_an_archive_of_millions_of_entries_is_refused_within_the_bound(
    tmp_path: Path,
    export: tuple[dict[str, Any], dict[str, Any], str],
    entries: int,
    declared: int | None,
) -> None:
    """The archive's central directory lists millions of files (or the end record understates
    600,000 as one): measured and counted before `zipfile` reads it (~700 bytes per entry)."""
    manifest, document, _sha = export
    members = {
        "manifest.json": json.dumps(manifest).encode(),
        manifest["conversations"][0]["file"]: json.dumps(document).encode(),
    }
    archive = crowded_zip(tmp_path / "crowded.zip", members, entries=entries, declared=declared)
    result = _restore(archive, tmp_path)
    # The code before read every entry: 990 MB for two million, 350 MB for 600,000.
    assert result["peak_mb"] <= PEAK_MB, result
    assert result["error"] == "ExportLimitError", result
    limit = "zip_directory_bytes" if declared is None else "zip_entries"
    assert f"RestoreLimits.{limit}" in result["message"]


@pytest.mark.parametrize("where", ["checkpoint"])
async def test_the_largest_accepted_conversation_restores_within_the_bound(
    tmp_path: Path, export: tuple[dict[str, Any], dict[str, Any], str], where: str
) -> None:
    """A checkpoint's bytes as large as the member limit allows, beside as many JSON items as
    the item limit allows.

    Not a title or metadata: the header check refuses a title over 4,096 characters and
    metadata over 1 Mi (convstore.limits). Not a message's text: indexing it for search takes
    many times its size in memory, whoever wrote it (the search index's bound,
    docs/reliability.md).
    """
    manifest, document, sha = export
    member = manifest["conversations"][0]["file"]
    tables = document["archive"]["tables"]
    header = tables["conversations"]
    if where == "title":
        header["rows"][0][header["columns"].index("title")] = "BIG-HERE"
    else:
        cid = header["rows"][0][header["columns"].index("id")]
        value = {"conversation_id": cid, "checkpoint_ns": "", "channel": "c", "version": "1"}
        value.update(value_type="bytes", value="BIG-HERE")
        tables["checkpoint_values"] = {"columns": list(value), "rows": [list(value.values())]}
    items = (LIMITS.json_items - 1_000) // 2  # each `[],` counts its `[` and its `,`
    header["rows"][0][header["columns"].index("state")] = {"padding": "STATE-HERE"}
    pieces = json.dumps(document).encode().split(b'"BIG-HERE"')
    room = (LIMITS.member_bytes - sum(map(len, pieces)) - 3 * items - 1 * MIB) // (len(pieces) - 1)
    text = (b'"' + b"a" * (room // 4 * 4) + b'"').join(pieces)  # base64 for the checkpoint
    state_head, _, state_tail = text.partition(b'"STATE-HERE"')
    text = state_head + b"[" + b"[]," * (items - 1) + b"[]]" + state_tail
    assert LIMITS.member_bytes - 2 * MIB < len(text) <= LIMITS.member_bytes
    archive = write_zip(
        tmp_path / "largest.zip",
        {
            "manifest.json": json.dumps(manifest).encode(),
            member: text,
            f"blobs/{sha}": (tmp_path / "blob.bin").read_bytes(),
        },
    )
    result = _restore(archive, tmp_path)
    assert result["error"] is None, result
    assert result["imported"]["conversation"] == 1
    assert result["peak_mb"] <= PEAK_MB, result
