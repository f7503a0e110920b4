"""The ``convstore`` command, end to end, on real files.

Most commands run in-process through `convstore.cli.main` (each a fresh event loop, like a
separate invocation); a few run as real subprocesses to prove the installed entry point.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from convstore.cli import main
from tests.support.corpus import CORPUS_DIR
from tests.support.wire_rules import check_payload

COMMANDS = [
    "demo",
    "migrate",
    "list",
    "show",
    "import",
    "render",
    "gc",
    "fsck",
    "search",
    "export",
    "erase",
    "prune",
]


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Run]:
    """Run ``convstore ARGS`` in-process, in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    for name in ("CONVSTORE_URL", "CONVSTORE_BLOBS"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str, stdin: str | None = None) -> Run:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def convstore(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVSTORE_")}
    return subprocess.run(
        [sys.executable, "-m", "convstore", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_help_on_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    top = convstore("--help", cwd=tmp_path)  # the real entry point
    assert top.returncode == 0
    for command in COMMANDS:
        assert command in top.stdout
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0, command
        helped = capsys.readouterr().out
        assert "--url" in helped and "--blobs" in helped


def test_demo_stores_and_shows_a_conversation(tmp_path: Path) -> None:
    result = convstore("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for status in ("complete", "error", "pending"):
        assert status in out
    assert "2 distinct blobs" in out and "referenced 2x" in out
    assert "ContentOutput with ['text', 'file', 'file']" in out
    for target in ("openai-chat", "openai-responses", "anthropic", "gemini", "mistral", "kimi"):
        assert f"  {target}" in out
    assert (tmp_path / "convstore.db").exists()
    assert any((tmp_path / "convstore-blobs" / "sha256").rglob("*"))
    # It names the database file and the next commands, and explains its per-provider lines.
    assert f"database: {(tmp_path / 'convstore.db').resolve()}" in out
    assert "convstore show demo-trip-to-lisbon" in out
    assert "convstore render demo-trip-to-lisbon --to anthropic" in out
    for word in ("items ", "media ", "synthetic ", "native (inside the", "user_message (a user"):
        assert word in out
    # The commands it prints work as printed.
    shown = convstore("show", "demo-trip-to-lisbon", cwd=tmp_path)
    assert shown.returncode == 0 and "Trip to Lisbon" in shown.stdout
    rendered = convstore("render", "demo-trip-to-lisbon", "--to", "anthropic", cwd=tmp_path)
    assert rendered.returncode == 0 and '"type": "image"' in rendered.stdout


def test_migrate_list_show(tmp_path: Path, cli: Callable[..., Run]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    migrated = cli("migrate", "--url", url)
    assert migrated.returncode == 0, migrated.stderr
    assert cli("list", "--url", url).stdout.strip() == "no conversations"
    assert cli("demo", "--url", url).returncode == 0
    listed = cli("list", "--url", url).stdout.splitlines()
    assert listed[0].startswith("id") and "Trip to Lisbon" in listed[1]
    conversation_id = listed[1].split()[0]
    shown = cli("show", conversation_id, "--url", url)
    assert shown.returncode == 0
    assert "#3 assistant (anthropic/claude-sonnet-4-5)" in shown.stdout
    assert "tool call call_map render_route" in shown.stdout
    assert "attachments:" in shown.stdout
    document = json.loads(
        convstore("show", conversation_id, "--json", "--url", url, cwd=tmp_path).stdout
    )
    assert document["format"] == "convstore.conversation" and len(document["messages"]) == 6
    assert document["title"] == "Trip to Lisbon" and document["metadata"] == {"demo": True}
    assert [c["status"] for c in document["tool_calls"]] == [
        "complete", "error", "complete", "pending",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "source"),
    [
        ("test_mixed_content_ordering-openai_responses--1.json", "openai-responses"),
        ("test_multiple_parallel_tool_calls--1.json", "anthropic"),
    ],
)
def test_import_then_render_for_every_target(
    tmp_path: Path, cli: Callable[..., Run], record: str, source: str
) -> None:
    payload = json.loads((CORPUS_DIR / record).read_text())["request"]
    (tmp_path / "payload.json").write_text(json.dumps(payload))
    imported = cli("import", "payload.json", "--format", source, "--title", "imported")
    assert imported.returncode == 0, imported.stderr
    conversation_id = imported.stdout.strip()
    for target, model in (
        ("openai-chat", "gpt-5"),
        ("openai-responses", "gpt-5"),
        ("anthropic", "claude-sonnet-4-5"),
        ("gemini", "gemini-3-pro-preview"),
        ("gemini", "gemini-2.5-flash"),
        ("mistral", "mistral-medium-latest"),
        ("kimi", "kimi-k2-thinking"),
    ):
        rendered = cli("render", conversation_id, "--to", target, "--model", model)
        assert rendered.returncode == 0, rendered.stderr
        check_payload(target, model, json.loads(rendered.stdout))
    document = json.loads(cli("render", conversation_id, "--to", "mistral", "--diagnostics").stdout)
    assert set(document) == {"payload", "diagnostics"}
    check_payload("mistral", None, document["payload"])
    diagnostics = document["diagnostics"]
    assert diagnostics["target"] == "mistral"
    assert set(diagnostics) >= {"canonical_call_ids", "id_map", "synthetic_results", "media"}


def test_import_from_stdin(tmp_path: Path) -> None:
    payload = {"messages": [{"role": "user", "content": "hello"}]}
    imported = convstore(
        "import", "-", "--format", "openai-chat", cwd=tmp_path, stdin=json.dumps(payload)
    )
    assert imported.returncode == 0, imported.stderr
    shown = convstore("show", imported.stdout.strip(), cwd=tmp_path)
    assert "text: hello" in shown.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "no-such-id"], "ConversationNotFoundError"),
        (["render", "no-such-id", "--to", "anthropic"], "ConversationNotFoundError"),
        (["import", "missing.json", "--format", "gemini"], "InvalidInputError"),
        (["list", "--url", "mysql://nope/db"], "InvalidInputError"),
    ],
)
def test_errors_are_one_line_and_exit_1(
    cli: Callable[..., Run], args: list[str], message: str
) -> None:
    assert cli("migrate").returncode == 0  # reading commands need an existing database
    result = cli(*args)
    assert result.returncode == 1
    assert result.stderr.startswith(f"convstore: {message}:")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_malformed_payload_is_a_typed_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"messages": [{"role": "wizard", "content": 3}]}))
    result = convstore("import", "bad.json", "--format", "anthropic", cwd=tmp_path)  # real process
    assert result.returncode == 1 and "MalformedPayloadError" in result.stderr


