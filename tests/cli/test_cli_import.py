"""``convstore import FILE``: the format detected (and said), the report in plain English.

- Each export (ChatGPT, Claude, Open WebUI, convstore's own; as a file, a zip or a directory)
  and each provider payload is recognised by its own shape, and the choice is said on stderr
  (stdout stays the report or the new id); ``--format`` still decides when given.
- A directory is one export: two exports side by side are refused, not merged.
- A file that looks like a zip but is not one (truncated, or JSON named ``.zip``) is "not a zip
  file, or a truncated one", with or without ``--format``.
- Reports count in words with plurals, and say nothing of an empty category.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from convstore.cli import main
from tests.imports.exports import ChatGPT, OpenWebUI, claude_conversation, claude_message
from tests.support.corpus import CORPUS_DIR


def _chatgpt_export() -> list[dict[str, Any]]:
    chat = ChatGPT("Lisbon")
    question = chat.text(chat.root, "user", "Where should we eat in Lisbon?")
    chat.text(question, "assistant", "Try the pastel de nata in Belém.", model="gpt-4o")
    return [chat.document()]


def _claude_export() -> list[dict[str, Any]]:
    at = "2025-03-02T10:00:00.000000+00:00"
    first = claude_message("human", [{"type": "text", "text": "Refactor the parser"}], at)
    second = claude_message(
        "assistant", [{"type": "text", "text": "Here it is."}], at, parent=first["uuid"]
    )
    return [claude_conversation([first, second])]


def _openwebui_export() -> list[dict[str, Any]]:
    chat = OpenWebUI()
    question = chat.add(None, "user", "How long does sourdough rise?")
    chat.add(question, "assistant", "About 4 to 12 hours.", model="llama3.1:8b")
    return [chat.record()]


class Cli:
    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.where = [
            "--url",
            f"sqlite+aiosqlite:///{tmp_path / 'import.db'}",
            "--blobs",
            str(tmp_path / "blobs"),
        ]
        self._capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        code = main([*argv, *self.where])
        captured = self._capsys.readouterr()
        return code, captured.out, captured.err


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path, capsys)


def _zip(path: Path, files: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, json.dumps(content))
    return path


EXPORTS = {
    "chatgpt-export": ("a ChatGPT export", _chatgpt_export),
    "claude-export": ("a Claude export", _claude_export),
    "openwebui-export": ("an Open WebUI export", _openwebui_export),
}


@pytest.mark.parametrize("fmt", sorted(EXPORTS))
@pytest.mark.parametrize("shape", ["file", "zip", "folder", "zip-with-folder"])
def test_each_export_is_detected_and_said(tmp_path: Path, cli: Cli, fmt: str, shape: str) -> None:
    words, build = EXPORTS[fmt]
    name = "chat-export.json" if fmt == "openwebui-export" else "conversations.json"
    extra = {"users.json": [{"uuid": "u1"}]} if fmt == "claude-export" else {}
    files = {name: build(), **extra}
    if shape == "file":
        target = tmp_path / name
        target.write_text(json.dumps(files[name]))
    elif shape == "zip":
        target = _zip(tmp_path / "export.zip", files)
    elif shape == "zip-with-folder":
        target = _zip(tmp_path / "export.zip", {f"export-2025/{n}": c for n, c in files.items()})
    else:
        target = tmp_path / "export"
        target.mkdir()
        for n, content in files.items():
            (target / n).write_text(json.dumps(content))
    code, out, err = cli("import", str(target))
    assert code == 0, err
    said = err.splitlines()[0]  # then progress lines
    assert said.startswith(f"convstore: importing {target} as {fmt}: {words} (")
    assert said.endswith("(--format chooses another)")
    messages = 3 if fmt == "chatgpt-export" else 2  # ChatGPT's empty root node is one
    assert out.splitlines() == [f"imported 1 conversation and {messages} messages"]

    code, out, err = cli("import", str(target), "--format", fmt)
    assert code == 0, err
    assert " as " not in err  # forced: nothing to say
    assert out.splitlines() == [
        f"already present (left as they were): 1 conversation and {messages} messages"
    ]


def test_a_convstore_export_is_detected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = ["--url", f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", "--blobs", str(tmp_path / "b")]
    second = ["--url", f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", "--blobs", str(tmp_path / "b")]
    assert main(["demo", *first]) == 0
    assert main(["export", str(tmp_path / "all.zip"), *first]) == 0
    capsys.readouterr()

    assert main(["import", str(tmp_path / "all.zip"), *second]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith(f"convstore: importing {tmp_path / 'all.zip'} as convstore:")
    assert "a convstore export (manifest.json of format convstore.export)" in captured.err
    assert captured.out.startswith("imported 1 conversation, ")
    assert captured.out.rstrip().endswith(" attachments")


def test_a_show_document_is_detected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    where = ["--url", f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", "--blobs", str(tmp_path / "b")]
    assert main(["demo", *where]) == 0
    capsys.readouterr()
    assert main(["show", "demo-trip-to-lisbon", "--json", *where]) == 0
    (tmp_path / "doc.json").write_text(capsys.readouterr().out)
    assert main(["import", str(tmp_path / "doc.json"), *where]) == 0
    captured = capsys.readouterr()
    assert "as convstore: a convstore conversation document ('show --json')" in captured.err
    new_id = captured.out.strip()  # a fresh id: the document's is taken
    assert new_id != "demo-trip-to-lisbon"
    assert main(["show", new_id, *where]) == 0


@pytest.mark.parametrize(
    ("record", "fmt"),
    [
        ("test_anthropic_tool_with_thinking--0.json", "anthropic"),
        ("test_mixed_content_ordering-openai_chat--0.json", "openai-chat"),
        ("test_mixed_content_ordering-google_gemini3--0.json", "gemini"),
        ("test_mixed_content_ordering-openai_responses--0.json", "openai-responses"),
    ],
)
def test_a_payload_is_detected_from_a_file_and_stdin(
    tmp_path: Path,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    record: str,
    fmt: str,
) -> None:
    payload = json.loads((CORPUS_DIR / record).read_text())["request"]
    (tmp_path / "payload.json").write_text(json.dumps(payload))
    code, out, err = cli("import", str(tmp_path / "payload.json"))
    assert code == 0, err
    assert f"as {fmt}: " in err
    assert cli("show", out.strip())[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
    code, out, err = cli("import", "-")
    assert code == 0, err
    assert f"convstore: importing - as {fmt}: " in err


def test_an_ambiguous_payload_asks_for_the_format(tmp_path: Path, cli: Cli) -> None:
    plain = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    code, out, err = cli("import", str(tmp_path / "plain.json"))
    assert (code, out) == (1, "")
    assert err == (
        "convstore: UnsupportedFormatError: the input is a 'messages' request that fits more "
        "than one API: say which with --format openai-chat, anthropic, mistral or kimi\n"
    )
    code, out, _ = cli("import", str(tmp_path / "plain.json"), "--format", "openai-chat")
    assert code == 0 and out.strip()


def test_a_directory_is_one_export_not_a_search(tmp_path: Path, cli: Cli) -> None:
    both = tmp_path / "downloads"
    (both / "chatgpt").mkdir(parents=True)
    (both / "claude").mkdir()
    (both / "chatgpt" / "conversations.json").write_text(json.dumps(_chatgpt_export()))
    (both / "claude" / "conversations.json").write_text(json.dumps(_claude_export()))
    code, out, err = cli("import", str(both))
    assert (code, out) == (1, "")
    assert "holds conversation files in more than one place (chatgpt/, claude/)" in err
    assert "import each of them on its own" in err
    code, out, err = cli("import", str(both / "claude"))
    assert code == 0, err
    assert "as claude-export" in err and out == "imported 1 conversation and 2 messages\n"
    # Nothing deeper than one folder is looked at.
    deep = tmp_path / "deep"
    (deep / "a" / "b").mkdir(parents=True)
    shutil.copy(both / "claude" / "conversations.json", deep / "a" / "b" / "conversations.json")
    code, _, err = cli("import", str(deep))
    assert code == 1 and "holds no export convstore knows" in err


@pytest.mark.parametrize("forced", [[], ["--format", "chatgpt-export"], ["--format", "convstore"]])
def test_a_bad_zip_is_said_to_be_one(tmp_path: Path, cli: Cli, forced: list[str]) -> None:
    whole = _zip(tmp_path / "whole.zip", {"conversations.json": _chatgpt_export()})
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    named = tmp_path / "json-named.zip"
    named.write_text(json.dumps(_chatgpt_export()))
    for bad in (truncated, named):
        code, out, err = cli("import", str(bad), *forced)
        assert (code, out) == (1, ""), bad
        assert err.startswith(f"convstore: MalformedExportError: {bad}: not a zip file, or a ")
        assert "truncated one" in err and err.count("\n") == 1


def test_reports_use_plurals_and_skip_empty_categories(tmp_path: Path, cli: Cli) -> None:
    only = claude_message("human", [{"type": "text", "text": "Just one"}], "2025-03-02T10:00Z")
    (tmp_path / "conversations.json").write_text(json.dumps([claude_conversation([only])]))
    code, out, _ = cli("import", str(tmp_path / "conversations.json"))
    assert (code, out) == (0, "imported 1 conversation and 1 message\n")
    assert "unmapped" not in out and "notes" not in out
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "conversations.json").write_text("[]")
    code, out, _ = cli("import", str(tmp_path / "empty"), "--format", "chatgpt-export")
    assert (code, out) == (0, "nothing to import: the export holds no conversations\n")
