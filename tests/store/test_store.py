"""ConversationStore through its public API, on every database (see conftest `db_url`)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from convstore import (
    ClosedError,
    ConflictError,
    ContentOutput,
    ConversationNotFoundError,
    ConversationStore,
    ConvstoreError,
    ErrorOutput,
    FilePart,
    InvalidInputError,
    InvalidMessageError,
    JsonOutput,
    Message,
    TextPart,
    ToolCallConflictError,
    ToolCallNotFoundError,
    ToolCallPart,
    ToolResultPart,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


def call(call_id: str, name: str = "lookup", **arguments: object) -> ToolCallPart:
    return ToolCallPart(id=call_id, name=name, arguments=arguments)


def assistant_calling(*ids: str) -> Message:
    return Message.assistant(*(call(i) for i in ids))


class TestConversations:
    async def test_create_returns_an_id_and_the_header(self, store: ConversationStore) -> None:
        conv = await store.create_conversation(title="Trip", tenant="t1", metadata={"k": [1]})
        assert isinstance(conv.id, str) and conv.id
        assert (conv.title, conv.tenant, conv.metadata) == ("Trip", "t1", {"k": [1]})
        assert conv.created_at.tzinfo is not None
        loaded = await store.load(conv.id)
        assert (loaded.title, loaded.tenant, loaded.metadata, loaded.messages) == (
            "Trip", "t1", {"k": [1]}, [],
        )  # fmt: skip

    async def test_caller_chosen_id_and_conflict(self, store: ConversationStore) -> None:
        chosen = f"app-{uuid.uuid4()}"
        conv = await store.create_conversation(id=chosen)
        assert conv.id == chosen
        with pytest.raises(ConflictError):
            await store.create_conversation(id=chosen)

    async def test_metadata_must_be_json(self, store: ConversationStore) -> None:
        with pytest.raises(InvalidInputError):
            await store.create_conversation(metadata={"when": object()})

    async def test_list_is_scoped_by_tenant(self, store: ConversationStore) -> None:
        tenant = f"t-{uuid.uuid4()}"
        first = await store.create_conversation(tenant=tenant, title="a")
        second = await store.create_conversation(tenant=tenant, title="b")
        await store.append(first.id, Message.user("newer activity"))
        listed = await store.list_conversations(tenant=tenant)
        # Newest created first: activity does not reorder a listing (stable cursor paging).
        assert [c.id for c in listed] == [second.id, first.id]
        assert listed[1].message_count == 1

    async def test_delete_then_everything_is_not_found(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [assistant_calling("c1"), Message.tool_result("c1", 1)])
        await store.delete_conversation(conv.id)
        for action in (
            store.load(conv.id),
            store.append(conv.id, Message.user("x")),
            store.delete_conversation(conv.id),
            store.complete_tool_call(conv.id, "c1", JsonOutput(value=2)),
            store.cancel_tool_calls(conv.id),
            store.compact(conv.id, through_seq=1, summary="s"),
        ):
            with pytest.raises(ConversationNotFoundError):
                await action

    async def test_unknown_conversation(self, store: ConversationStore) -> None:
        with pytest.raises(ConversationNotFoundError) as missing:
            await store.load("no-such-conversation")
        assert missing.value.conversation_id == "no-such-conversation"


class TestTenancy:
    async def test_another_tenant_sees_exactly_what_a_missing_id_gives(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation(tenant="alice")
        await store.append(conv.id, Message.user("secret"))
        errors = []
        for target in (conv.id, "missing-id"):
            with pytest.raises(ConversationNotFoundError) as exc:
                await store.load(target, tenant="mallory")
            errors.append(str(exc.value).replace(target, "ID"))
        assert errors[0] == errors[1]
        with pytest.raises(ConversationNotFoundError):
            await store.delete_conversation(conv.id, tenant="mallory")
        with pytest.raises(ConversationNotFoundError):
            await store.append(conv.id, Message.user("intrusion"), tenant="mallory")
        assert [m.text for m in (await store.load(conv.id, tenant="alice")).messages] == ["secret"]

    async def test_untenanted_conversation_is_hidden_from_tenants(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        with pytest.raises(ConversationNotFoundError):
            await store.load(conv.id, tenant="alice")


class TestAppend:
    async def test_sequence_numbers_are_strictly_increasing(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        first = await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
        second = await store.append(conv.id, Message.user("c"))
        assert [m.seq for m in first + second] == [1, 2, 3]
        assert all(m.created_at is not None for m in first + second)

    async def test_accepts_a_message_a_sequence_or_mappings(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("one"))
        await store.append(
            conv.id, {"role": "assistant", "parts": [{"kind": "text", "text": "two"}]}
        )
        await store.append(
            conv.id, [{"role": "user", "parts": [{"kind": "text", "text": "three"}]}]
        )
        assert [m.text for m in (await store.load(conv.id)).messages] == ["one", "two", "three"]
        assert await store.append(conv.id, []) == []

    async def test_loaded_messages_equal_what_append_returned(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        stored = await store.append(
            conv.id,
            [
                Message.system("be brief"),
                Message.user("describe", FilePart.from_bytes(PNG, filename="x.png")),
                Message(
                    role="assistant",
                    provider="anthropic",
                    model="claude-x",
                    provider_details={"id": "msg_1"},
                    parts=[TextPart(text="ok"), call("c1", q="cats", n=3)],
                ),
                Message(
                    role="tool",
                    parts=[
                        ToolResultPart(
                            call_id="c1",
                            name="lookup",
                            output=ContentOutput(
                                parts=[TextPart(text="found"), FilePart.from_bytes(PNG)]
                            ),
                        )
                    ],
                ),
            ],
        )
        image = stored[1].parts[1]
        assert isinstance(image, FilePart) and image.data is None and image.attachment is not None
        loaded = await store.load(conv.id)
        assert loaded.messages == stored
        assert await store.read_attachment(image) == PNG

    async def test_a_failing_batch_writes_nothing(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, Message.user("before"))
        with pytest.raises(ToolCallConflictError):
            await store.append(
                conv.id, [Message.user("lost"), assistant_calling("dup"), assistant_calling("dup")]
            )
        with pytest.raises(InvalidMessageError):
            await store.append(conv.id, [Message.user("lost"), {"role": "wizard", "parts": []}])
        loaded = await store.load(conv.id)
        assert [m.text for m in loaded.messages] == ["before"]
        assert loaded.tool_calls == []
        assert (await store.append(conv.id, Message.user("after")))[0].seq == 2

    async def test_reusing_a_stored_call_id_is_a_conflict(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, assistant_calling("c1"))
        with pytest.raises(ToolCallConflictError):
            await store.append(conv.id, [Message.user("x"), assistant_calling("c1")])
        assert len((await store.load(conv.id)).messages) == 1

    async def test_idempotency_key_replays_the_first_append(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        first = await store.append(conv.id, [Message.user("hi")], idempotency_key="req-1")
        again = await store.append(conv.id, [Message.user("hi")], idempotency_key="req-1")
        assert again == first
        assert len((await store.load(conv.id)).messages) == 1

    async def test_load_last_n(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [assistant_calling("old"), Message.tool_result("old", 1)])
        await store.append(conv.id, [Message.user(str(i)) for i in range(5)])
        await store.append(conv.id, assistant_calling("new"))
        newest = await store.load(conv.id, last=3)
        assert [m.seq for m in newest.messages] == [6, 7, 8]
        assert [c.id for c in newest.tool_calls] == ["new"]
        assert (await store.load(conv.id, last=0)).messages == []
        everything = await store.load(conv.id, last=100)
        assert len(everything.messages) == 8
        with pytest.raises(InvalidInputError):
            await store.load(conv.id, last=-1)


class TestToolLifecycle:
    async def test_statuses_and_typed_outputs(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        content = ContentOutput(parts=[TextPart(text="chart:"), FilePart.from_bytes(PNG)])
        await store.append(
            conv.id,
            [
                assistant_calling("ok", "bad", "rich", "waiting"),
                Message.tool_result("ok", {"rows": 3}),
                Message.tool_result("bad", ErrorOutput(message="timeout")),
                Message.tool_result("rich", content),
            ],
        )
        calls = {c.id: c for c in (await store.load(conv.id)).tool_calls}
        assert list(calls) == ["ok", "bad", "rich", "waiting"]
        assert (calls["ok"].status, calls["ok"].result_kind) == ("complete", "json")
        assert calls["ok"].output == JsonOutput(value={"rows": 3})
        assert (calls["bad"].status, calls["bad"].result_kind) == ("error", "error")
        assert calls["bad"].output == ErrorOutput(message="timeout")
        rich = calls["rich"]
        assert (rich.status, rich.result_kind) == ("complete", "content")
        assert isinstance(rich.output, ContentOutput)
        stored_image = rich.output.files[0]
        assert stored_image.attachment is not None and stored_image.media_type == "image/png"
        assert await store.read_attachment(stored_image) == PNG
        assert (calls["waiting"].status, calls["waiting"].result_kind) == ("pending", None)
        assert calls["waiting"].output is None

    async def test_complete_tool_call_is_idempotent_and_refuses_changes(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, assistant_calling("c1"))
        done = await store.complete_tool_call(conv.id, "c1", JsonOutput(value={"a": 1, "b": 2}))
        assert (done.status, done.result_kind, done.output) == (
            "complete", "json", JsonOutput(value={"a": 1, "b": 2}),
        )  # fmt: skip
        # Equal output (key order aside): no-op, no second message.
        same = await store.complete_tool_call(
            conv.id, "c1", {"kind": "json", "value": {"b": 2, "a": 1}}
        )
        assert same.status == "complete"
        assert len((await store.load(conv.id)).messages) == 2
        with pytest.raises(ToolCallConflictError):
            await store.complete_tool_call(conv.id, "c1", ErrorOutput(message="late failure"))
        with pytest.raises(ToolCallNotFoundError):
            await store.complete_tool_call(conv.id, "nope", JsonOutput(value=1))
        loaded = await store.load(conv.id)
        assert len(loaded.messages) == 2
        assert loaded.get_tool_call("c1").output == JsonOutput(value={"a": 1, "b": 2})

    async def test_error_completion_and_content_completion(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, assistant_calling("e", "c"))
        failed = await store.complete_tool_call(conv.id, "e", ErrorOutput(message="denied"))
        assert (failed.status, failed.result_kind) == ("error", "error")
        content = ContentOutput(parts=[FilePart.from_bytes(PNG), TextPart(text="caption")])
        rich = await store.complete_tool_call(conv.id, "c", content)
        assert rich.result_kind == "content"
        assert isinstance(rich.output, ContentOutput)
        again = await store.complete_tool_call(conv.id, "c", content)
        assert again.result_kind == "content"
        loaded = await store.load(conv.id)
        assert len(loaded.messages) == 3
        output = loaded.get_tool_call("c").output
        assert isinstance(output, ContentOutput)
        assert [p.kind for p in output.parts] == ["file", "text"]

    async def test_interrupted_by_a_later_user_turn_and_late_result(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, assistant_calling("slow", "lost"))
        loaded = await store.load(conv.id)
        assert {c.status for c in loaded.tool_calls} == {"pending"}
        await store.append(conv.id, Message.user("never mind"))
        assert {c.status for c in (await store.load(conv.id)).tool_calls} == {"interrupted"}
        late = await store.complete_tool_call(conv.id, "slow", JsonOutput(value="finally"))
        assert late.status == "complete"
        statuses = {c.id: c.status for c in (await store.load(conv.id)).tool_calls}
        assert statuses == {"slow": "complete", "lost": "interrupted"}

    async def test_interrupted_within_one_append(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(
            conv.id, [assistant_calling("a"), Message.user("next"), assistant_calling("b")]
        )
        statuses = {c.id: c.status for c in (await store.load(conv.id)).tool_calls}
        assert statuses == {"a": "interrupted", "b": "pending"}

    async def test_cancel_moves_only_pending_calls(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(
            conv.id, [assistant_calling("done", "open1", "open2"), Message.tool_result("done", 1)]
        )
        assert await store.cancel_tool_calls(conv.id) == ["open1", "open2"]
        assert await store.cancel_tool_calls(conv.id) == []
        statuses = {c.id: c.status for c in (await store.load(conv.id)).tool_calls}
        assert statuses == {"done": "complete", "open1": "cancelled", "open2": "cancelled"}
        with pytest.raises(ToolCallConflictError):
            await store.complete_tool_call(conv.id, "open1", JsonOutput(value="too late"))

    async def test_appended_duplicate_results(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [assistant_calling("c1"), Message.tool_result("c1", "first")])
        # An equal repeat is kept as history and changes nothing.
        await store.append(conv.id, Message.tool_result("c1", "first"))
        # A different one is refused by default...
        with pytest.raises(ToolCallConflictError):
            await store.append(conv.id, Message.tool_result("c1", "second"))
        # ...or kept as history only, when the caller says so.
        await store.append(conv.id, Message.tool_result("c1", "second"), on_conflict="keep-first")
        loaded = await store.load(conv.id)
        assert len(loaded.messages) == 4
        assert loaded.get_tool_call("c1").output == JsonOutput(value="first")

    async def test_results_without_calls_are_kept_as_history(
        self, store: ConversationStore
    ) -> None:
        conv = await store.create_conversation()
        stored = await store.append(conv.id, Message.tool_result("ghost", 42))
        loaded = await store.load(conv.id)
        assert loaded.messages == stored and loaded.tool_calls == []


class TestCompaction:
    async def test_compact_records_without_deleting(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        await store.append(conv.id, [Message.user(str(i)) for i in range(4)])
        record = await store.compact(conv.id, through_seq=3, summary="numbers 0 to 2")
        assert (record.through_seq, record.summary) == (3, "numbers 0 to 2")
        loaded = await store.load(conv.id)
        assert len(loaded.messages) == 4
        assert loaded.compaction is not None and loaded.compaction.through_seq == 3
        for bad in (0, 5):
            with pytest.raises(InvalidInputError):
                await store.compact(conv.id, through_seq=bad, summary="x")


class TestLifecycleOfTheStore:
    async def test_use_outside_the_context_manager(self, db_url: str, blobs_url: str) -> None:
        store = ConversationStore(db_url, blobs=blobs_url, auto_migrate=True)
        with pytest.raises(ClosedError):
            await store.load("x")
        async with store:
            conv = await store.create_conversation()
        with pytest.raises(ClosedError):
            await store.load(conv.id)

    def test_unsupported_url(self) -> None:
        with pytest.raises(InvalidInputError, match="unsupported database URL"):
            ConversationStore("mysql+aiomysql://localhost/db")

    async def test_errors_are_convstore_errors(self, store: ConversationStore) -> None:
        conv = await store.create_conversation()
        bad_inputs = [
            store.append(conv.id, {"role": "user", "parts": [{"kind": "text", "text": 3}]}),
            store.append(conv.id, "just a string"),  # type: ignore[arg-type]
            store.complete_tool_call(conv.id, "x", {"kind": "unknown"}),
        ]
        for attempt in bad_inputs:
            with pytest.raises(ConvstoreError):
                await attempt
        assert (await store.load(conv.id)).messages == []


async def test_timestamps_are_utc(store: ConversationStore) -> None:
    before = datetime.now(UTC)
    conv = await store.create_conversation()
    (message,) = await store.append(conv.id, Message.user("t"))
    loaded = (await store.load(conv.id)).messages[0]
    assert loaded.created_at == message.created_at
    assert loaded.created_at is not None and loaded.created_at.utcoffset() is not None
    assert loaded.created_at >= before.replace(microsecond=0)
