"""``convstore export``, ``erase`` and ``prune`` on real files, in-process."""

from __future__ import annotations

import asyncio
import hashlib
import io
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

    code, out, err = run(capsys, "erase", "--tenant", "t1", "--now", "--yes", *where)
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


def test_periods_before_the_year_one_are_usage_errors() -> None:
    for far in ("10000000d", "99999999999d", "99999999999999999999w"):
        with pytest.raises(Exception, match="reaches back before the year 1"):
            parse_period(far)
    assert parse_period("36500d").days == 36500


@pytest.mark.parametrize("period", ["10000000d", "99999999999d"])
def test_prune_with_a_period_too_long_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], period: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["prune", "--older-than", period, "--url", f"sqlite+aiosqlite:///{tmp_path}/x.db"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "reaches back before the year 1" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _counts(url: str, blobs: str) -> dict[str | None, int]:
    async def count() -> dict[str | None, int]:
        async with ConversationStore(url, blobs=blobs) as store:
            page = await store.list_conversations(limit=100)
        return {t: sum(1 for row in page if row.tenant == t) for t in ("t1", "t2")}

    return asyncio.run(count())


def test_erase_shows_asks_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'e.db'}"
    blobs = str(tmp_path / "blobs")
    where = ["--url", url, "--blobs", blobs]
    asyncio.run(_seed(url, blobs))

    code, out, err = run(capsys, "erase", "--tenant", "t1", "--dry-run", *where)
    assert (code, err) == (0, "")
    assert out.startswith("would erase tenant 't1': 2 conversations (2 messages)")
    assert out.rstrip().endswith("nothing erased (--dry-run)")
    code, out, _ = run(capsys, "erase", "--tenant", "t2", "--dry-run", *where)
    assert "1 conversation (1 message)" in out  # singular when one

    # No terminal, no --yes: a usage error, nothing erased.
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, err = run(capsys, "erase", "--tenant", "t1", *where)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "add --yes" in err

    # A terminal: asked; anything but yes erases nothing.
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    code, out, err = run(capsys, "erase", "--tenant", "t1", *where)
    assert (code, err) == (1, "nothing erased\n")
    assert "This cannot be undone. [y/N]" in out
    assert _counts(url, blobs) == {"t1": 2, "t2": 1}
    monkeypatch.setattr("sys.stdin", _Terminal("yes\n"))
    code, out, err = run(capsys, "erase", "--tenant", "t1", *where)
    assert code == 0, err
    assert "erased tenant 't1': 2 conversations" in out
    assert _counts(url, blobs) == {"t1": 0, "t2": 1}

    # A tenant with nothing to erase (misspelt, or erased already) is an error.
    code, out, err = run(capsys, "erase", "--tenant", "t1", "--yes", *where)
    assert (code, out) == (1, "")
    assert err == (
        "convstore: NotFoundError: tenant 't1' has no conversations: nothing to erase (check "
        "the name; 'convstore list --tenant NAME' shows a tenant's conversations)\n"
    )
    assert run(capsys, "erase", "--tenant", "t9", "--dry-run", *where)[0] == 1
