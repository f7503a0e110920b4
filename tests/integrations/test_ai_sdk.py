"""AI SDK UI messages: the SDK's own validator accepts every history we emit; round trips hold."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from convstore import (
    AttachmentRef,
    ContentOutput,
    Conversation,
    ConversationStore,
    ErrorOutput,
    FilePart,
    InvalidInputError,
    JsonOutput,
    MalformedPayloadError,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from convstore.integrations.ai_sdk import from_ui_messages, to_ui_messages
from tests.integrations.conftest import Oracle
from tests.strategies import histories

PNG_HEADER = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
APP = "https://app.example/files/"

# The UIMessage format's keys (ai v7, packages/ai/src/ui/ui-messages.ts): nothing else may appear.
MESSAGE_KEYS = {"id", "role", "parts", "metadata"}
PART_KEYS = {
    "text": {"type", "text", "state", "providerMetadata", "citations"},
    "reasoning": {"type", "id", "text", "state", "providerMetadata"},
    "file": {"type", "mediaType", "filename", "url", "providerReference", "providerMetadata"},
    "step-start": {"type"},
    "tool": {
        "type", "toolCallId", "title", "toolMetadata", "providerExecuted", "state", "input",
        "output", "errorText", "rawInput", "callProviderMetadata", "resultProviderMetadata",
        "preliminary", "approval",
    },
}  # fmt: skip


def png(tag: bytes) -> bytes:
    """A PNG-signed payload that is unmistakable in a database file."""
    return PNG_HEADER + tag * 64 + os.urandom(256)


def file_url(part: FilePart) -> str:
    assert part.attachment is not None
    return APP + part.attachment.sha256


def resolver(conversation: Conversation) -> Any:
    by_url = {file_url(f): f for m in conversation.messages for f in m.files}
    return by_url.get


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[ConversationStore]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'ui.db'}"
    async with ConversationStore(url, blobs=str(tmp_path / "blobs")) as store:
        yield store


async def rich_conversation(store: ConversationStore) -> Conversation:
    """Every part kind and every lifecycle state."""
    conv = await store.create_conversation()
    await store.append(
        conv.id,
        [
            Message.system("Be brief."),
            Message.user(
                "What is on screen?", FilePart.from_bytes(png(b"u"), filename="s.png"), id="ui-7"
            ),
            Message.assistant(
                ThinkingPart(text="I should look.", signature="sig-1", provider="anthropic",
                             model="claude-sonnet-4-5"),
                "Taking a screenshot.",
                ToolCallPart(id="c1", name="screenshot", arguments={}),
                provider="anthropic",
                model="claude-sonnet-4-5",
            ),
        ],
    )  # fmt: skip
    shot = ContentOutput(parts=[TextPart(text="the screen"), FilePart.from_bytes(png(b"t"))])
    await store.complete_tool_call(conv.id, "c1", shot)
    await store.append(
        conv.id,
        [
            Message.assistant(
                "Weather too.",
                ToolCallPart(id="c2", name="weather", arguments={"city": "Oslo"}),
                ToolCallPart(id="c3", name="broken", arguments={}),
            ),
            Message.tool_result("c2", {"temp": 3}),
            Message.tool_result("c3", ErrorOutput(message="boom")),
            Message.assistant("Done.", ToolCallPart(id="c4", name="slow", arguments={})),
            Message.user("thanks"),  # c4 is interrupted
            Message.assistant(ToolCallPart(id="c5", name="later", arguments={})),
        ],
    )
    await store.cancel_tool_calls(conv.id)  # c5
    await store.append(
        conv.id,
        [
            Message.user("again"),
            Message.assistant(ToolCallPart(id="c6", name="lookup", arguments={"q": 1})),
        ],
    )
    return await store.load(conv.id)


def check_format(ui: list[dict[str, Any]]) -> None:
    """No key outside the format, no null for an absent field, no base64 anywhere."""
    assert "data:" not in json.dumps(ui)
    for message in ui:
        assert set(message) <= MESSAGE_KEYS
        for part in message["parts"]:
            kind = "tool" if part["type"].startswith("tool-") else part["type"]
            assert set(part) <= PART_KEYS[kind], part
            for key, value in part.items():
                if key != "output":
                    assert value is not None, (key, part)


async def test_every_emitted_history_passes_the_sdk_validator(
    sqlite_store: ConversationStore, ai_sdk_oracle: Oracle
) -> None:
    conversation = await rich_conversation(sqlite_store)
    ui = to_ui_messages(conversation, file_url=file_url)
    check_format(ui)
    # Every prefix of the history is a history a client may hold.
    histories = [ui[:n] for n in range(1, len(ui) + 1)]
    results = ai_sdk_oracle(histories)
    for history, result in zip(histories, results, strict=True):
        assert result.get("valid"), (result, history)
        assert "model" in result, result
    model = results[-1]["model"]
    assert [m["role"] for m in model][:3] == ["system", "user", "assistant"]
    image = model[1]["content"][1]
    assert image["type"] == "file"
    assert image["data"]["url"].startswith(APP)


async def test_tool_states_steps_kinds_and_ids(store: ConversationStore) -> None:
    conversation = await rich_conversation(store)
    ui = to_ui_messages(conversation, file_url=file_url)
    assert [m["role"] for m in ui] == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    bubble = ui[2]
    types = [p["type"] for p in bubble["parts"]]
    assert types == [
        "reasoning", "text", "tool-screenshot", "step-start", "text", "tool-weather",
        "tool-broken", "step-start", "text", "tool-slow",
    ]  # fmt: skip
    tools = {p["toolCallId"]: p for m in ui for p in m["parts"] if p["type"].startswith("tool-")}
    assert {k: v["state"] for k, v in tools.items()} == {
        "c1": "output-available",
        "c2": "output-available",
        "c3": "output-error",
        "c4": "output-error",
        "c5": "output-error",
        "c6": "input-available",
    }
    assert tools["c2"]["output"] == {"temp": 3}
    assert tools["c3"]["errorText"] == "boom"
    assert "interrupted" in tools["c4"]["errorText"]
    assert "cancelled" in tools["c5"]["errorText"]
    assert bubble["metadata"] == {"aiPython": {"toolResultKinds": {"c1": "content"}}}
    shot = tools["c1"]["output"]
    assert shot[0] == {"type": "text", "text": "the screen"}
    assert shot[1]["type"] == "file"
    assert shot[1]["url"].startswith(APP)
    assert bubble["parts"][0]["providerMetadata"]["anthropic"] == {"signature": "sig-1"}
    # Ids: the message's own id, else "<conversation>-<seq>".
    first = conversation.messages[0]
    assert first.id is None
    assert ui[0]["id"] == f"{conversation.id}-{first.seq}"
    assert ui[1]["id"] == "ui-7"
    assert len({m["id"] for m in ui}) == len(ui)


async def test_round_trip_through_ui_messages(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(
        conv.id,
        [
            Message.system("Be brief."),
            Message.user("look", FilePart.from_bytes(png(b"r"))),
            Message.assistant(
                ThinkingPart(text="hm", reasoning_id="rs_1", encrypted_content="enc",
                             summary=["hm"], provider="openai", model="gpt-5"),
                ToolCallPart(id="c1", name="screenshot", arguments={"full": True}),
            ),
            Message.tool_result(
                "c1", ContentOutput(parts=[TextPart(text="img"), FilePart.from_bytes(png(b"s"))])
            ),
            Message.assistant(
                "Two more.",
                ToolCallPart(id="c2", name="weather", arguments={"city": "Oslo"}),
                ToolCallPart(id="c3", name="broken", arguments={}),
            ),
            Message.tool_result("c2", [1, "two", None]),
            Message.tool_result("c3", ErrorOutput(message="boom")),
            Message.assistant("Here you are."),
            Message.user("more"),
            Message.assistant(ToolCallPart(id="c4", name="lookup", arguments={})),
        ],
    )  # fmt: skip
    original = await store.load(conv.id)
    ui = to_ui_messages(original, file_url=file_url)
    messages = from_ui_messages(ui, resolve_url=resolver(original))

    def shape(items: list[Message]) -> list[tuple[str, list[dict[str, Any]]]]:
        # Tool results are grouped per step inbound, and carry their tool's name.
        out: list[tuple[str, list[dict[str, Any]]]] = []
        for m in items:
            parts = [p.model_dump(exclude={"name"}) for p in m.parts]
            if m.role == "tool" and out and out[-1][0] == "tool":
                out[-1][1].extend(parts)
            else:
                out.append((m.role.value, parts))
        return out

    assert shape(messages) == shape(original.messages)
    # Stored again, the copy has the same lifecycles and gives the same UI messages.
    copy = await store.create_conversation()
    await store.append(copy.id, messages)
    reloaded = await store.load(copy.id)
    assert [(c.id, c.status, c.result_kind) for c in reloaded.tool_calls] == [
        (c.id, c.status, c.result_kind) for c in original.tool_calls
    ]
    # Ids included: the copy's messages carry the UI ids as their Message.id.
    assert to_ui_messages(reloaded, file_url=file_url) == ui


async def test_ids_are_kept_both_ways() -> None:
    ui = [
        {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {
            "id": "a-1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "tool-t", "toolCallId": "c", "state": "output-available",
                 "input": {}, "output": "ok"},
                {"type": "step-start"},
                {"type": "text", "text": "done"},
            ],
        },
    ]  # fmt: skip
    messages = from_ui_messages(ui)
    assert [(m.id, m.role) for m in messages] == [
        ("u-1", "user"),
        ("a-1", "assistant"),
        ("a-1-1", "tool"),
        ("a-1-2", "assistant"),
    ]
    back = to_ui_messages(messages)
    assert [m["id"] for m in back] == ["u-1", "a-1"]
    assert back[1]["parts"] == ui[1]["parts"][1:]  # the step-start only *between* steps


async def test_data_urls_become_blobs_never_database_rows(tmp_path: Path) -> None:
    image = png(b"D")
    encoded = base64.b64encode(image).decode()
    data_url = f"data:image/png;base64,{encoded}"
    ui = [
        {
            "id": "u-1",
            "role": "user",
            "parts": [
                {"type": "text", "text": "see"},
                {"type": "file", "mediaType": "image/png", "url": data_url},
            ],
        },
        {
            "id": "a-1",
            "role": "assistant",
            "metadata": {"aiPython": {"toolResultKinds": {"c1": "content"}}},
            "parts": [
                {"type": "tool-shot", "toolCallId": "c1", "state": "output-available", "input": {},
                 "output": [{"type": "file", "mediaType": "image/png",
                             "url": data_url}]},
            ],
        },
    ]  # fmt: skip
    messages = from_ui_messages(ui)
    assert messages[0].parts[1].data == image  # type: ignore[union-attr]
    db = tmp_path / "ui.db"
    async with ConversationStore(f"sqlite+aiosqlite:///{db}", blobs=str(tmp_path / "b")) as store:
        conv = await store.create_conversation()
        await store.append(conv.id, messages)
        loaded = await store.load(conv.id)
        files = [f for m in loaded.messages for f in m.files]
        assert len(files) == 2
        for part in files:
            assert part.attachment is not None
            assert await store.read_attachment(part) == image
        out = to_ui_messages(loaded, file_url=file_url)
        assert "data:" not in json.dumps(out)
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("ui.db"))
    assert image[40:200] not in stored
    assert encoded[100:200].encode() not in stored


def test_ai_python_ui_messages_load_with_their_result_kinds() -> None:
    image = png(b"P")
    data_url = "data:image/png;base64," + base64.b64encode(image).decode()
    # As vercel-labs/ai-python's to_ui_messages writes a history (its adapter metadata included).
    ui = [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "screenshot please"}]},
        {
            "id": "m2",
            "role": "assistant",
            "metadata": {
                "aiPython": {
                    "sourceMessages": [
                        {"id": "m2", "role": "assistant", "turnId": None, "partIds": ["p1"]},
                        {"id": "m3", "role": "tool", "turnId": None, "partIds": ["p2", "p3"]},
                    ],
                    "toolResultKinds": {"call_1": "content"},
                }
            },
            "parts": [
                {"type": "tool-screenshot", "toolCallId": "call_1", "state": "output-available",
                 "input": {}, "output": [{"type": "text", "text": "here"},
                                         {"type": "file", "mediaType": "image/png",
                                          "url": data_url}]},
                {"type": "tool-search", "toolCallId": "call_2", "state": "output-available",
                 "input": {"q": "x"}, "output": [{"type": "text", "text": "plain json list"}]},
                {"type": "tool-fail", "toolCallId": "call_3", "state": "output-error",
                 "input": {}, "errorText": "nope"},
                {"type": "tool-ask", "toolCallId": "call_4", "state": "output-denied",
                 "input": {}, "approval": {"id": "ap", "approved": False, "reason": "no"}},
            ],
        },
    ]  # fmt: skip
    messages = from_ui_messages(ui)
    results = {r.call_id: r.output for m in messages for r in m.tool_results}
    assert isinstance(results["call_1"], ContentOutput)
    assert results["call_1"].parts[0] == TextPart(text="here")
    assert isinstance(results["call_1"].parts[1], FilePart)
    assert results["call_1"].parts[1].data == image
    assert results["call_2"] == JsonOutput(value=[{"type": "text", "text": "plain json list"}])
    assert results["call_3"] == ErrorOutput(message="nope")
    assert results["call_4"] == ErrorOutput(message="no")


def test_the_sdk_tool_result_output_shape_is_read_as_content() -> None:
    image = png(b"M")
    ui = [
        {
            "id": "a",
            "role": "assistant",
            "metadata": {"aiPython": {"toolResultKinds": {"c": "content"}}},
            "parts": [
                {"type": "dynamic-tool", "toolName": "shot", "toolCallId": "c",
                 "state": "output-available", "input": {},
                 "output": {"type": "content", "value": [
                     {"type": "text", "text": "t"},
                     {"type": "media", "mediaType": "image/png",
                      "data": base64.b64encode(image).decode()}]}},
            ],
        }
    ]  # fmt: skip
    (call_message, result_message) = from_ui_messages(ui)
    assert call_message.tool_calls[0].name == "shot"
    output = result_message.tool_results[0].output
    assert isinstance(output, ContentOutput)
    assert output.files[0].data == image


def test_resolve_url_maps_application_urls_back_to_attachments() -> None:
    stored = FilePart(attachment=AttachmentRef(sha256="a" * 64, size=10), media_type="image/png")
    ui = [
        {"id": "u", "role": "user", "parts": [
            {"type": "file", "mediaType": "image/png", "url": APP + "a" * 64},
            {"type": "file", "mediaType": "application/pdf", "url": "https://elsewhere.example/x.pdf",
             "filename": "x.pdf"},
        ]},
    ]  # fmt: skip
    (message,) = from_ui_messages(ui, resolve_url={APP + "a" * 64: stored}.get)
    assert message.parts[0] == stored
    other = message.parts[1]
    assert isinstance(other, FilePart)
    assert other.uri == "https://elsewhere.example/x.pdf"
    assert other.filename == "x.pdf"


def _user(*parts: Any) -> list[Any]:
    return [{"id": "x", "role": "user", "parts": list(parts)}]


def _assistant(*parts: Any, kinds: Any = None) -> list[Any]:
    message = {"id": "x", "role": "assistant", "parts": list(parts)}
    if kinds is not None:
        message["metadata"] = {"aiPython": {"toolResultKinds": kinds}}
    return [message]


@pytest.mark.parametrize(
    "ui",
    [
        {"id": "x"},
        [{"role": "user", "parts": []}],
        [{"id": "x", "role": "robot", "parts": []}],
        _user({"type": "text"}),
        _user({"type": "file", "url": "data:image/png;base64,@@"}),
        _assistant({"type": "tool-t", "state": "input-available"}),
        _assistant(
            {"type": "tool-t", "toolCallId": "c", "state": "output-available", "input": {},
             "output": [{"type": "data-x", "data": 1}]},
            kinds={"c": "content"},
        ),
    ],
)  # fmt: skip
def test_malformed_ui_messages_raise_with_a_path(ui: Any) -> None:
    with pytest.raises(MalformedPayloadError, match=r"ai-sdk-ui payload: \$"):
        from_ui_messages(ui)


def test_files_need_an_absolute_non_data_file_url() -> None:
    message = Message.user("x", FilePart.from_bytes(png(b"F")), id="u")
    with pytest.raises(InvalidInputError, match="file_url"):
        to_ui_messages([message])
    with pytest.raises(InvalidInputError, match="absolute"):
        to_ui_messages([message], file_url=lambda part: "/files/1")
    with pytest.raises(InvalidInputError, match="absolute"):
        to_ui_messages([message], file_url=lambda part: "data:image/png;base64,AAAA")
    external = Message.user(FilePart.from_uri("https://cdn.example/a.png"), id="v")
    assert to_ui_messages([external])[0]["parts"][0]["url"] == "https://cdn.example/a.png"


def test_unstored_messages_without_ids_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="UI id"):
        to_ui_messages([Message.user("no id")])


def test_reasoning_metadata_in_the_providers_own_keys() -> None:
    thinking = [
        ThinkingPart(text="a", signature="s", provider="anthropic"),
        ThinkingPart(redacted_data="r", provider="anthropic"),
        ThinkingPart(text="g", signature="gs", provider="gemini", rides_on="text"),
        ThinkingPart(text="o", reasoning_id="rs_1", encrypted_content="e", provider="openai"),
    ]
    message = Message.assistant(*thinking, id="a", model="m")
    (ui,) = to_ui_messages([message])
    metadata = [p["providerMetadata"] for p in ui["parts"]]
    assert metadata[0]["anthropic"] == {"signature": "s"}
    assert metadata[1]["anthropic"] == {"redactedData": "r"}
    assert metadata[2]["google"] == {"thoughtSignature": "gs"}
    assert metadata[3]["openai"] == {"itemId": "rs_1", "reasoningEncryptedContent": "e"}
    (back,) = from_ui_messages([ui])
    assert back.parts == [p.model_copy(update={"model": "m"}) for p in thinking]


async def test_a_resent_history_appends_only_what_is_new(store: ConversationStore) -> None:
    # As docs/integrations/ai-sdk.md "Storing what useChat sends" does it.
    async def save_turn(chat_id: str, ui: list[dict[str, Any]]) -> None:
        await store.get_or_create_conversation(chat_id)
        stored = {m.id for m in (await store.load(chat_id)).messages}
        await store.append(chat_id, [m for m in from_ui_messages(ui) if m.id not in stored])

    call = {"type": "tool-ask", "toolCallId": "c1", "state": "input-available", "input": {}}
    first = [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"id": "a1", "role": "assistant", "parts": [call]},
    ]
    answered = {**call, "state": "output-available", "output": "yes"}
    second = [
        first[0],
        {"id": "a1", "role": "assistant", "parts": [answered, {"type": "step-start"},
                                                    {"type": "text", "text": "ok"}]},
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "bye"}]},
    ]  # fmt: skip
    await save_turn("chat", first)
    assert (await store.load("chat")).tool_calls[0].status == "pending"
    await save_turn("chat", second)
    conversation = await store.load("chat")
    assert [m.id for m in conversation.messages] == ["u1", "a1", "a1-1", "a1-2", "u2"]
    assert conversation.tool_calls[0].status == "complete"
    assert to_ui_messages(conversation) == second


@settings(max_examples=60, deadline=None)
@given(history=histories())
def test_messy_histories_validate_and_read_back_to_the_same_ui(
    history: list[Message], ai_sdk_oracle: Oracle
) -> None:
    messages = [m.model_copy(update={"id": f"m{n}"}) for n, m in enumerate(history)]

    def url(part: FilePart) -> str:
        return APP + str(part.sha256)

    ui = to_ui_messages(messages, file_url=url)
    check_format(ui)
    (result,) = ai_sdk_oracle([ui])
    assert result.get("valid") and "model" in result, (result, ui)
    assert to_ui_messages(from_ui_messages(ui), file_url=url) == ui