def test_environment_selects_the_store(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONVSTORE_")},
        "CONVSTORE_URL": f"sqlite+aiosqlite:///{tmp_path / 'from-env.db'}",
        "CONVSTORE_BLOBS": str(tmp_path / "env-blobs"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "convstore", "demo"], cwd=tmp_path, env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "from-env.db").exists()
    assert any((tmp_path / "env-blobs").rglob("*"))


def test_search_prints_hits_filters_and_pages(tmp_path: Path, cli: Callable[..., Run]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'search.db'}"
    assert cli("demo", "--url", url).returncode == 0

    lines = cli("search", "lisbon", "--url", url).stdout.splitlines()
    assert lines[0].startswith("demo-trip-to-lisbon  title") and "⟦Lisbon⟧" in lines[0]
    assert len(lines) > 1 and all(line.startswith("demo-trip-to-lisbon ") for line in lines)

    document = json.loads(cli("search", "lisbon", "--url", url, "--json").stdout)
    hits = document["hits"]
    assert hits[0]["seq"] is None and hits[0]["conversation_title"] == "Trip to Lisbon"
    assert {h["role"] for h in hits[1:]} <= {"user", "assistant", "tool", "system"}
    assert [h["rank"] for h in hits] == sorted((h["rank"] for h in hits), reverse=True)

    first = cli("search", "lisbon", "--url", url, "--limit", "1").stdout.splitlines()
    assert len(first) == 2 and first[1].startswith("more: add --cursor ")
    cursor = first[1].removeprefix("more: add --cursor ")
    rest = json.loads(cli("search", "lisbon", "--url", url, "--json", "--cursor", cursor).stdout)[
        "hits"
    ]
    assert rest == hits[1:]

    assert cli("search", "lisbon", "--url", url, "--tenant", "nobody").stdout == "no hits\n"
    other = cli("search", "lisbon", "--url", url, "--conversation", "nope").stdout
    assert other == "no hits\n"
    refused = cli("search", "lisbon", "--url", url, "--cursor", "garbage")
    assert refused.returncode == 1 and "InvalidInputError" in refused.stderr
