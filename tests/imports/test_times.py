"""Imported history keeps the export's times: conversations list as the product ordered them.

A conversation created by an import carries the export's creation time and each message its
own (a node without one, such as ChatGPT's empty root, the time of the message it follows or
the conversation's), so `list_conversations` puts last year's chats below last week's whatever
order the file listed them in. ``updated_at`` is the import's: retention counts from the last
write to this store, so importing old history does not hand it to the next prune.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from convstore import ConversationStore
from convstore.imports import import_file

from .exports import ChatGPT, OpenWebUI, claude_conversation, claude_message

OLD = 1_650_000_000.5  # April 2022
NEW = 1_714_000_000.25  # April 2024


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _chatgpt(created: float, title: str) -> tuple[dict[str, object], list[float]]:
    c = ChatGPT(title)
    c.clock = created
    q = c.text(c.root, "user", f"{title}: where do I start?")
    a = c.text(q, "assistant", "At the beginning.", model="gpt-4o")
    c.current = a
    document = c.document()
    document["create_time"] = created
    times = [created, *(c.mapping[k]["message"]["create_time"] for k in (q, a))]
    return document, times


async def _times(store: ConversationStore, cid: str) -> list[datetime]:
    return [m.created_at for m in (await store.load(cid)).messages if m.created_at]


async def test_chatgpt_times(store: ConversationStore, tmp_path: Path) -> None:
    started = datetime.now(UTC)
    newer, newer_times = _chatgpt(NEW, "Porto")
    older, older_times = _chatgpt(OLD, "Lisbon")
    (tmp_path / "conversations.json").write_text(json.dumps([older, newer]))
    await import_file(store, tmp_path / "conversations.json", "chatgpt-export", tenant="t-gpt")

    listed = await store.list_conversations(tenant="t-gpt")
    assert [c.title for c in listed] == ["Porto", "Lisbon"]  # newest first, not file order
    for summary, times in zip(listed, [newer_times, older_times], strict=True):
        assert summary.created_at == _at(times[0])
        assert summary.updated_at >= started
        assert await _times(store, summary.id) == [_at(t) for t in times]  # root: the chat's
    pruned = await store.prune(older_than=timedelta(days=30), tenant="t-gpt", dry_run=True)
    assert (pruned.examined, pruned.deleted) == (2, 0)


async def test_claude_times(store: ConversationStore, tmp_path: Path) -> None:
    stamps = ["2025-03-02T10:00:05.000000+00:00", "2025-03-02T10:00:09.500000+00:00"]
    messages = [
        claude_message("human", [{"type": "text", "text": "Split this parser?"}], stamps[0]),
        claude_message("assistant", [{"type": "text", "text": "Into two passes."}], stamps[1]),
    ]
    older = claude_conversation(messages)
    newer = claude_conversation([], created_at="2025-06-01T08:00:00+00:00", name="Later")
    (tmp_path / "conversations.json").write_text(json.dumps([older, newer]))
    await import_file(store, tmp_path / "conversations.json", "claude-export", tenant="t-claude")

    listed = await store.list_conversations(tenant="t-claude")
    assert [c.title for c in listed] == ["Later", "Refactoring the parser"]
    assert listed[1].created_at == datetime.fromisoformat(older["created_at"])
    assert await _times(store, listed[1].id) == [datetime.fromisoformat(s) for s in stamps]


async def test_openwebui_times(store: ConversationStore, tmp_path: Path) -> None:
    chat = OpenWebUI()
    q = chat.add(None, "user", "How long to proof?")
    chat.add(q, "assistant", "About four hours.")
    record = chat.record()
    (tmp_path / "chats.json").write_text(json.dumps([record]))
    await import_file(store, tmp_path / "chats.json", "openwebui-export", tenant="t-owui")

    (summary,) = await store.list_conversations(tenant="t-owui")
    assert summary.created_at == _at(1_730_000_000)
    stamps = [m["timestamp"] for m in chat.messages.values()]
    assert await _times(store, summary.id) == [_at(s) for s in stamps]


async def test_a_time_in_the_future_is_the_import_time(
    store: ConversationStore, tmp_path: Path
) -> None:
    document, _ = _chatgpt(4_000_000_000.0, "From 2096")
    (tmp_path / "conversations.json").write_text(json.dumps([document]))
    before = datetime.now(UTC)
    await import_file(store, tmp_path / "conversations.json", "chatgpt-export", tenant="t-skew")
    (summary,) = await store.list_conversations(tenant="t-skew")
    assert before <= summary.created_at <= datetime.now(UTC)
    assert all(before <= t <= datetime.now(UTC) for t in await _times(store, summary.id))


async def test_an_empty_conversation_is_imported_now_and_counted_once(
    store: ConversationStore, tmp_path: Path
) -> None:
    """A conversation with no messages: imported (not "already present") and updated now, so
    the next prune does not take what was just imported; a second import finds it present."""
    started = datetime.now(UTC)
    empty = claude_conversation([], name="Nothing said yet")
    (tmp_path / "conversations.json").write_text(json.dumps([empty]))
    first = await import_file(store, tmp_path / "conversations.json", "claude-export", "t-empty")
    assert (first.imported["conversation"], first.present["conversation"]) == (1, 0)
    (summary,) = await store.list_conversations(tenant="t-empty")
    assert summary.message_count == 0
    assert summary.created_at == datetime.fromisoformat(empty["created_at"])
    assert summary.updated_at >= started
    pruned = await store.prune(older_than=timedelta(days=30), tenant="t-empty")
    assert pruned.deleted == 0

    again = await import_file(store, tmp_path / "conversations.json", "claude-export", "t-empty")
    assert (again.imported["conversation"], again.present["conversation"]) == (0, 1)
    assert (await store.list_conversations(tenant="t-empty"))[0].updated_at == summary.updated_at
