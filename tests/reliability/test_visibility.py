"""Nothing is lost silently, and round trips are exact.

- A result that answers no call is kept (imported histories have them) but made visible:
  `Conversation.orphan_results` lists it and ``convstore show`` flags it.
- `complete_tool_call` names an unknown call id, and takes a plain JSON value as a `JsonOutput`.
- An empty object in any optional dict field comes back as ``{}``, not ``None``, through the
  store and through `dump_messages` / `load_messages`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    ErrorOutput,
    JsonOutput,
    Message,
    NativeRecord,
    OrphanResult,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from convstore.cli.main import main as cli
from convstore.errors import InvalidMessageError, ToolCallNotFoundError
from convstore.model import Role, dump_messages, load_messages

# --------------------------------------------------------------------------------------------
# Point 11: results that answer no call
# --------------------------------------------------------------------------------------------


async def test_load_lists_results_that_answer_no_call(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(
        conv.id,
        [
            Message.assistant(ToolCallPart(id="c1", name="f")),
            Message.tool_result("c1", 1),
            Message.tool_result("c1-typo", {"lost": True}),
        ],
    )
    loaded = await store.load(conv.id)
    assert loaded.orphan_results == [
        OrphanResult(3, ToolResultPart(call_id="c1-typo", output=JsonOutput(value={"lost": True})))
    ]
    rendered = await store.render(conv.id, "openai-chat")
    assert "c1-typo" not in str(rendered.payload)  # renders still drop it: it is reported here
    # A window that cut the call off does not make its result an orphan.
    assert (await store.load(conv.id, last=2)).orphan_results == [loaded.orphan_results[0]]


async def test_a_complete_history_has_no_orphans(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(
        conv.id, [Message.assistant(ToolCallPart(id="c1", name="f")), Message.tool_result("c1", 1)]
    )
    assert (await store.load(conv.id)).orphan_results == []


def test_show_flags_results_that_answer_no_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'show.db'}"
    payload = tmp_path / "history.json"
    payload.write_text(
        '{"messages": [{"role": "user", "content": "hi"},'
        '{"role": "tool", "tool_call_id": "call_typo", "content": "42"}]}'
    )
    assert cli(["import", str(payload), "--format", "openai-chat", "--url", url]) == 0
    cid = capsys.readouterr().out.strip()
    assert cli(["show", cid, "--url", url]) == 0
    out = capsys.readouterr().out
    assert "tool result call_typo [json ANSWERS NO CALL]" in out
    assert "results answering no call (1; renders drop them):" in out
    assert "#2 tool result call_typo" in out


async def test_completing_an_unknown_call_names_it(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    with pytest.raises(ToolCallNotFoundError, match="tool call 'no-such-call' not found") as info:
        await store.complete_tool_call(conv.id, "no-such-call", {"ok": 1})
    assert info.value.call_id == "no-such-call"
    assert (await store.load(conv.id)).messages == []


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"ok": 1}, JsonOutput(value={"ok": 1})),
        ([1, "two"], JsonOutput(value=[1, "two"])),
        ("plain text", JsonOutput(value="plain text")),
        (None, JsonOutput(value=None)),
        ({"kind": "weather", "temp": 3}, JsonOutput(value={"kind": "weather", "temp": 3})),
        ({"kind": "error", "message": "boom"}, ErrorOutput(message="boom")),
        ({"kind": "json", "value": {"a": 1}}, JsonOutput(value={"a": 1})),
        ({"kind": "content", "parts": [{"kind": "text", "text": "t"}]},
         ContentOutput(parts=[TextPart(text="t")])),
    ],
)  # fmt: skip
async def test_complete_tool_call_takes_plain_json_values(
    store: ConversationStore, given: Any, expected: Any
) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, Message.assistant(ToolCallPart(id="c1", name="f")))
    call = await store.complete_tool_call(conv.id, "c1", given)
    assert call.output == expected
    assert (await store.load(conv.id)).tool_calls[0].output == expected


async def test_a_mapping_tagged_as_a_known_output_is_still_validated(
    store: ConversationStore,
) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, Message.assistant(ToolCallPart(id="c1", name="f")))
    with pytest.raises(InvalidMessageError, match="message"):
        await store.complete_tool_call(conv.id, "c1", {"kind": "error", "msg": "typo"})
    assert (await store.load(conv.id)).tool_calls[0].status == "pending"


# --------------------------------------------------------------------------------------------
# Point 8: empty objects round-trip as empty objects
# --------------------------------------------------------------------------------------------

EMPTY_OBJECTS: dict[str, Callable[[], list[Message]]] = {
    "Message.provider_details": lambda: [
        Message(role=Role.USER, parts=[TextPart(text="x")], provider_details={})
    ],
    "TextPart.provider_details": lambda: [Message.user("x").model_copy(
        update={"parts": [TextPart(text="x", provider_details={})]})],
    "ThinkingPart.provider_details": lambda: [
        Message.assistant(ThinkingPart(text="t", provider_details={}), "x")
    ],
    "ToolCallPart.provider_details and arguments": lambda: [
        Message.assistant(ToolCallPart(id="c1", name="f", arguments={}, provider_details={}))
    ],
    "JsonOutput.value": lambda: [
        Message.assistant(ToolCallPart(id="c1", name="f")),
        Message.tool_result("c1", {}),
    ],
    "ErrorOutput.details": lambda: [
        Message.assistant(ToolCallPart(id="c1", name="f")),
        Message.tool_result("c1", ErrorOutput(message="e", details={})),
    ],
    "TextPart.provider_details in a content result": lambda: [
        Message.assistant(ToolCallPart(id="c1", name="f")),
        Message.tool_result(
            "c1", ContentOutput(parts=[TextPart(text="t", provider_details={})])
        ),
    ],
    "NativeRecord.data": lambda: [Message.user("x", native=NativeRecord(format="f", data={}))],
}  # fmt: skip


@pytest.mark.parametrize("case", list(EMPTY_OBJECTS))
async def test_empty_objects_round_trip_through_the_store(
    store: ConversationStore, case: str
) -> None:
    messages = EMPTY_OBJECTS[case]()
    conv = await store.create_conversation(metadata={})
    await store.append(conv.id, messages)
    loaded = await store.load(conv.id)
    assert loaded.metadata == {}
    assert [_content(m) for m in loaded.messages] == [_content(m) for m in messages]


@pytest.mark.parametrize("case", list(EMPTY_OBJECTS))
def test_empty_objects_round_trip_through_dump_and_load(case: str) -> None:
    messages = EMPTY_OBJECTS[case]()
    assert load_messages(dump_messages(messages)) == messages


def _content(message: Message) -> dict[str, Any]:
    """What a caller handed in: the fields the store assigns left out."""
    return message.model_dump(
        exclude={"seq", "created_at", "parent_seq", "conversation_id"}, exclude_none=False
    )
