"""Mutated exports (issue 32): only typed refusals, and nothing stored that cannot be loaded.

The mutator is the project's own (`tests.fuzz.mutate`: deleted keys, swapped types, hostile
Unicode, deep nesting, huge strings, spliced nodes...), applied to one rich conversation of
each format (`tests.imports.exports`), derandomised by seed.

- ``test_converting_mutants``: 2,000 mutants per format through the importer's conversion and
  the store's checks (`tree_writes.write_tree` makes exactly these before writing). Each is
  refused with one of the refusals the import reports (its own, a pydantic validation error,
  an `InvalidInputError`, a Unicode error: never anything else), or accepted, and then its
  messages survive the stored JSON form (``dump_messages`` / ``load_messages``) unchanged.
- ``test_importing_mutants``: 2,000 mutants per format (300 on PostgreSQL) in one export (a
  directory with its assets), imported into a store: the report names each refused
  conversation with no ``unexpected`` error, and every conversation written loads, branch by
  branch.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import ValidationError

from convstore import ConversationStore
from convstore.errors import InvalidInputError
from convstore.imports import chatgpt, claude, import_file, openwebui
from convstore.imports._sources import ExportSource
from convstore.imports._tree import ConversationShapeError, in_tree_order
from convstore.message_checks import check_messages
from convstore.model import dump_messages, load_messages
from convstore.store import _arguments
from tests.fuzz import RandomChooser, Seed, mutate

from .exports import OpenWebUI, chatgpt_rich, claude_conversation, claude_message, data_url, png

pytestmark = pytest.mark.slow  # thousands of inputs or subprocesses: make test, not test-fast

_REFUSALS = (
    ConversationShapeError,
    ValidationError,
    InvalidInputError,
    UnicodeError,
    RecursionError,
)


def _chatgpt() -> dict[str, Any]:
    return chatgpt_rich()[0].document()


def _claude() -> dict[str, Any]:
    q = claude_message(
        "human",
        [{"type": "text", "text": "Why does it loop?"}],
        "2025-03-02T10:00:01Z",
        attachments=[{"file_name": "a.md", "extracted_content": "# notes"}],
        files=[{"file_name": "shot.png", "file_uuid": "u-1"}],
    )
    a = claude_message(
        "assistant",
        [
            {"type": "thinking", "thinking": "It never advances.", "summaries": [{"summary": "x"}]},
            {"type": "text", "text": "Running it."},
            {"type": "tool_use", "id": "toolu_1", "name": "repl", "input": {"code": "1+1"}},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"text": "2"}]},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": data_url(png(), "image/png").split(",")[1],
                },
            },
            {"type": "text", "text": "Fixed."},
        ],
        "2025-03-02T10:00:05Z",
        parent=q["uuid"],
    )
    q["parent_message_uuid"] = "00000000-0000-4000-8000-000000000000"
    return claude_conversation([q, a], current_leaf_message_uuid=a["uuid"])


def _openwebui() -> dict[str, Any]:
    chat = OpenWebUI()
    q = chat.add(
        None, "user", "Bake?", files=[{"type": "image", "url": data_url(png(), "image/png")}]
    )
    chat.add(
        q,
        "assistant",
        '<details type="reasoning" done="true">\n<summary>Thought</summary>\n> Hmm\n</details>\n'
        '<details type="tool_calls" id="c1" name="timer" arguments="&quot;{}&quot;" '
        'result="&quot;ok&quot;">\n<summary>Tool</summary>\n</details>\nDone.',
        model="llama3.1:8b",
    )
    return chat.record()


_FORMATS: dict[str, tuple[Callable[[], dict[str, Any]], Any]] = {
    "chatgpt-export": (_chatgpt, chatgpt.convert),
    "claude-export": (_claude, claude.convert),
    "openwebui-export": (_openwebui, openwebui.convert),
}


def _mutants(fmt: str, count: int, salt: int) -> list[tuple[str, Any]]:
    build, _ = _FORMATS[fmt]
    seed = Seed(fmt, fmt, "request", None, build())
    out = []
    for i in range(count):
        mutant = mutate(seed, RandomChooser(salt * 1_000_003 + i))
        out.append((mutant.describe(), mutant.payload))
    return out


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_converting_mutants(fmt: str, tmp_path: Path) -> None:
    (tmp_path / "conversations.json").write_text("[]")
    source = ExportSource(tmp_path / "conversations.json")  # alone: no assets, nothing pending
    _, convert = _FORMATS[fmt]
    outcomes: Counter[str] = Counter()
    for described, payload in _mutants(fmt, 2_000, salt=1):
        try:
            tree = convert(payload, source, Counter())
            messages = [m for node in in_tree_order(tree) for m in node.messages]
            _arguments.new_header(tree.id, tree.title, None, tree.metadata)
            check_messages(messages, max_attachment_size=20 << 20)
        except _REFUSALS as exc:
            outcomes[f"refused: {type(exc).__name__}"] += 1
            continue
        except Exception as exc:  # the reproducer is the mutation log
            raise AssertionError(f"{type(exc).__name__}: {exc}\n{described}") from exc
        document = json.loads(json.dumps(dump_messages(messages)))
        assert load_messages(document) == messages, described
        outcomes["accepted"] += 1
    print(fmt, dict(outcomes))
    assert sum(outcomes.values()) == 2_000
    assert outcomes["accepted"] >= 500  # the mutants reach the writer, not only the refusals


_IMPORTED: Final = 2_000
"""Mutants imported per format and run on SQLite (issue 32, acceptance 2)."""


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
async def test_importing_mutants(fmt: str, store: ConversationStore, tmp_path: Path) -> None:
    _, n = chatgpt_rich()  # its asset ids are fixed: the mutants point at these files
    (tmp_path / f"{n['image']}-porto.png").write_bytes(png(seed=1))
    (tmp_path / "dalle-generations").mkdir()
    (tmp_path / "dalle-generations" / f"{n['dalle_image']}-tram.webp").write_bytes(png(seed=2))
    # Every mutant goes through the whole import and the store (SQLite); PostgreSQL, slower
    # per conversation and shared by the session, takes the first 300 of the same mutants.
    count = 300 if store.backend.dialect_name != "sqlite" else _IMPORTED
    texts = []
    for i, (_, payload) in enumerate(_mutants(fmt, count + count // 10, salt=2)):
        if len(texts) == count:
            break
        # One conversation per mutant (the seed's id would make the rest re-imports of it).
        for key in ("conversation_id", "id", "uuid"):
            if isinstance(payload, dict) and isinstance(payload.get(key), str):
                payload[key] = f"{payload[key]}-{i}"
        try:
            texts.append(json.dumps(payload))
        except RecursionError:
            continue  # deeper than the encoder (and so the decoder) goes: no export holds it
    assert len(texts) == count
    name = "conversations.json" if fmt != "openwebui-export" else "chat-export.json"
    (tmp_path / name).write_text("[" + ",".join(texts) + "]")

    tenant = f"fuzz-{uuid.uuid4()}"  # the session's PostgreSQL database is shared
    report = await import_file(store, tmp_path, fmt, tenant=tenant)

    unexpected = [e for e in report.errors if "unexpected" in e]
    assert not unexpected, unexpected[:3]
    assert (
        report.imported["conversation"] + len(report.errors) + report.present["conversation"] >= 1
    )
    loaded = 0
    for summary in await store.list_conversations(tenant=tenant, limit=10_000):
        for tip in await store.branches(summary.id, tenant=tenant):
            await store.load(summary.id, head_seq=tip.head_seq, tenant=tenant)
        await store.load(summary.id, tenant=tenant)
        loaded += 1
    print(
        fmt, len(texts), "mutants: imported", report.imported, "refused", len(report.errors),
        "loaded", loaded,
    )  # fmt: skip
    assert loaded >= len(texts) * 0.3
