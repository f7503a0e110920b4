"""pydantic-ai runs with every field, real-sized images in both base64 alphabets.

A run as pydantic-ai produces it, and the same run after a `ModelMessagesTypeAdapter` JSON round
trip (as an app that sends history to a client and back has it), saved through
`ConvstoreConversationStore`: every image is a blob and a canonical file (no image bytes in the
database files, its WAL or PostgreSQL's rows, in any encoding), a tool return holding an image is
a `ContentOutput`, the thinking keeps its signature and is replayed to its own model, the agent's
instructions are the system prompt, and a reserialized conversation continues on its branch.
"""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime

import pytest

from convstore import ContentOutput, ConversationStore, JsonOutput, ThinkingPart
from convstore.model import FilePart
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
    sqlite_file_bytes,
)
from tests.support.images import noise_png
from tests.support.wire_rules import check_payload, media_in_payload

require("pydantic_ai")

from pydantic_ai import BinaryContent  # noqa: E402
from pydantic_ai.conversation import Conversation  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402  # noqa: E402
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import (  # noqa: E402
    ThinkingPart as PaiThinking,
)
from pydantic_ai.usage import RequestUsage  # noqa: E402

from convstore.integrations.pydantic_ai import ConvstoreConversationStore  # noqa: E402

# The run holds a `RetryPromptPart`, deprecated in pydantic-ai 2.x but still in stored histories.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`RetryPromptPart` is deprecated:pydantic_ai._warnings.PydanticAIDeprecationWarning"
)

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
MODEL = "claude-sonnet-4-5"
SIGNATURE = "EqQBCkYIBxgCKkD" + "a1b2" * 40
INSTRUCTIONS = "Answer in French, in one sentence."


PROMPT_IMAGE = noise_png(1, 24, 24)  # ~1.7 KB each
TOOL_IMAGE = noise_png(2, 24, 24)
IMAGES = (PROMPT_IMAGE, TOOL_IMAGE)


def test_the_images_are_realistic_and_use_both_alphabets() -> None:
    for image in IMAGES:
        assert len(image) >= 1024
        urlsafe = base64.urlsafe_b64encode(image).decode()
        standard = base64.b64encode(image).decode()
        assert set("-_") & set(urlsafe) and set("+/") & set(standard)
    dumped = ModelMessagesTypeAdapter.dump_json(run())
    assert base64.urlsafe_b64encode(PROMPT_IMAGE) in dumped  # pydantic's JSON bytes: URL-safe


def run() -> list[ModelMessage]:
    """Every field a run can have: the messages of one pydantic-ai run, as it made them."""
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You describe images.", timestamp=T0),
                UserPromptPart(
                    [
                        "What is in this picture?",
                        BinaryContent(
                            PROMPT_IMAGE, media_type="image/png", vendor_metadata={"detail": "high"}
                        ),
                    ],
                    timestamp=T0,
                ),
            ],
            instructions=INSTRUCTIONS,
            timestamp=T0,
        ),
        ModelResponse(
            parts=[
                PaiThinking(
                    "The user wants a description; zoom first.",
                    signature=SIGNATURE,
                    provider_name="anthropic",
                ),
                ToolCallPart("zoom", {"x": 10, "y": 4, "scale": 2.5}, tool_call_id="toolu_01"),
                ToolCallPart("ocr", '{"lang": "en"}', tool_call_id="toolu_02"),
            ],
            usage=RequestUsage(input_tokens=1450, output_tokens=96, cache_read_tokens=1200),
            model_name=MODEL,
            provider_name="anthropic",
            provider_details={"finish_reason": "tool_use"},
            provider_response_id="msg_01",
            timestamp=T0,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "zoom",
                    BinaryContent(TOOL_IMAGE, media_type="image/png"),
                    tool_call_id="toolu_01",
                    timestamp=T0,
                ),
                ToolReturnPart(
                    "ocr",
                    {"text": "OPEN 9-5", "confidence": 0.93},
                    tool_call_id="toolu_02",
                    timestamp=T0,
                ),
            ],
            instructions=INSTRUCTIONS,
            timestamp=T0,
        ),
        ModelResponse(
            parts=[ToolCallPart("ocr", {"lang": "xx"}, tool_call_id="toolu_03")],
            usage=RequestUsage(input_tokens=2900, output_tokens=20),
            model_name=MODEL,
            provider_name="anthropic",
            timestamp=T0,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "ocr",
                    "unknown language",
                    tool_call_id="toolu_03",
                    outcome="retried",
                    timestamp=T0,
                ),
                RetryFeedbackPart(
                    "use a language code", retry=RetryInfo(cause="model_retry"), timestamp=T0
                ),
            ],
            instructions=INSTRUCTIONS,
            timestamp=T0,
        ),
        ModelResponse(
            parts=[ToolCallPart("ocr", {"lang": "en"}, tool_call_id="toolu_04")],
            model_name=MODEL,
            provider_name="anthropic",
            timestamp=T0,
        ),
        ModelRequest(
            parts=[
                RetryPromptPart(
                    "lang was already read",
                    tool_name="ocr",
                    tool_call_id="toolu_04",
                    timestamp=T0,
                )
            ],
            instructions=INSTRUCTIONS,
            timestamp=T0,
        ),
        ModelResponse(
            parts=[TextPart("Une vitrine ouverte de 9 h à 17 h.")],
            usage=RequestUsage(input_tokens=3100, output_tokens=14),
            model_name=MODEL,
            provider_name="anthropic",
            timestamp=T0,
        ),
    ]


