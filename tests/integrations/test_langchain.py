"""`ConvstoreChatMessageHistory`: every method, with tool calls and an image, on both databases.

Messages come back equal (``==``) to those added, in order; the conversation behind the history
has canonical parts (tool calls with their lifecycle, the image as a blob whose bytes are not in
the native record) and renders to a provider.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest

from convstore import (
    AsyncOnlyError,
    ConversationNotFoundError,
    ConversationStore,
    FilePart,
    InvalidInputError,
)
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
)

require("langchain_core")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from convstore.integrations.langchain import ConvstoreChatMessageHistory  # noqa: E402
from tests.support.images import noise_png  # noqa: E402

PNG = noise_png(7, 320, 240)  # about 200 KB: it barely compresses


def _conversation() -> list[BaseMessage]:
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    return [
        SystemMessage(content="You are a weather assistant.", id="sys-1"),
        HumanMessage(
            content=[
                {"type": "text", "text": "What is the weather where this photo was taken?"},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
            id="human-1",
        ),
        AIMessage(
            content="Let me check the forecast for Lisbon.",
            tool_calls=[{"id": "call_1", "name": "get_weather", "args": {"city": "Lisbon"}}],
            id="ai-1",
        ),
        ToolMessage(content="Lisbon: 21 degrees, clear sky.", tool_call_id="call_1", id="tool-1"),
        AIMessage(content="It is 21 degrees and clear in Lisbon.", id="ai-2"),
    ]


async def test_add_get_and_the_conversation_behind(store: ConversationStore) -> None:
    session = f"history-{uuid.uuid4().hex}"
    history = ConvstoreChatMessageHistory(session, store=store)
    assert await history.aget_messages() == []
    messages = _conversation()
    await history.aadd_messages(messages[:2])
    await history.aadd_messages(messages[2:])
    assert await history.aget_messages() == messages

    conversation = await store.load(session)
    assert [m.role for m in conversation.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    image = conversation.messages[1].files[0]
    assert isinstance(image, FilePart)
    assert image.attachment is not None
    assert image.media_type == "image/png"
    assert await store.read_attachment(image) == PNG
    # The record holds the blob's name, not its base64 text.
    assert base64.b64encode(PNG).decode()[:100] not in str(conversation.messages[1].native)
    [call] = conversation.tool_calls
    assert (call.id, call.status, call.arguments) == ("call_1", "complete", {"city": "Lisbon"})

    rendered = await store.render(session, "anthropic", model="claude-sonnet-4-5")
    kinds = [
        block["type"]
        for message in rendered.payload["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert kinds.count("image") == 1
    assert kinds.count("tool_use") == kinds.count("tool_result") == 1


async def test_both_base64_alphabets_round_trip(store: ConversationStore) -> None:
    session = f"history-{uuid.uuid4().hex}"
    history = ConvstoreChatMessageHistory(session, store=store)
    urlsafe = base64.urlsafe_b64encode(PNG[:3000] + b"\xfb\xff").decode()
    standard = base64.b64encode(PNG[:3000] + b"\xfb\xff").decode()
    assert urlsafe != standard
    messages: list[BaseMessage] = [
        HumanMessage(
            content=[{"type": "image", "base64": text, "mime_type": "image/png"}],
            id=f"image-{n}",
        )
        for n, text in enumerate((standard, urlsafe))
    ]
    await history.aadd_messages(messages)
    assert await history.aget_messages() == messages


async def test_same_message_twice_and_an_edit(store: ConversationStore) -> None:
    session = f"history-{uuid.uuid4().hex}"
    history = ConvstoreChatMessageHistory(session, store=store)
    first = HumanMessage(content="hello", id="m-1")
    edited = HumanMessage(content="hello, edited", id="m-1")
    await history.aadd_messages([first])
    await history.aadd_messages([first, edited])
    assert await history.aget_messages() == [first, first, edited]


async def test_clear(store: ConversationStore) -> None:
    session = f"history-{uuid.uuid4().hex}"
    history = ConvstoreChatMessageHistory(session, store=store)
    await history.aclear()  # never written: nothing to do
    await history.aadd_messages(_conversation())
    await history.aclear()
    assert await history.aget_messages() == []
    with pytest.raises(ConversationNotFoundError):
        await store.load(session)
    await history.aadd_messages([HumanMessage(content="again", id="again")])
    assert [m.content for m in await history.aget_messages()] == ["again"]


async def test_tenants_do_not_see_each_other(store: ConversationStore) -> None:
    session = f"history-{uuid.uuid4().hex}"
    mine = ConvstoreChatMessageHistory(session, store=store, tenant="acme")
    theirs = ConvstoreChatMessageHistory(session, store=store, tenant="globex")
    await mine.aadd_messages([HumanMessage(content="private", id="p")])
    assert await theirs.aget_messages() == []
    await theirs.aclear()
    assert len(await mine.aget_messages()) == 1


async def test_a_message_that_is_not_json_is_refused_and_nothing_written(
    store: ConversationStore,
) -> None:
    session = f"history-{uuid.uuid4().hex}"
    history = ConvstoreChatMessageHistory(session, store=store)
    good = HumanMessage(content="fine", id="good")
    bad = AIMessage(content="odd", additional_kwargs={"raw": object()}, id="bad")
    with pytest.raises(InvalidInputError):
        await history.aadd_messages([good, bad])
    assert await history.aget_messages() == []


async def test_blocking_methods_name_the_async_ones(store: ConversationStore) -> None:
    history = ConvstoreChatMessageHistory("blocking", store=store)
    with pytest.raises(AsyncOnlyError, match="aget_messages"):
        _ = history.messages
    with pytest.raises(AsyncOnlyError, match="aadd_messages"):
        history.add_messages([HumanMessage(content="x")])
    with pytest.raises(AsyncOnlyError, match="aadd_messages"):
        history.add_user_message("x")
    with pytest.raises(AsyncOnlyError, match="aclear"):
        history.clear()


async def test_url_mode_owns_its_store(
    store: ConversationStore, db_url: str, tmp_path: Path
) -> None:
    # ``store`` has migrated the database (a server database is never migrated implicitly).
    session = f"history-{uuid.uuid4().hex}"
    blobs = str(tmp_path / "blobs")
    async with ConvstoreChatMessageHistory(session, url=db_url, blobs=blobs) as history:
        await history.aadd_messages(_conversation())
    async with ConvstoreChatMessageHistory(session, url=db_url, blobs=blobs) as history:
        assert await history.aget_messages() == _conversation()
