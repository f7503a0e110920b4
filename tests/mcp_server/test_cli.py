"""``convstore mcp``'s own rules: the extra named when missing, a token for a wider host, only
an existing database, and the SDK imported only when the command runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from convstore.cli import main
from tests.test_optional_dependencies import _run


def test_a_wider_http_host_needs_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CONVSTORE_TOKEN", raising=False)
    status = main(
        [
            "mcp",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
            "--url",
            "sqlite+aiosqlite:///nowhere.db",
        ]
    )
    assert status == 2
    assert "needs --token or CONVSTORE_TOKEN" in capsys.readouterr().err


def test_it_opens_only_an_existing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = f"sqlite+aiosqlite:///{tmp_path}/missing.db"
    assert main(["mcp", "--url", missing]) == 1
    assert "DatabaseNotFoundError" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("blocked", ["mcp", "uvicorn"])
def test_without_the_mcp_extra_the_command_names_it(blocked: str, tmp_path: Path) -> None:
    database = tmp_path / "convstore.db"
    result = _run(
        blocked,
        f"""
        import asyncio, sys
        from convstore import ConversationStore
        from convstore.cli import main

        async def create():
            async with ConversationStore("sqlite+aiosqlite:///{database}"):
                pass

        asyncio.run(create())
        sys.exit(main(["mcp", "--url", "sqlite+aiosqlite:///{database}"]))
        """,
    )
    assert result.returncode == 1
    assert "MissingDependencyError" in result.stderr
    assert "pip install 'convstore[mcp]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_does_not_import_the_sdk_for_other_commands() -> None:
    code = "import sys; from convstore.cli.main import build_parser; build_parser(); "
    code += "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]"


def test_python_m_convstore_mcp_has_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "convstore", "mcp", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    for option in ("--transport", "--host", "--port", "--token", "--tenant", "--url", "--blobs"):
        assert option in result.stdout
