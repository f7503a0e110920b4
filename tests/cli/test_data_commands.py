"""``convstore export``, ``erase`` and ``prune`` on real files, in-process."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from convstore import ConversationStore, FilePart, Message
from convstore.cli import main
from convstore.cli.parser import parse_period
from tests.support.images import noise_png

PNG = noise_png(3, 32, 32)


def _blob_files(root: Path) -> list[Path]:
    return [p for p in (root / "blobs").rglob("*") if p.is_file() and len(p.name) == 64]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _seed(url: str, blobs: str) -> list[str]:
    async with ConversationStore(url, blobs=blobs) as store:
        ids = []
        for n in range(2):
            conv = await store.create_conversation(title=f"c{n}", tenant="t1")
            await store.append(
                conv.id, [Message.user(f"hi {n}", FilePart.from_bytes(PNG))], tenant="t1"
            )
            ids.append(conv.id)
        other = await store.create_conversation(tenant="t2")
        await store.append(other.id, [Message.user("keep me")], tenant="t2")
    return ids


def test_export_erase_import_and_prune_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'c.db'}"
    blobs = str(tmp_path / "blobs")
    where = ["--url", url, "--blobs", blobs]
    ids = asyncio.run(_seed(url, blobs))
    shown = [run(capsys, "show", cid, "--json", *where)[1] for cid in ids]

    assert [p.name for p in _blob_files(tmp_path)] == [hashlib.sha256(PNG).hexdigest()]
    code, out, err = run(capsys, "export", str(tmp_path / "t1.zip"), "--tenant", "t1", *where)
    assert code == 0, err
    assert "exported 2 conversations (2 messages) and 1 blobs" in out
    assert "exporting conversations: 2 of 2" in err  # plain progress lines off a terminal

    code, out, err = run(capsys, "erase", "--tenant", "t1", "--now", *where)
    assert code == 0, err
    assert "messages: 2 rows deleted" in out
    assert "blobs: 1 of 1 no longer referenced deleted" in out
    assert run(capsys, "show", ids[0], *where)[0] == 1
    assert (
        len([p for p in (tmp_path / "blobs").rglob("*") if p.is_file() and "stag" not in str(p)])
        == 0
    )

    code, out, err = run(
        capsys, "import", str(tmp_path / "t1.zip"), "--format", "convstore", *where
    )
    assert code == 0, err
    assert [run(capsys, "show", cid, "--json", *where)[1] for cid in ids] == shown
    assert json.loads(shown[0])["tenant"] == "t1"

    code, out, _ = run(
        capsys, "prune", "--older-than", "30d", "--tenant", "t1", "--dry-run", *where
    )
    assert (code, out.split(" of ")[0]) == (0, "would delete 0")
    code, out, _ = run(capsys, "prune", "--older-than", "0s", "--tenant", "t1", *where)
    assert (code, out.split(" of ")[0]) == (0, "deleted 2")
    assert run(capsys, "list", "--tenant", "t2", *where)[1].count("\n") >= 1


def test_periods() -> None:
    assert parse_period("30d").days == 30
    assert parse_period("1d12h").total_seconds() == 36 * 3600
    for bad in ("30", "d", "30x", "-1d", "1.5d"):
        with pytest.raises(Exception, match="not a period"):
            parse_period(bad)
