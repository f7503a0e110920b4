"""Every input is accepted alike on SQLite and PostgreSQL, or refused alike with a typed error.

Issue 12, points 2, 4 and 5: values that one database stored and the other refused (NaN in
metadata, NUL in summaries and keys, over-long tenants, ``limit=-1``), that escaped as untyped
exceptions (lone surrogates in ids, titles and keys, ``limit=2**63``, ``append(cid, None)``),
or that were stored and then made the conversation unloadable (an integer of more than 4,300
digits). Each case runs on both databases (the `store` fixture) and must leave nothing written.
The property test at the end holds the store to "reading never fails on what writing accepted".
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import ConversationStore, JsonOutput, Message, ToolCallPart, parse, render
from convstore.cli.views import conversation_view
from convstore.errors import ConvstoreError, InvalidInputError, InvalidMessageError
from convstore.limits import (
    JSON_INT_MAX,
    JSON_INT_MIN,
    MAX_LIST_LIMIT,
    MAX_MESSAGE_CHARS,
    MAX_METADATA_CHARS,
    MAX_METADATA_ENTRIES,
    MAX_PART_CHARS,
    MAX_PARTS_PER_MESSAGE,
    MAX_TITLE_LENGTH,
)
from convstore.message_checks import _explain, _message_ok, check_messages
from convstore.model import TextPart
from tests.providers.conversations import TARGET_MODELS

HUGE = math.factorial(2000)  # 5,736 digits: more than Python converts to text by default


async def _messages(store: ConversationStore, cid: str) -> list[Message]:
    return (await store.load(cid)).messages


# --------------------------------------------------------------------------------------------
# Point 2: integers no database integer or 64-bit JSON library holds
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(lambda: Message.tool_result("c1", HUGE), id="a result value"),
        pytest.param(lambda: Message.tool_result("c1", {"n": [-HUGE]}), id="a nested result"),
        pytest.param(
            lambda: Message.assistant(ToolCallPart(id="c1", name="f", arguments={"n": HUGE})),
            id="tool arguments",
        ),
        pytest.param(lambda: Message.tool_result("c1", JSON_INT_MAX + 1), id="2**63"),
        pytest.param(lambda: Message.tool_result("c1", JSON_INT_MIN - 1), id="-2**63 - 1"),
    ],
)
async def test_integers_beyond_64_bits_are_refused_at_write_time(
    store: ConversationStore, message: Callable[[], Message]
) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, Message.user("before"))
    with pytest.raises(InvalidMessageError, match="64-bit range"):
        await store.append(conv.id, message())
    # Nothing written, and the conversation loads, renders and shows as before.
    assert [m.text for m in await _messages(store, conv.id)] == ["before"]
    await store.render(conv.id, "openai-chat")
    conversation_view(await store.load(conv.id))


async def test_integers_at_the_64_bit_bounds_round_trip(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    value = {"max": JSON_INT_MAX, "min": JSON_INT_MIN, "list": [JSON_INT_MAX, 0, JSON_INT_MIN]}
    await store.append(
        conv.id,
        [
            Message.assistant(ToolCallPart(id="c1", name="f", arguments=value)),
            Message.tool_result("c1", value),
        ],
    )
    loaded = await store.load(conv.id)
    assert loaded.tool_calls[0].arguments == value
    assert loaded.tool_calls[0].output == JsonOutput(value=value)


async def test_completing_a_call_with_a_huge_integer_is_refused(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(conv.id, Message.assistant(ToolCallPart(id="c1", name="calc")))
    with pytest.raises(InvalidMessageError, match="64-bit range"):
        await store.complete_tool_call(conv.id, "c1", JsonOutput(value=HUGE))
    assert (await store.load(conv.id)).tool_calls[0].status == "pending"


PAYLOADS_WITH_HUGE_INTEGERS = {
    "anthropic": {
        "messages": [
            {"role": "user", "content": "compute"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"n": HUGE}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
            },
        ]
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "compute"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"n": HUGE}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {"result": HUGE}}}],
            },
        ]
    },
}


@pytest.mark.parametrize("source", sorted(PAYLOADS_WITH_HUGE_INTEGERS))
async def test_parsed_payloads_holding_python_ints_are_refused_when_appended(
    store: ConversationStore, source: str
) -> None:
    # `parse` takes decoded JSON, which Python may hand over with any integer in it: parse keeps
    # the history as it was, and append refuses what it could not read back.
    messages = parse(PAYLOADS_WITH_HUGE_INTEGERS[source], source)
    conv = await store.create_conversation()
    with pytest.raises(InvalidMessageError, match=r"arguments\.n: an integer outside the 64-bit"):
        await store.append(conv.id, messages)
    assert await _messages(store, conv.id) == []


def test_parse_refuses_a_huge_integer_where_the_format_wants_an_object() -> None:
    payload = {
        "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": [HUGE]},
        ]
    }
    with pytest.raises(ConvstoreError):
        parse(payload, "openai-responses")


# --------------------------------------------------------------------------------------------
# Points 4 and 5: the store's own arguments
# --------------------------------------------------------------------------------------------

SURROGATE = "bad\ud800"
NUL = "bad\x00"

Call = Callable[[ConversationStore, str], Awaitable[Any]]

REFUSED: dict[str, tuple[Call, str]] = {
    "a title with a lone surrogate": (
        lambda s, cid: s.create_conversation(title=SURROGATE),
        "title is not valid Unicode",
    ),
    "a title with NUL": (lambda s, cid: s.create_conversation(title=NUL), "title cannot"),
    "a tenant with a lone surrogate": (
        lambda s, cid: s.create_conversation(tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "a tenant with NUL": (lambda s, cid: s.create_conversation(tenant=NUL), "tenant cannot"),
    "a tenant of 256 characters": (
        lambda s, cid: s.create_conversation(tenant="t" * 256),
        "tenant must be 1 to 255 characters",
    ),
    "an empty tenant": (
        lambda s, cid: s.create_conversation(tenant=""),
        "tenant must be 1 to 255 characters",
    ),
    "an id with a lone surrogate": (
        lambda s, cid: s.create_conversation(id=SURROGATE),
        "conversation id is not valid Unicode",
    ),
    "an id of 65 characters": (
        lambda s, cid: s.create_conversation(id="c" * 65),
        "conversation id must be 1 to 64 characters",
    ),
    "metadata with NaN": (
        lambda s, cid: s.create_conversation(metadata={"a": [float("nan")]}),
        r"metadata.a\[0\]: nan is not a JSON number",
    ),
    "metadata with Infinity": (
        lambda s, cid: s.create_conversation(metadata={"a": {"b": float("inf")}}),
        "metadata.a.b: inf is not a JSON number",
    ),
    "metadata with a lone surrogate key": (
        lambda s, cid: s.create_conversation(metadata={SURROGATE: 1}),
        "metadata key .* is not valid Unicode",
    ),
    "metadata with a NUL value": (
        lambda s, cid: s.create_conversation(metadata={"k": NUL}),
        "metadata.k cannot contain NUL",
    ),
    "metadata with a huge integer": (
        lambda s, cid: s.create_conversation(metadata={"k": HUGE}),
        "64-bit range",
    ),
    "metadata that is not an object": (
        lambda s, cid: s.create_conversation(metadata=[1]),  # type: ignore[arg-type]
        "metadata must be a JSON object",
    ),
    # Issue 32, finding 12: a 30-million-character title was stored (a 30 MB list page).
    "a title of 30 million characters": (
        lambda s, cid: s.create_conversation(title="T" * 30_000_000),
        "title must be at most 4,096 characters, got 30,000,000",
    ),
    "a rename over the title limit": (
        lambda s, cid: s.update_conversation(cid, title="T" * (MAX_TITLE_LENGTH + 1)),
        "title must be at most 4,096 characters, got 4,097",
    ),
    "a fork's title over the limit": (
        lambda s, cid: s.fork(cid, at_seq=1, title="T" * (MAX_TITLE_LENGTH + 1)),
        "title must be at most 4,096",
    ),
    "get_or_create's title over the limit": (
        lambda s, cid: s.get_or_create_conversation("new-one", title="T" * 5000),
        "title must be at most 4,096",
    ),
    "metadata of 1,001 entries": (
        lambda s, cid: s.create_conversation(metadata={f"k{i}": i for i in range(1001)}),
        "metadata may have at most 1,000 entries, got 1,001",
    ),
    "metadata over a mebicharacter": (
        lambda s, cid: s.update_conversation(cid, metadata={"k": "x" * MAX_METADATA_CHARS}),
        "metadata may be at most 1,048,576 characters of JSON, got 1,048,584",
    ),
    "metadata over the limit with an append": (
        lambda s, cid: s.append(cid, Message.user("x"), metadata={"k": "x" * MAX_METADATA_CHARS}),
        "metadata may be at most 1,048,576 characters",
    ),
    "limit=-1": (lambda s, cid: s.list_conversations(limit=-1), "limit must be between"),
    "limit=2**63": (lambda s, cid: s.list_conversations(limit=2**63), "limit must be between"),
    "limit over the maximum": (
        lambda s, cid: s.list_conversations(limit=MAX_LIST_LIMIT + 1),
        "limit must be between",
    ),
    "a listing tenant with a lone surrogate": (
        lambda s, cid: s.list_conversations(tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "append(cid, None)": (
        lambda s, cid: s.append(cid, None),  # type: ignore[arg-type]
        "append takes a Message",
    ),
    "append(cid, 42)": (
        lambda s, cid: s.append(cid, 42),  # type: ignore[arg-type]
        "append takes a Message",
    ),
    "an idempotency key with NUL": (
        lambda s, cid: s.append(cid, Message.user("x"), idempotency_key=NUL),
        "idempotency key cannot contain NUL",
    ),
    "an idempotency key with a lone surrogate": (
        lambda s, cid: s.append(cid, Message.user("x"), idempotency_key=SURROGATE),
        "idempotency key is not valid Unicode",
    ),
    "an idempotency key of 256 characters": (
        lambda s, cid: s.append(cid, Message.user("x"), idempotency_key="k" * 256),
        "idempotency key must be 1 to 255",
    ),
    "a summary with NUL": (
        lambda s, cid: s.compact(cid, through_seq=1, summary=NUL),
        "summary cannot contain NUL",
    ),
    "a summary with a lone surrogate": (
        lambda s, cid: s.compact(cid, through_seq=1, summary=SURROGATE),
        "summary is not valid Unicode",
    ),
    "through_seq=2**63": (
        lambda s, cid: s.compact(cid, through_seq=2**63, summary="s"),
        "through_seq must be between",
    ),
    "load(last=2**63)": (lambda s, cid: s.load(cid, last=2**63), "last must be between"),
    "load of an id with a lone surrogate": (
        lambda s, cid: s.load(SURROGATE),
        "conversation id is not valid Unicode",
    ),
    "load with a NUL tenant": (lambda s, cid: s.load(cid, tenant=NUL), "tenant cannot"),
    "append to an id with NUL": (
        lambda s, cid: s.append(NUL, Message.user("x")),
        "conversation id cannot contain NUL",
    ),
    "delete with a lone surrogate tenant": (
        lambda s, cid: s.delete_conversation(cid, tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "cancel with a NUL id": (lambda s, cid: s.cancel_tool_calls(NUL), "conversation id cannot"),
    "complete a call id with a lone surrogate": (
        lambda s, cid: s.complete_tool_call(cid, SURROGATE, {"ok": 1}),
        "call id is not valid Unicode",
    ),
    "render with a NUL tenant": (
        lambda s, cid: s.render(cid, "openai-chat", tenant=NUL),
        "tenant cannot",
    ),
    "render(last=-1)": (
        lambda s, cid: s.render(cid, "openai-chat", last=-1),
        "last must be between",
    ),
    "get_message in a conversation id with NUL": (
        lambda s, cid: s.get_message("m1", conversation_id=NUL),
        "conversation id cannot contain NUL",
    ),
    "get_message with a lone surrogate tenant": (
        lambda s, cid: s.get_message("m1", tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "get_message of an id with NUL": (
        lambda s, cid: s.get_message(NUL, conversation_id=cid),
        "message id cannot contain NUL",
    ),
    "pop of an id with NUL": (lambda s, cid: s.pop(NUL), "conversation id cannot contain NUL"),
    "pop with a lone surrogate tenant": (
        lambda s, cid: s.pop(cid, tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "truncate with a NUL tenant": (
        lambda s, cid: s.truncate(cid, after_seq=0, tenant=NUL),
        "tenant cannot contain NUL",
    ),
    "truncate(after_seq=-1)": (
        lambda s, cid: s.truncate(cid, after_seq=-1),
        "after_seq must be between 0 and",
    ),
    "truncate(after_seq=2**63)": (
        lambda s, cid: s.truncate(cid, after_seq=2**63),
        "after_seq must be between 0 and",
    ),
    "fork(at_seq=0)": (lambda s, cid: s.fork(cid, at_seq=0), "at_seq must be between 1 and"),
    "fork(at_seq=2**63)": (lambda s, cid: s.fork(cid, at_seq=2**63), "at_seq must be between"),
    "branches of an id with a lone surrogate": (
        lambda s, cid: s.branches(SURROGATE),
        "conversation id is not valid Unicode",
    ),
    "branches with a NUL tenant": (
        lambda s, cid: s.branches(cid, tenant=NUL),
        "tenant cannot contain NUL",
    ),
    "switch_branch of an id with NUL": (
        lambda s, cid: s.switch_branch(NUL, head_seq=1),
        "conversation id cannot contain NUL",
    ),
    "switch_branch with a lone surrogate tenant": (
        lambda s, cid: s.switch_branch(cid, head_seq=1, tenant=SURROGATE),
        "tenant is not valid Unicode",
    ),
    "switch_branch(head_seq=True)": (
        lambda s, cid: s.switch_branch(cid, head_seq=True),
        "head_seq must be an integer",
    ),
    "switch_branch(head_seq=2**63)": (
        lambda s, cid: s.switch_branch(cid, head_seq=2**63),
        "head_seq must be between 1 and",
    ),
    "append(parent_seq=0)": (
        lambda s, cid: s.append(cid, Message.user("x"), parent_seq=0),
        "parent_seq must be between 1 and",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_bad_arguments_are_refused_alike_on_both_databases(
    store: ConversationStore, case: str
) -> None:
    call, match = REFUSED[case]
    conv = await store.create_conversation(metadata={"keep": 1})
    await store.append(conv.id, Message.user("hello"))
    before = await store.load(conv.id)
    listed = len(await store.list_conversations(limit=MAX_LIST_LIMIT))
    with pytest.raises(InvalidInputError, match=match):
        await call(store, conv.id)
    assert await store.load(conv.id) == before
    assert len(await store.list_conversations(limit=MAX_LIST_LIMIT)) == listed


NUL_IN_MESSAGES: dict[str, tuple[Callable[[], Message], str]] = {
    "message text": (lambda: Message.user("a\x00b"), r"messages\[0\]\.parts\[0\]\.text"),
    "tool arguments": (
        lambda: Message.assistant(ToolCallPart(id="c9", name="f", arguments={"q": "\x00"})),
        r"messages\[0\]\.parts\[0\]\.arguments\.q",
    ),
    "a message id": (lambda: Message.user("x", id="m\x00"), r"messages\[0\]\.id"),
    "a tool result": (
        lambda: Message.tool_result("c9", JsonOutput(value=["\x00"])),
        r"messages\[0\]\.parts\[0\]\.output\.value\[0\]",
    ),
}


@pytest.mark.parametrize("field", sorted(NUL_IN_MESSAGES))
async def test_nul_is_refused_in_every_stored_string_naming_the_field(
    store: ConversationStore, field: str
) -> None:
    """One rule for NUL (convstore.limits): the title and the message text alike."""
    build, where = NUL_IN_MESSAGES[field]
    conv = await store.create_conversation(title="kept")
    await store.append(conv.id, Message.user("hello"))
    before = await store.load(conv.id)
    with pytest.raises(InvalidMessageError, match=where + ": cannot contain NUL characters"):
        await store.append(conv.id, [build()])
    assert await store.load(conv.id) == before
    with pytest.raises(InvalidInputError, match="title cannot contain NUL characters"):
        await store.update_conversation(conv.id, title="a\x00b")


async def test_the_bounds_themselves_are_accepted(store: ConversationStore) -> None:
    tenant = "t" * 255
    conv = await store.create_conversation(
        id=uuid.uuid4().hex * 2, tenant=tenant, metadata={"x": JSON_INT_MIN, "y": 1.5}
    )
    await store.append(conv.id, Message.user("x"), tenant=tenant, idempotency_key="k" * 255)
    assert await store.list_conversations(limit=0) == []
    assert [s.id for s in await store.list_conversations(tenant=tenant)] == [conv.id]
    assert len((await store.load(conv.id, last=2**63 - 1)).messages) == 1


async def test_titles_and_metadata_at_their_limits_are_accepted(store: ConversationStore) -> None:
    title = "é" * MAX_TITLE_LENGTH  # characters, not bytes
    wide = {f"k{i}": i for i in range(MAX_METADATA_ENTRIES)}
    conv = await store.create_conversation(title=title, metadata=wide)
    assert (await store.get_conversation(conv.id)).title == title
    large = {"k": "x" * (MAX_METADATA_CHARS - len('{"k":""}'))}
    updated = await store.update_conversation(conv.id, metadata=large, title="")
    assert updated.metadata == large
    assert updated.title == ""


async def test_parts_per_message_and_message_size_are_bounded(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    many = Message.user(*["p"] * (MAX_PARTS_PER_MESSAGE + 1))
    with pytest.raises(InvalidMessageError, match="10,001 parts, more than the 10,000"):
        await store.append(conv.id, many)
    half = "x" * (MAX_PART_CHARS - 1)
    big = Message.user(half, half, "y" * 3)  # each part within its limit, the whole over
    with pytest.raises(
        InvalidMessageError, match=r"messages\[0\]: holds [0-9,]+ characters of text, more than"
    ):
        await store.append(conv.id, big)
    assert MAX_MESSAGE_CHARS == 2 * MAX_PART_CHARS
    await store.append(conv.id, Message.user(*["p"] * MAX_PARTS_PER_MESSAGE))
    assert len((await store.load(conv.id)).messages[0].parts) == MAX_PARTS_PER_MESSAGE


# --------------------------------------------------------------------------------------------
# Whatever append accepts, load, render and show read back (property test)
# --------------------------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(codec=None, exclude_categories=()),  # lone surrogates and NUL included
    max_size=12,
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    # Built by functions, not listed: hypothesis cannot print a strategy holding such integers.
    | st.tuples(st.integers(0, 6000), st.sampled_from([1, -1])).map(lambda t: t[1] * 10 ** t[0])
    | st.sampled_from([0, 1, -1, -2]).map(lambda k: [JSON_INT_MAX + k, JSON_INT_MIN - k])
    | st.sampled_from([2000]).map(math.factorial)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=12,
)


@pytest.fixture
def sqlite_loop(tmp_path: Any) -> Iterator[tuple[asyncio.AbstractEventLoop, ConversationStore]]:
    """One SQLite store on an event loop of its own, shared by every hypothesis example."""
    loop = asyncio.new_event_loop()
    store = ConversationStore(
        f"sqlite+aiosqlite:///{tmp_path / 'prop.db'}", blobs=f"memory://prop-{uuid.uuid4().hex}"
    )
    loop.run_until_complete(store.open())
    try:
        yield loop, store
    finally:
        loop.run_until_complete(store.close())
        loop.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(arguments=st.dictionaries(_TEXT, JSON_VALUES, max_size=3), result=JSON_VALUES)
def test_what_append_accepts_reads_back(
    sqlite_loop: tuple[asyncio.AbstractEventLoop, ConversationStore],
    arguments: dict[str, Any],
    result: Any,
) -> None:
    loop, store = sqlite_loop

    async def scenario() -> None:
        conv = await store.create_conversation()
        try:
            call = Message.assistant(ToolCallPart(id="c1", name="f", arguments=arguments))
            answer = Message.tool_result("c1", result)
        except InvalidMessageError:
            return  # the model itself refuses it (a typed error): nothing to store
        try:
            await store.append(conv.id, [call, answer])
        except ConvstoreError:
            assert await _messages(store, conv.id) == []
            return
        loaded = await store.load(conv.id)
        assert loaded.tool_calls[0].arguments == arguments
        assert loaded.tool_calls[0].output == answer.parts[0].output  # type: ignore[union-attr]
        conversation_view(loaded)
        for target, model in TARGET_MODELS:
            render(loaded, target, model=model)
            await store.render(conv.id, target, model=model)

    loop.run_until_complete(scenario())


@settings(max_examples=300, deadline=None)
@given(
    value=JSON_VALUES,
    text=_TEXT,
    parts=st.integers(0, 3),
)
def test_the_verdict_only_check_agrees_with_the_detailed_one(
    value: Any, text: str, parts: int
) -> None:
    message = Message.model_construct(
        role="tool",
        parts=[
            *(TextPart.model_construct(text=text) for _ in range(parts)),
            JsonOutput.model_construct(value=value),
        ],
    )
    verdict = _message_ok(message, None)
    try:
        _explain([message], None)
    except ConvstoreError:
        assert not verdict
    else:
        assert verdict
    if verdict:
        check_messages([message])
    else:
        with pytest.raises(ConvstoreError):
            check_messages([message])
