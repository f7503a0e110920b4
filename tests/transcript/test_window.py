"""Windows (``last=N``): a render of the newest messages that every target accepts.

Over the demo conversation and every corpus conversation, for every N and every target: the
payload passes the wire rules and the provider SDK's types, it is never empty or system-only,
the window keeps at least N messages and starts at a turn's user message, the system prompt is
kept, and no stored result whose call is in the window is lost (it is never replaced by a
synthetic one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import (
    ConversationStore,
    InvalidInputError,
    JsonOutput,
    Message,
    Role,
    ToolCallPart,
    ToolResultPart,
    parse,
    render,
)
from convstore.cli.demo import run_demo
from convstore.rendering import Rendered
from convstore.transcript.window import apply_window
from tests.providers.conversations import TARGET_MODELS
from tests.strategies import histories
from tests.support.corpus import CORPUS_DIR
from tests.support.wire_rules import check_payload

RECORDS = sorted(CORPUS_DIR.glob("*.json"))


def _history() -> list[Message]:
    messages = [
        Message.system("Be brief."),
        Message.user("Weather?"),
        Message.assistant(
            ToolCallPart(id="c1", name="weather", arguments={}),
            ToolCallPart(id="c2", name="time", arguments={}),
        ),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResultPart(call_id="c1", output=JsonOutput(value="sunny")),
                ToolResultPart(call_id="c2", output=JsonOutput(value="noon")),
            ],
        ),
        Message.assistant("Sunny at noon."),
        Message.user("Thanks"),
    ]
    return [m.model_copy(update={"seq": i}) for i, m in enumerate(messages, 1)]


def test_a_window_cut_after_a_call_widens_back_to_the_user_message() -> None:
    window = apply_window(_history()[:4], 1, summary=False)
    assert [m.seq for m in window.messages] == [1, 2, 3, 4]
    assert window.note.kept_seqs == [2, 3, 4] and window.note.cut_seqs == []
    assert window.note.widened == 2 and window.note.dropped_results == []


def test_window_keeps_a_call_with_its_results() -> None:
    window = apply_window(_history(), 4, summary=False)
    assert [m.seq for m in window.messages] == [1, 2, 3, 4, 5, 6]
    assert window.note.widened == 1 and window.note.dropped_results == []


def test_a_window_that_starts_at_a_user_message_is_not_widened() -> None:
    window = apply_window(_history(), 1, summary=False)
    assert [m.seq for m in window.messages] == [1, 6]
    assert window.note.cut_seqs == [2, 3, 4, 5] and window.note.widened == 0
    assert window.note.system_kept == 1


def test_window_larger_than_the_history_cuts_nothing() -> None:
    window = apply_window(_history(), 50, summary=False)
    assert window.messages == _history()
    assert window.note.cut_seqs == [] and window.note.system_kept == 0


def _late_result_history() -> list[Message]:
    """A stored history whose result came after the next user message (an app's own order)."""
    messages = [
        Message.user("Weather?"),
        Message.assistant(ToolCallPart(id="c1", name="weather", arguments={})),
        Message.user("Still there?"),
        Message.tool_result("c1", JsonOutput(value="sunny")),
        Message.assistant("Sunny."),
    ]
    return [m.model_copy(update={"seq": i}) for i, m in enumerate(messages, 1)]


def test_render_with_last_reports_the_widening_and_a_result_whose_call_it_cut() -> None:
    rendered = render(_late_result_history(), "anthropic", last=2)
    note = rendered.diagnostics.window
    assert note is not None and note.kept_seqs == [3, 4, 5] and note.widened == 1
    assert note.dropped_results == ["c1"]
    assert rendered.diagnostics.synthetic_results == []
    assert "Weather?" not in json.dumps(rendered.payload)


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        render(_history(), "anthropic", last=-1)


def test_last_zero_keeps_the_newest_turn() -> None:
    for target, model in TARGET_MODELS:
        rendered = render(_history(), target, model=model, last=0)
        check_payload(target, model, rendered.payload)
        assert "Be brief." in json.dumps(rendered.payload)
        assert "Thanks" in json.dumps(rendered.payload)
        assert rendered.diagnostics.window is not None
        assert rendered.diagnostics.window.widened == 1


def _system_sent(target: str, payload: dict[str, Any]) -> list[str]:
    match target:
        case "anthropic":
            system = payload.get("system")
            return [system] if isinstance(system, str) else [b["text"] for b in system or []]
        case "openai-responses":
            return [payload["instructions"]] if "instructions" in payload else []
        case "gemini":
            return [p["text"] for p in payload.get("systemInstruction", {}).get("parts", [])]
        case _:
            return [m["content"] for m in payload["messages"] if m["role"] == "system"]


def _conversation_sent(target: str, payload: dict[str, Any]) -> list[Any]:
    """The payload's non-system entries (a request needs at least one)."""
    match target:
        case "gemini":
            return list(payload["contents"])
        case "openai-responses":
            return list(payload["input"])
        case _:
            return [m for m in payload["messages"] if m.get("role") != "system"]


def _check_window(
    target: str, model: str, rendered: Rendered, messages: list[Message], last: int
) -> None:
    check_payload(target, model, rendered.payload)
    conversation = [m for m in messages if m.role is not Role.SYSTEM]
    note = rendered.diagnostics.window
    assert note is not None and note.last == last
    if conversation:
        assert _conversation_sent(target, rendered.payload), f"{target}: empty with last={last}"
        # At least N messages, and the window starts at a turn's user message (or the start).
        assert len(note.kept_seqs) >= min(max(last, 1), len(conversation))
        first = next(m for m in conversation if m.seq == note.kept_seqs[0])
        assert first.role is Role.USER or first is conversation[0], f"{target}: mid-turn cut"
    system = [m.text for m in messages if m.role is Role.SYSTEM]
    sent = "\n\n".join(_system_sent(target, rendered.payload))
    for text in system:
        if text.strip():
            assert text in sent, f"{target}: system prompt lost with last={last}"
    # Every call in the window whose result is stored gets that result, not a synthetic one.
    answered = {r.call_id for m in messages for r in m.tool_results}
    emitted = set(rendered.diagnostics.canonical_call_ids)
    synthetic = {s.call_id for s in rendered.diagnostics.synthetic_results}
    assert not (emitted & answered & synthetic), f"{target}: a result in the window was lost"


async def test_store_render_every_window_of_the_demo(
    store: ConversationStore, capsys: pytest.CaptureFixture[str]
) -> None:
    await run_demo(store)
    capsys.readouterr()
    # The newest conversation is the demo's (a PostgreSQL store is shared by the session).
    summary = next(s for s in await store.list_conversations() if s.title == "Trip to Lisbon")
    conversation = await store.load(summary.id)
    count = sum(1 for m in conversation.messages if m.role is not Role.SYSTEM)
    for last in range(count + 2):
        for target, model in TARGET_MODELS:
            rendered = await store.render(summary.id, target, model=model, last=last)
            _check_window(target, model, rendered, conversation.messages, last)


async def test_store_render_window_keeps_the_compaction_summary(store: ConversationStore) -> None:
    conversation = await store.create_conversation()
    await store.append(conversation.id, [m.model_copy(update={"seq": None}) for m in _history()])
    await store.compact(conversation.id, through_seq=2, summary="The user asked for weather.")
    rendered = await store.render(conversation.id, "openai-chat", last=2)
    text = json.dumps(rendered.payload)
    assert "The user asked for weather." in text
    assert rendered.diagnostics.window is not None and rendered.diagnostics.window.summary
    with pytest.raises(InvalidInputError):
        await store.render(conversation.id, "openai-chat", last=-1)


def _record(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
async def test_store_render_every_window_of_a_corpus_conversation(
    path: Path, store: ConversationStore
) -> None:
    record = _record(path)
    source = "openai-chat" if record["api"] == "mistral" else record["api"]
    messages = parse(record["request"], source, model=record["model"])
    conversation = await store.create_conversation(title=path.stem)
    await store.append(conversation.id, messages, on_conflict="keep-first")
    stored = (await store.load(conversation.id)).messages
    count = sum(1 for m in stored if m.role is not Role.SYSTEM)
    for last in range(count + 1):
        for target, model in TARGET_MODELS:
            rendered = await store.render(conversation.id, target, model=model, last=last)
            _check_window(target, model, rendered, stored, last)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories(max_turns=5), data=st.data())
def test_any_window_of_any_history_is_valid(history: list[Message], data: st.DataObject) -> None:
    """Messy histories (orphans, duplicates, provider switches), any N, every target."""
    stored = [m.model_copy(update={"seq": i}) for i, m in enumerate(history, 1)]
    last = data.draw(st.integers(0, len(stored) + 1))
    system = [m.text for m in stored if m.role is Role.SYSTEM and m.text.strip()]
    for target, model in TARGET_MODELS:
        rendered = render(stored, target, model=model, last=last)
        _check_window(target, model, rendered, stored, last)
        note = rendered.diagnostics.window
        assert note is not None
        kept = set(note.kept_seqs)
        sent = "\n\n".join(_system_sent(target, rendered.payload))
        assert all(text in sent for text in system)
        # A stored result in the window for a call in the window is sent, never synthesised.
        calls = {p.id for m in stored if m.seq in kept for p in m.tool_calls}
        answered = {r.call_id for m in stored if m.seq in kept for r in m.tool_results}
        synthetic = {s.call_id for s in rendered.diagnostics.synthetic_results}
        assert not (calls & answered & synthetic)
        # A result whose call the window cut never reaches the payload.
        cut_calls = {p.id for m in stored if m.seq not in kept for p in m.tool_calls}
        assert set(note.dropped_results) <= cut_calls
