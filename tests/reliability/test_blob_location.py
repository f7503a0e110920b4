"""The blob location is recorded in the database: maintenance finds the blobs from anywhere.

Before, a store opened without ``blobs=`` on PostgreSQL used ``./convstore-blobs`` of whatever
directory the process ran in, so ``convstore gc``/``fsck`` run from elsewhere saw an empty blob
store (and gc would have found nothing to keep).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from convstore import ConversationStore, FilePart, Message
from tests.support.postgres import PostgresCluster

PNG = b"\x89PNG\r\n\x1a\n" + b"where are my blobs" * 10


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"location_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'located.db'}"


async def test_a_store_opened_without_blobs_uses_the_recorded_location(
    fresh_url: str, tmp_path: Path
) -> None:
    blobs = tmp_path / "the-blobs"
    async with ConversationStore(fresh_url, blobs=str(blobs), auto_migrate=True) as store:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user(FilePart.from_bytes(PNG)))
    async with ConversationStore(fresh_url) as reopened:
        assert reopened.blobs_url == str(blobs.resolve())
        (message,) = (await reopened.load(conv.id)).messages
        (part,) = message.parts
        assert isinstance(part, FilePart)
        assert await reopened.read_attachment(part) == PNG
    # From an unrelated directory, the command line finds them too.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fsck = subprocess.run(
        [sys.executable, "-m", "convstore", "fsck", "--url", fresh_url],
        capture_output=True, text=True, check=False, cwd=elsewhere,
    )  # fmt: skip
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert "1 referenced blobs, 0 missing" in fsck.stdout
    assert not (elsewhere / "convstore-blobs").exists()


async def test_an_explicit_location_wins_and_memory_is_never_recorded(
    fresh_url: str, tmp_path: Path
) -> None:
    async with ConversationStore(fresh_url, blobs="memory://ephemeral", auto_migrate=True):
        pass
    async with ConversationStore(fresh_url, blobs=str(tmp_path / "first")):
        pass
    async with ConversationStore(fresh_url, blobs=str(tmp_path / "second")) as explicit:
        assert explicit.blobs_url == str(tmp_path / "second")
    async with ConversationStore(fresh_url) as default:
        assert default.blobs_url == str((tmp_path / "first").resolve())


# -- moving a project, re-recording the location ------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from convstore.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_moving_a_project_keeps_its_attachments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    url = f"sqlite+aiosqlite:///{project / 'app.db'}"
    assert _cli(capsys, "demo", "--url", url)[0] == 0
    code, recorded, _ = _cli(capsys, "blobs", "show", "--url", url)
    assert code == 0 and recorded.strip() == str((project / "convstore-blobs").resolve())

    moved = tmp_path / "moved"
    project.rename(moved)
    url = f"sqlite+aiosqlite:///{moved / 'app.db'}"
    code, out, err = _cli(capsys, "fsck", "--url", url)
    assert code == 0, out + err
    assert "0 missing" in out
    code, recorded, _ = _cli(capsys, "blobs", "show", "--url", url)
    assert recorded.strip() == str((moved / "convstore-blobs").resolve())
    code, listing, _ = _cli(capsys, "list", "--url", url)
    cid = next(line.split()[0] for line in listing.splitlines() if "Lisbon" in line)
    code, out, err = _cli(capsys, "render", cid, "--to", "anthropic", "--url", url)
    assert code == 0, err
    assert '"type": "image"' in out


def test_a_gone_location_is_offered_to_be_re_recorded(
    fresh_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    import shutil

    old, new, empty = tmp_path / "old-blobs", tmp_path / "new-blobs", tmp_path / "empty"
    empty.mkdir()

    async def write() -> None:
        async with ConversationStore(fresh_url, blobs=str(old), auto_migrate=True) as store:
            conv = await store.create_conversation()
            await store.append(conv.id, Message.user("kept", FilePart.from_bytes(PNG)))

    asyncio.run(write())
    shutil.move(str(old), str(new))  # the directory was moved; the database still names it

    code, out, err = _cli(capsys, "fsck", "--url", fresh_url, "--blobs", str(new))
    assert code == 0, out + err
    assert f"convstore blobs set {new}" in err and str(old) in err

    # The check: a location without the referenced blobs is refused, nothing recorded.
    code, _, err = _cli(capsys, "blobs", "set", str(empty), "--url", fresh_url)
    assert code == 1 and "lacks 1 " in err
    assert _cli(capsys, "blobs", "show", "--url", fresh_url)[1].strip() == str(old)

    code, out, err = _cli(capsys, "blobs", "set", str(new), "--url", fresh_url)
    assert code == 0, err
    code, out, err = _cli(capsys, "fsck", "--url", fresh_url)  # no --blobs: the recorded one
    assert code == 0 and "1 referenced blobs, 0 missing" in out
    assert "blobs set" not in err