def round_tripped(messages: list[ModelMessage]) -> list[ModelMessage]:
    return ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))


def _fragments(image: bytes) -> list[bytes]:
    """Pieces of ``image`` in every encoding: raw, and both base64 alphabets at each alignment."""
    found = [image[100:160]]
    for offset in range(3):
        piece = image[100 + offset : 400 + offset]
        found += [base64.b64encode(piece)[4:-4], base64.urlsafe_b64encode(piece)[4:-4]]
    return found


async def _database_bytes(store: ConversationStore, db_url: str) -> bytes:
    """What the database holds: SQLite's file and WAL, or every PostgreSQL row as text."""
    if db_url.startswith("sqlite"):
        return sqlite_file_bytes(db_url)
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from convstore.db.schema import metadata

    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as conn:
            rows = []
            for table in metadata.sorted_tables:
                result = await conn.execute(text(f'SELECT CAST(t AS text) FROM "{table.name}" t'))
                rows += [row[0] for row in result]
    finally:
        await engine.dispose()
    return "\n".join(rows).encode()


@pytest.mark.parametrize("serialized", [False, True], ids=["as-run", "json-round-trip"])
async def test_every_field_survives_and_images_are_blobs(
    store: ConversationStore, db_url: str, serialized: bool
) -> None:
    backend = ConvstoreConversationStore(store=store)
    cid = f"fid-{uuid.uuid4().hex[:12]}"
    messages = round_tripped(run()) if serialized else run()
    await backend.save(Conversation(conversation_id=cid, messages=messages))

    loaded = await backend.load(cid)
    assert loaded is not None
    # What pydantic-ai's own JSON round trip gives back (a `RetryPromptPart` is read as the
    # retried `ToolReturnPart` the current release makes of it).
    expected = ModelMessagesTypeAdapter.dump_json(round_tripped(run()))
    assert ModelMessagesTypeAdapter.dump_json(loaded.messages) == expected

    convo = await store.load(cid)
    files: list[FilePart] = [f for m in convo.messages for f in m.files]
    by_call = {call.name + call.id[-2:]: call for call in convo.tool_calls}
    zoom = by_call["zoom01"].output
    assert isinstance(zoom, ContentOutput)
    assert [p.attachment is not None for p in zoom.parts if isinstance(p, FilePart)] == [True]
    assert isinstance(by_call["ocr02"].output, JsonOutput)
    assert by_call["ocr03"].status == "error" and by_call["ocr04"].status == "error"
    assert len(files) == 2 and all(f.attachment is not None and f.data is None for f in files)
    assert [await store.read_attachment(f) for f in files] == list(IMAGES)

    thinking = [p for m in convo.messages for p in m.parts if isinstance(p, ThinkingPart)]
    assert [(t.signature, t.provider, t.model) for t in thinking] == [
        (SIGNATURE, "anthropic", MODEL)
    ]
    system = [p.text for m in convo.messages if m.role == "system" for p in m.parts]
    assert system == [INSTRUCTIONS, "You describe images."]  # instructions once, not per request

    raw = await _database_bytes(store, db_url)
    for image in IMAGES:
        for fragment in _fragments(image):
            assert fragment not in raw

    anthropic = await store.render(cid, "anthropic", model=MODEL)
    check_payload("anthropic", MODEL, anthropic.payload)
    assert INSTRUCTIONS in json.dumps(anthropic.payload["system"])
    blocks = [b for m in anthropic.payload["messages"] for b in m["content"] if isinstance(b, dict)]
    assert [b["signature"] for b in blocks if b.get("type") == "thinking"] == [SIGNATURE]
    for target, model in (("anthropic", MODEL), ("gemini", "gemini-2.5-flash")):
        rendered = (
            anthropic if target == "anthropic" else await store.render(cid, target, model=model)
        )
        check_payload(target, model, rendered.payload)
        media = {base64.b64decode(data) for data in media_in_payload(rendered.payload)}
        assert media == set(IMAGES), target
    gemini = await store.render(cid, "gemini", model="gemini-2.5-flash")
    assert INSTRUCTIONS in json.dumps(gemini.payload["systemInstruction"])


