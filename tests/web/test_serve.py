"""``convstore serve``'s own rules: loopback by default, a token for anything wider."""

from __future__ import annotations

from pathlib import Path

import pytest

from convstore.cli import main
from convstore.cli.serve import allowed_hosts, is_loopback
from tests.test_optional_dependencies import _run


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.org", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_wider_host_needs_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CONVSTORE_TOKEN", raising=False)
    status = main(["serve", "--host", "0.0.0.0", "--url", "sqlite+aiosqlite:///nowhere.db"])
    assert status == 2
    assert "needs --token or CONVSTORE_TOKEN" in capsys.readouterr().err


def test_serve_opens_only_an_existing_database(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("CONVSTORE_TOKEN", raising=False)
    missing = f"sqlite+aiosqlite:///{tmp_path}/missing.db"
    assert main(["serve", "--url", missing, "--port", "0"]) == 1
    assert "DatabaseNotFoundError" in capsys.readouterr().err


@pytest.mark.parametrize("blocked", ["starlette", "jinja2", "uvicorn", "markdown_it", "pygments"])
def test_without_the_web_extra_serve_names_it(blocked: str, tmp_path: Path) -> None:
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
        sys.exit(main(["serve", "--url", "sqlite+aiosqlite:///{database}", "--port", "0"]))
        """,
    )
    assert result.returncode == 1
    assert "MissingDependencyError" in result.stderr
    assert f"needs {blocked}" in result.stderr
    assert "pip install 'convstore[web]'" in result.stderr


@pytest.mark.parametrize(
    ("host", "extra", "expected"),
    [
        ("127.0.0.1", [], {"localhost", "127.0.0.1", "::1"}),
        ("0.0.0.0", ["Inspector.Example"], {"localhost", "127.0.0.1", "::1", "inspector.example"}),
        ("::", [], {"localhost", "127.0.0.1", "::1"}),
        ("192.168.1.10", [], {"localhost", "127.0.0.1", "::1", "192.168.1.10"}),
        ("box.lan", ["a", "b"], {"localhost", "127.0.0.1", "::1", "box.lan", "a", "b"}),
    ],
)
def test_allowed_hosts_are_loopback_the_bound_host_and_the_added_ones(
    host: str, extra: list[str], expected: set[str]
) -> None:
    assert set(allowed_hosts(host, extra)) == expected


def test_allowed_host_is_a_repeatable_option() -> None:
    from convstore.cli.main import build_parser

    args = build_parser().parse_args(
        ["serve", "--allowed-host", "a.example", "--allowed-host", "b.example", "--quiet"]
    )
    assert args.allowed_host == ["a.example", "b.example"]
    assert args.quiet is True
