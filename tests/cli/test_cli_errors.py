"""One error policy for every command: one line on stderr, exit 1 (2 for usage), no traceback.

- A `ConvstoreError` is its class and message; anything else is "unexpected", with the hint to
  rerun with ``CONVSTORE_DEBUG=1``, which prints the traceback too.
- Usage errors (a port out of range, a period before the year 1, an unknown command) are one
  line naming the option and where to read more, exit 2.
- A reader that closes stdout early (``convstore show ID | head``) ends the command quietly.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convstore.cli import main


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVSTORE_")}
    return {**env, **extra}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--port", "99999"], "argument --port: '99999' is not a port"),
        (["serve", "--port", "-1"], "argument --port: '-1' is not a port"),
        (["prune", "--older-than", "10000000d"], "reaches back before the year 1"),
        (["prune", "--older-than", "99999999999d"], "reaches back before the year 1"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line_exit_2(tmp_path: Path, argv: list[str], says: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "convstore", *argv],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr and "--help" in done.stderr


def test_an_unexpected_error_is_one_line_and_the_traceback_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(args: object) -> int:
        raise RuntimeError("the disk\nis on fire")

    monkeypatch.setattr("convstore.cli.reading.list_conversations", broken)
    monkeypatch.delenv("CONVSTORE_DEBUG", raising=False)
    assert main(["list", "--url", f"sqlite+aiosqlite:///{tmp_path}/x.db"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "convstore: unexpected RuntimeError: the disk is on fire (a bug in convstore: run "
        "again with CONVSTORE_DEBUG=1 for the traceback, and report it)\n"
    )
    monkeypatch.setenv("CONVSTORE_DEBUG", "1")
    assert main(["list", "--url", f"sqlite+aiosqlite:///{tmp_path}/x.db"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("convstore: unexpected RuntimeError: the disk is on fire")
    assert "Traceback (most recent call last)" in err and 'raise RuntimeError("the disk' in err


def test_a_library_error_is_its_class_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.json"
    assert main(["import", str(missing), "--format", "openai-chat"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"convstore: InvalidInputError: cannot read a JSON payload from {missing}"
    )
    assert err.count("\n") == 1


def test_a_closed_stdout_ends_the_command_quietly(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}"
    storage = ["--url", url, "--blobs", str(tmp_path / "blobs")]
    command = [sys.executable, "-m", "convstore"]
    subprocess.run([*command, "demo", *storage], env=_env(), capture_output=True, check=True)
    for argv in (["show", "demo-trip-to-lisbon"], ["list"], ["render", "demo-trip-to-lisbon",
                 "--to", "anthropic"], ["search", "lisbon"]):  # fmt: skip
        read, write = os.pipe()
        os.close(read)  # the reader (`head`) is gone before the first line: every write fails
        try:
            done = subprocess.run(
                [*command, *argv, *storage],
                env=_env(),
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
        finally:
            os.close(write)
        assert done.stderr == "", argv
        assert done.returncode == 1, argv


# One failing invocation per command, and the words its one line must hold. ``{db}`` is a
# database holding the demo conversation, ``{missing}`` a path where nothing exists.
FAILURES: dict[str, tuple[list[str], str]] = {
    "demo": (["demo", "--url", "mysql://db/x"], "InvalidInputError: unsupported database URL"),
    "migrate": (["migrate", "--url", "mysql://db/x"], "unsupported database URL scheme"),
    "partition": (["partition", "--url", "{db}", "--modulus", "4"], "for PostgreSQL databases"),
    "list": (["list", "--url", "{missing}"], "DatabaseNotFoundError"),
    "show": (["show", "nope", "--url", "{db}"], "ConversationNotFoundError"),
    "import": (["import", "{missing}.json", "--url", "{db}"], "InvalidInputError"),
    "render": (["render", "nope", "--to", "anthropic", "--url", "{db}"], "not found"),
    "gc": (["gc", "--url", "{missing}"], "DatabaseNotFoundError"),
    "fsck": (["fsck", "--url", "{missing}"], "DatabaseNotFoundError"),
    "blobs": (["blobs", "show", "--url", "{missing}"], "DatabaseNotFoundError"),
    "serve": (["serve", "--url", "{missing}"], "DatabaseNotFoundError"),
    "mcp": (["mcp", "--url", "{missing}"], "DatabaseNotFoundError"),
    "search": (["search", "lisbon", "--url", "{missing}"], "DatabaseNotFoundError"),
    "export": (["export", "{out}", "--conversation", "nope", "--url", "{db}"], "not found"),
    "erase": (["erase", "--tenant", "nobody", "--yes", "--url", "{db}"], "nobody"),
    "prune": (["prune", "--older-than", "30d", "--url", "{missing}"], "DatabaseNotFoundError"),
}


@pytest.fixture(scope="module")
def demo_storage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    where = tmp_path_factory.mktemp("cli-errors")
    db = f"sqlite+aiosqlite:///{where / 'demo.db'}"
    subprocess.run(
        [sys.executable, "-m", "convstore", "demo", "--url", db, "--blobs", str(where / "b")],
        env=_env(),
        capture_output=True,
        check=True,
    )
    return {
        "db": db,
        "missing": f"sqlite+aiosqlite:///{where / 'missing.db'}",
        "out": str(where / "out.zip"),
    }


def test_the_audit_names_every_command() -> None:
    from convstore.cli.parser import COMMANDS

    assert set(FAILURES) == {c.name for c in COMMANDS}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_every_command_fails_in_one_line_exit_1(
    name: str,
    demo_storage: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, says = FAILURES[name]
    argv = [a.format(**demo_storage) for a in argv]
    done = subprocess.run(
        [sys.executable, "-m", "convstore", *argv],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("convstore: "), done.stderr
    assert says in done.stderr
    missing = Path(demo_storage["missing"].removeprefix("sqlite+aiosqlite:///"))
    assert not missing.exists()  # a failed command created nothing
    # The traceback on request (in-process: the same handler, without another interpreter).
    monkeypatch.setenv("CONVSTORE_DEBUG", "1")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(done.stderr.splitlines()[0])
    assert "Traceback (most recent call last)" in err