async def test_a_reserialized_conversation_continues_on_its_branch(
    store: ConversationStore,
) -> None:
    backend = ConvstoreConversationStore(store=store)
    cid = f"fid-{uuid.uuid4().hex[:12]}"
    first = run()
    await backend.save(Conversation(conversation_id=cid, messages=first))
    record = await backend.read_record(cid)
    assert record is not None
    stored = len((await store.load(cid)).messages)

    # The app sent the history to a client as JSON and got it back (BinaryImage, no index).
    again = Conversation(
        conversation_id=cid, messages=round_tripped(first), revision=record.revision
    )
    assert again.messages != first  # pydantic-ai's own == sees a difference
    assert await backend.save(again) == []  # the same messages: nothing stored
    assert len((await store.load(cid)).messages) == stored

    follow_up = [
        ModelRequest(parts=[UserPromptPart("Merci !", timestamp=T0)], instructions=INSTRUCTIONS),
        ModelResponse(parts=[TextPart("De rien.")], model_name=MODEL, timestamp=T0),
    ]
    continued = Conversation(
        conversation_id=cid,
        messages=[*round_tripped(first), *follow_up],
        revision=again.revision,
    )
    new = await backend.save(continued)
    assert [e.message for e in new] == follow_up
    after = await backend.read_record(cid)
    assert after is not None and after.branches == []
    assert len(await store.branches(cid)) == 1
    convo = await store.load(cid)
    assert len(convo.messages) == stored + 2
    assert [p.text for m in convo.messages if m.role == "system" for p in m.parts] == [
        INSTRUCTIONS,
        "You describe images.",
    ]
    assert await backend.save(continued) == []  # saving the same result twice stores nothing
    assert len((await store.load(cid)).messages) == stored + 2
    loaded = await backend.load(cid)
    assert loaded is not None
    assert any(
        type(part).__name__ == "BinaryImage"
        for m in loaded.messages
        for p in m.parts
        for part in (p.content if isinstance(getattr(p, "content", None), list) else [])
    )


async def test_instructions_reach_renders_as_the_system_prompt(store: ConversationStore) -> None:
    """Point 3: the agent's ``instructions=`` (on each request) are the system prompt, once."""
    backend = ConvstoreConversationStore(store=store)
    cid = f"fid-{uuid.uuid4().hex[:12]}"
    requests = [
        ModelRequest(parts=[UserPromptPart(text, timestamp=T0)], instructions=INSTRUCTIONS)
        for text in ("Bonjour ?", "Encore ?")
    ]
    answers = [
        ModelResponse(parts=[TextPart(text)], model_name=MODEL, timestamp=T0)
        for text in ("Oui.", "Non.")
    ]
    messages = [requests[0], answers[0], requests[1], answers[1]]
    await backend.save(Conversation(conversation_id=cid, messages=messages))
    for target, model in (("anthropic", MODEL), ("openai-responses", "gpt-5")):
        rendered = await store.render(cid, target, model=model)
        system = rendered.payload.get("system") or rendered.payload.get("instructions")
        assert system == INSTRUCTIONS, target
