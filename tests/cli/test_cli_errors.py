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
