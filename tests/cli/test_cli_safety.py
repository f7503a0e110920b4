"""The command line cannot hurt.

- Reading commands (``list``, ``show``, ``render``, ``fsck``, and ``gc``) on a mistyped
  ``--url`` do not create an empty database and report success: `DatabaseNotFoundError`,
  exit status 1, no file left behind.
- No message ``convstore`` prints holds the database password (``migrate``'s report, every
  error), however the password is spelled in the URL.
- Errors say what to do: a database from a newer convstore says to upgrade convstore.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from convstore.cli import main
from tests.support.postgres import PostgresCluster

READING = {
    "list": ["list"],
    "show": ["show", "some-id"],
    "render": ["render", "some-id", "--to", "openai-chat"],
    "fsck": ["fsck"],
    "gc": ["gc", "--dry-run"],
}


@pytest.mark.parametrize("command", sorted(READING))
def test_reading_commands_never_create_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    mistyped = tmp_path / "convstor.db"
    args = [*READING[command], "--url", f"sqlite+aiosqlite:///{mistyped}"]
    assert main([*args, "--blobs", str(tmp_path / "blobs")]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"convstore: DatabaseNotFoundError: no database at {mistyped}: check --url (or "
        "CONVSTORE_URL); `convstore migrate --url URL` creates a new one\n"
    )
    assert list(tmp_path.iterdir()) == []  # no database, no WAL, no blob directory


def test_migrate_then_read_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'ok.db'}"
    assert main(["migrate", "--url", url]) == 0
    assert main(["list", "--url", url]) == 0
    assert "no conversations" in capsys.readouterr().out


SECRET = "s3cr%t:p@ss"
SECRET_IN_URL = "s3cr%25t%3Ap%40ss"  # the same password, percent-encoded as a URL holds it


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+asyncpg://alice:{SECRET_IN_URL}@127.0.0.1:1/convstore",  # refused port
        f"postgresql+asyncpg://alice:{SECRET_IN_URL}@127.0.0.1:notaport/convstore",  # unreadable
        "postgresql+asyncpg://alice:plain-secret@127.0.0.1:1/convstore",
    ],
)
@pytest.mark.parametrize("command", [["migrate"], ["list"]])
def test_no_error_prints_the_password(
    capsys: pytest.CaptureFixture[str], url: str, command: list[str]
) -> None:
    assert main([*command, "--url", url, "--blobs", "memory://pw"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("convstore: ")
    for spelling in (SECRET, SECRET_IN_URL, "plain-secret"):
        assert spelling not in err


@pytest.mark.postgres
def test_migrate_does_not_print_the_password(
    pg_cluster: PostgresCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    pg_cluster.create_database("convstore_cli_password")
    # The cluster trusts local connections, so any password is accepted and ignored.
    with_password = (
        f"postgresql+asyncpg://{pg_cluster.user}:hunter2-secret@{pg_cluster.host}:"
        f"{pg_cluster.port}/convstore_cli_password"
    )
    assert main(["migrate", "--url", with_password]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("migrated postgresql+asyncpg://")
    assert "***" in out
    assert "hunter2-secret" not in out


def test_a_database_from_a_newer_convstore_says_to_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'newer.db'}"
    assert main(["migrate", "--url", url]) == 0
    with sqlite3.connect(tmp_path / "newer.db") as db:
        db.execute("UPDATE alembic_version SET version_num = 'ffff_from_a_newer_release'")
    capsys.readouterr()
    assert main(["list", "--url", url]) == 1
    err = capsys.readouterr().err
    assert "it was migrated by a newer convstore; upgrade convstore to use it" in err
