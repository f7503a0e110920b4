"""The short Python fragments in docs/ run as written against a store that has data for them.

README.md, docs/sync.md and docs/integrations/ hold whole scripts, run by their own tests.
The other pages show fragments: statements with ``await`` at the top level, a ``store`` in
scope. Each runs here as the body of a coroutine given an open store (SQLite, in a fresh
directory that is the working directory, holding the files the fragment names), so a renamed
method, a wrong keyword or a stale import breaks the build, not a reader. The agent-framework
fragments of docs/search.md need those frameworks: they are compiled and their convstore
names imported here; the frameworks' own environments run the integrations' pages.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import textwrap
import zipfile
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore, Message
from tests.imports.exports import chatgpt_rich

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


async def _run(block: str, store: ConversationStore, page: str) -> str:
    """Run ``block`` as a coroutine's body with ``store`` in scope; what it printed."""
    source = "async def _fragment(store):\n" + textwrap.indent(block, "    ")
    namespace: dict[str, Any] = {"timedelta": timedelta}
    exec(compile(source, f"docs/{page}", "exec"), namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await namespace["_fragment"](store)
    return out.getvalue()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ConversationStore]:
    """An open store whose directory is the working directory for the test."""
    with contextlib.chdir(tmp_path):
        async with ConversationStore(
            f"sqlite+aiosqlite:///{tmp_path / 'docs.db'}", blobs=str(tmp_path / "blobs")
        ) as opened:
            yield opened


async def test_search_page_fragment(store: ConversationStore) -> None:
    (block, *_) = _blocks("search.md")
    conv = await store.create_conversation(title="Planning", tenant="acme")
    await store.append(
        conv.id,
        [
            Message.user("The quarterly numbers are due friday."),
            Message.assistant("Noted: quarterly report, due friday."),
            Message.user("Ignore the quarterly draft that is due friday."),
        ],
    )
    printed = (await _run(block, store, "search.md")).splitlines()
    # The phrase and the word, not the message that mentions the draft; best first.
    assert sorted(line.split()[:2] for line in printed) == [[conv.id, "1"], [conv.id, "2"]]


def test_search_page_agent_fragments_name_real_things() -> None:
    for block in _blocks("search.md")[1:]:
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "convstore":
                module = __import__("convstore", fromlist=[a.name for a in node.names])
                for alias in node.names:
                    assert hasattr(module, alias.name), alias.name


async def test_data_in_and_out_page_fragment(store: ConversationStore, tmp_path: Path) -> None:
    (block,) = _blocks("data-in-and-out.md")
    conv = await store.create_conversation(title="Acme", tenant="acme")
    await store.append(conv.id, [Message.user("hello"), Message.assistant("hi")])
    await _run(block, store, "data-in-and-out.md")
    assert (tmp_path / "acme.zip").is_file()
    # Exported, erased, then restored by the fragment's last line.
    restored = await store.load(conv.id, tenant="acme")
    assert [m.text for m in restored.messages] == ["hello", "hi"]


async def test_imports_page_fragment(store: ConversationStore, tmp_path: Path) -> None:
    (block,) = _blocks("imports.md")
    chat, _ = chatgpt_rich()
    with zipfile.ZipFile(tmp_path / "chatgpt-export.zip", "w") as export:
        export.writestr("conversations.json", json.dumps([chat.document()]))
    printed = await _run(block, store, "imports.md")
    assert "conversation" in printed
    (summary,) = await store.list_conversations(tenant="alice")
    assert summary.title == chat.title


async def test_inspector_page_fragment(store: ConversationStore) -> None:
    (block,) = _blocks("inspector.md")
    await _run(block, store, "inspector.md")


async def test_the_mcp_page_embeds_a_server(store: ConversationStore) -> None:
    (block,) = _blocks("mcp.md")
    await _run(block, store, "mcp.md")
