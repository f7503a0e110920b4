"""The planner's repairs, one rule at a time (the property tests cover them in combination)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from convstore import (
    AttachmentRef,
    Compaction,
    ContentOutput,
    ErrorOutput,
    FilePart,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    parse,
    parse_response,
    render,
)
from convstore.transcript.plan import (
    AssistantTurn,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    Reasoning,
    Text,
    ToolTurn,
    UserTurn,
)
from convstore.transcript.planner import SYNTHETIC_TEXT, attachments_needed, plan_messages
from tests.support.corpus import CORPUS_DIR

T0 = datetime(2026, 11, 21, tzinfo=UTC)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
GIF = b"GIF89a" + bytes(8)
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt " + bytes(8)


def stored(*messages: Message) -> list[Message]:
    return [m.model_copy(update={"seq": i, "created_at": T0}) for i, m in enumerate(messages, 1)]


def calling(*ids: str, provider: str | None = None, model: str | None = None) -> Message:
    parts = [ToolCallPart(id=i, name="lookup") for i in ids]
    return Message(role=Role.ASSISTANT, parts=list(parts), provider=provider, model=model)


def lifecycle(call_id: str, status: ToolCallStatus) -> ToolCall:
    return ToolCall(id=call_id, name="lookup", arguments={}, status=status, seq=1, created_at=T0)


class TestPairing:
    def test_results_move_right_after_their_calls_in_call_order(self) -> None:
        plan = plan_messages(
            stored(
                Message.user("q"),
                calling("a", "b"),
                Message.user("interjection"),
                Message.tool_result("b", "B"),
                Message.tool_result("a", "A"),
            ),
            target="openai-chat",
        )
        kinds = [type(t).__name__ for t in plan.turns]
        assert kinds == ["UserTurn", "AssistantTurn", "ToolTurn", "UserTurn"]
        tool_turn = plan.turns[2]
        assert isinstance(tool_turn, ToolTurn)
        assert [(r.call.call_id, r.body) for r in tool_turn.results] == [
            ("a", JsonBody("A")),
            ("b", JsonBody("B")),
        ]

    def test_first_stored_result_wins_and_repeats_are_recorded(self) -> None:
        plan = plan_messages(
            stored(
                Message.user("q"),
                calling("a"),
                Message.tool_result("a", "first"),
                Message.tool_result("a", "second"),
            ),
            target="anthropic",
        )
        (tool_turn,) = [t for t in plan.turns if isinstance(t, ToolTurn)]
        assert tool_turn.results[0].body == JsonBody("first")
        (dropped,) = plan.diagnostics.dropped_results
        assert (dropped.call_id, dropped.reason, dropped.seq, dropped.kept_seq) == (
            "a", "duplicate", 4, 3,
        )  # fmt: skip

    @pytest.mark.parametrize(
        ("status", "later_user", "reason"),
        [
            (ToolCallStatus.CANCELLED, False, "cancelled"),
            (ToolCallStatus.INTERRUPTED, False, "interrupted"),
            (ToolCallStatus.PENDING, False, "pending"),
            (ToolCallStatus.PENDING, True, "interrupted"),
            (None, True, "interrupted"),
            (None, False, "missing"),
        ],
    )
    def test_missing_results_are_synthesised_with_a_neutral_reason(
        self, status: ToolCallStatus | None, later_user: bool, reason: str
    ) -> None:
        messages = [Message.user("q"), calling("a")]
        if later_user:
            messages.append(Message.user("moving on"))
        calls = [lifecycle("a", status)] if status else []
        plan = plan_messages(stored(*messages), target="openai-responses", tool_calls=calls)
        (tool_turn,) = [t for t in plan.turns if isinstance(t, ToolTurn)]
        (result,) = tool_turn.results
        assert result.synthetic and result.body == ErrorBody(SYNTHETIC_TEXT[reason])  # type: ignore[index]
        (note,) = plan.diagnostics.synthetic_results
        assert (note.call_id, note.reason) == ("a", reason)

    def test_orphan_results_are_dropped_or_turned_into_text(self) -> None:
        messages = stored(Message.user("q"), Message.tool_result("ghost", {"n": 1}))
        dropped = plan_messages(messages, target="openai-chat")
        assert [type(t).__name__ for t in dropped.turns] == ["UserTurn"]
        assert dropped.diagnostics.dropped_results[0].reason == "orphan"
        as_text = plan_messages(messages, target="openai-chat", orphan_results="text")
        last = as_text.turns[-1]
        assert isinstance(last, UserTurn)
        assert isinstance(last.parts[0], Text) and "'ghost'" in last.parts[0].text
        assert as_text.diagnostics.dropped_results[0].action == "text"

    def test_a_repeated_call_id_is_emitted_once(self) -> None:
        plan = plan_messages(
            [Message.user("q"), calling("a"), Message.tool_result("a", 1), calling("a")],
            target="openai-chat",
        )
        assert sum(len(t.calls) for t in plan.turns if isinstance(t, AssistantTurn)) == 1
        assert any("appears twice" in n for n in plan.diagnostics.notes)


class TestProjection:
    def test_ids_are_fitted_collision_free_and_deterministic(self) -> None:
        long_a, long_b = "call_" + "x" * 60 + "A", "call_" + "x" * 60 + "B"
        messages = [Message.user("q"), calling("a.b", "a_b", long_a, long_b)]
        for _ in range(2):
            plan = plan_messages(messages, target="openai-chat")
            wire = list(plan.diagnostics.id_map.values())
            assert len(set(wire)) == 4
            assert all(len(w) <= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", w) for w in wire)
        assert plan.diagnostics.id_map["a_b"] == "a_b"  # already valid: kept

    def test_mistral_and_kimi_styles(self) -> None:
        messages = [Message.user("q"), calling("c1", "c2"), Message.tool_result("c1", 1)]
        mistral = plan_messages(messages, target="mistral").diagnostics.id_map
        assert all(re.fullmatch(r"[A-Za-z0-9]{9}", w) for w in mistral.values())
        kimi = plan_messages(messages, target="kimi").diagnostics.id_map
        assert kimi == {"c1": "functions.lookup:0", "c2": "functions.lookup:1"}

    def test_tool_names_are_projected_and_mapped(self) -> None:
        message = Message.assistant(
            ToolCallPart(id="c", name="fs.read"), ToolCallPart(id="d", name="9lives")
        )
        openai = plan_messages([Message.user("q"), message], target="openai-chat")
        assert openai.diagnostics.name_map == {"fs.read": "fs_read"}
        gemini = plan_messages([Message.user("q"), message], target="gemini")
        assert gemini.diagnostics.name_map == {
            "9lives": "_9lives"
        }  # dots allowed; must start alpha


class TestCompaction:
    def test_summary_replaces_the_range_and_system_survives(self) -> None:
        messages = stored(
            Message.system("sys"),
            Message.user("old"),
            Message.assistant("old reply"),
            Message.user("new"),
        )
        compaction = Compaction(through_seq=3, summary="they talked", created_at=T0)
        plan = plan_messages(messages, target="anthropic", compaction=compaction)
        assert plan.system == ["sys"]
        first = plan.turns[0]
        assert isinstance(first, UserTurn) and isinstance(first.parts[0], Text)
        assert "they talked" in first.parts[0].text
        assert plan.diagnostics.compaction is not None
        assert plan.diagnostics.compaction.messages_replaced == 2

    def test_a_call_and_its_result_are_never_split(self) -> None:
        messages = stored(
            Message.user("q1"), calling("a"), Message.tool_result("a", 1), Message.user("q2")
        )
        compaction = Compaction(through_seq=2, summary="s", created_at=T0)
        plan = plan_messages(messages, target="openai-chat", compaction=compaction)
        note = plan.diagnostics.compaction
        assert note is not None and note.effective_through_seq == 1 and note.reason
        assert any(isinstance(t, ToolTurn) for t in plan.turns)
        assert not plan.diagnostics.synthetic_results and not plan.diagnostics.dropped_results


class TestShape:
    def test_text_before_a_call_turn_joins_it(self) -> None:
        plan = plan_messages(
            [Message.user("q"), Message.assistant("thinking out loud"), calling("a")],
            target="gemini",
        )
        assistant = [t for t in plan.turns if isinstance(t, AssistantTurn)]
        assert len(assistant) == 1
        assert [type(p).__name__ for p in assistant[0].parts] == ["Text", "Call"]

    def test_user_first_where_required(self) -> None:
        messages = [Message.assistant("hello, I start"), Message.user("hi")]
        for target in ("anthropic", "gemini"):
            plan = plan_messages(messages, target=target)
            assert isinstance(plan.turns[0], UserTurn)
        chat = plan_messages(messages, target="openai-chat")
        assert isinstance(chat.turns[0], AssistantTurn)

    def test_blank_text_and_empty_results_never_reach_an_encoder(self) -> None:
        plan = plan_messages(
            [
                Message.user("  "),
                Message.user("real"),
                calling("a", "b"),
                Message.tool_result("a", ""),
                Message.tool_result("b", ContentOutput(parts=[TextPart(text=" ")])),
            ],
            target="anthropic",
        )
        assert [type(t).__name__ for t in plan.turns][:1] == ["UserTurn"]
        (tool_turn,) = [t for t in plan.turns if isinstance(t, ToolTurn)]
        assert tool_turn.results[0].body == JsonBody("(no output)")
        body = tool_turn.results[1].body
        assert isinstance(body, ContentBody) and body.parts == [Text("(no output)")]
        errors = plan_messages(
            [Message.user("q"), calling("e"), Message.tool_result("e", ErrorOutput(message=""))],
            target="openai-chat",
        )
        (error_turn,) = [t for t in errors.turns if isinstance(t, ToolTurn)]
        assert error_turn.results[0].body == ErrorBody("The tool reported an error.")


class TestReasoning:
    signed = ThinkingPart(
        text="hmm", provider="anthropic", model="claude-sonnet-4-5", signature="c2ln"
    )

    def _plan(self, target: str, model: str, reasoning: str = "drop") -> list[object]:
        message = Message(
            role=Role.ASSISTANT, provider="anthropic", model="claude-sonnet-4-5",
            parts=[self.signed, TextPart(text="answer")],
        )  # fmt: skip
        plan = plan_messages(
            [Message.user("q"), message], target=target, model=model, reasoning=reasoning
        )  # type: ignore[arg-type]
        (assistant,) = [t for t in plan.turns if isinstance(t, AssistantTurn)]
        return list(assistant.parts)

    def test_replayed_only_to_the_same_model(self) -> None:
        assert isinstance(self._plan("anthropic", "claude-sonnet-4-5")[0], Reasoning)
        assert isinstance(self._plan("anthropic", "claude-sonnet-4-5-20250929")[0], Reasoning)
        assert self._plan("anthropic", "claude-opus-4-1") == [Text("answer")]
        assert self._plan("openai-responses", "gpt-5") == [Text("answer")]

    def test_converted_to_text_by_option(self) -> None:
        parts = self._plan("gemini", "gemini-3-pro-preview", reasoning="text")
        assert parts == [Text("<thinking>\nhmm\n</thinking>"), Text("answer")]

    def test_a_claude_tool_loop_keeps_its_signed_thinking(self) -> None:
        """The request names an alias, the response the dated snapshot: same model."""
        record = json.loads((CORPUS_DIR / "test_anthropic_tool_with_thinking--0.json").read_text())
        history = parse(record["request"], "anthropic")
        reply = parse_response(record["response"], "anthropic")
        assert reply.model != record["model"]  # claude-sonnet-4-20250514 vs claude-sonnet-4-0
        plan = plan_messages([*history, reply], target="anthropic", model=record["model"])
        assert [n.action for n in plan.diagnostics.reasoning] == ["kept"]

    @pytest.mark.parametrize(
        ("target", "model", "part"),
        [
            ("anthropic", "claude-sonnet-4-5", signed),
            ("gemini", "gemini-3-pro-preview",
             ThinkingPart(provider="gemini", model="gemini-3-pro-preview", signature="c2ln",
                          rides_on="text")),
            ("openai-responses", "gpt-5",
             ThinkingPart(provider="openai", model="gpt-5", reasoning_id="rs_1",
                          encrypted_content="e")),
        ],
    )  # fmt: skip
    def test_signed_reasoning_is_replayed_once_per_render(
        self, target: str, model: str, part: ThinkingPart
    ) -> None:
        """A repeat of the same artefact, in the same message or a later one, is left out."""
        provider = part.provider
        history = [
            Message.user("q"),
            Message(role=Role.ASSISTANT, provider=provider, model=model,
                    parts=[part, TextPart(text="a"), part]),
            Message.user("again"),
            Message(role=Role.ASSISTANT, provider=provider, model=model,
                    parts=[part, TextPart(text="b")]),
        ]  # fmt: skip
        for policy in ("drop", "text"):
            plan = plan_messages(history, target=target, model=model, reasoning=policy)
            replayed = [
                p for t in plan.turns if isinstance(t, AssistantTurn) for p in t.parts
                if isinstance(p, Reasoning)
            ]  # fmt: skip
            assert len(replayed) == 1
            assert [n.action for n in plan.diagnostics.reasoning] == ["kept", *["dropped"] * 2]

    def test_unsigned_reasoning_is_not_deduplicated(self) -> None:
        part = ThinkingPart(text="same thought", provider="kimi", model="kimi-k2-thinking")
        history = [
            Message.user("q"),
            Message(role=Role.ASSISTANT, provider="kimi", model="kimi-k2-thinking",
                    parts=[part, TextPart(text="a")]),
            Message.user("again"),
            Message(role=Role.ASSISTANT, provider="kimi", model="kimi-k2-thinking",
                    parts=[part, TextPart(text="b")]),
        ]  # fmt: skip
        plan = plan_messages(history, target="kimi", model="kimi-k2-thinking")
        assert [n.action for n in plan.diagnostics.reasoning] == ["kept", "kept"]

    @staticmethod
    def _thinking_text_thinking(provider: str, model: str) -> Message:
        first = ThinkingPart(text="first", provider=provider, model=model, signature="c2ln")
        later = first.model_copy(update={"signature": "c2lnMg", "text": "later"})
        return Message(
            role=Role.ASSISTANT, provider=provider, model=model,
            parts=[first, TextPart(text="answer"), later],
        )  # fmt: skip

    def test_reasoning_after_content_follows_the_policy_where_reasoning_must_lead(self) -> None:
        message = self._thinking_text_thinking("anthropic", "claude-sonnet-4-5")
        for policy, last in [
            ("drop", Text("answer")),
            ("text", Text("<thinking>\nlater\n</thinking>")),
        ]:
            plan = plan_messages(
                [Message.user("q"), message],
                target="anthropic",
                model="claude-sonnet-4-5",
                reasoning=policy,
            )  # type: ignore[arg-type]
            (assistant,) = [t for t in plan.turns if isinstance(t, AssistantTurn)]
            assert isinstance(assistant.parts[0], Reasoning)
            assert assistant.parts[-1] == last

    def test_reasoning_after_content_stays_where_reasoning_may_stand_anywhere(self) -> None:
        message = self._thinking_text_thinking("gemini", "gemini-3-pro-preview")
        plan = plan_messages(
            [Message.user("q"), message], target="gemini", model="gemini-3-pro-preview"
        )
        (assistant,) = [t for t in plan.turns if isinstance(t, AssistantTurn)]
        assert [type(p) for p in assistant.parts] == [Reasoning, Text, Reasoning]


class TestMedia:
    def _result_with(self, *files: FilePart) -> list[Message]:
        return [
            Message.user("q"),
            calling("a"),
            Message.tool_result("a", ContentOutput(parts=list(files))),
        ]

    @pytest.mark.parametrize(
        ("target", "model", "placement", "moved"),
        [
            ("anthropic", None, "native", False),
            ("openai-responses", None, "native", False),
            ("gemini", "gemini-3-pro-preview", "nested", False),
            ("gemini", "gemini-2.5-flash", "sibling", True),
            ("openai-chat", None, "user_message", True),
            ("mistral", None, "user_message", True),
            ("kimi", None, "user_message", True),
        ],
    )
    def test_result_media_placement(
        self, target: str, model: str | None, placement: str, moved: bool
    ) -> None:
        plan = plan_messages(
            self._result_with(FilePart.from_bytes(PNG)), target=target, model=model
        )
        (note,) = plan.diagnostics.media
        assert note.placement == placement
        injected = [t for t in plan.turns if isinstance(t, UserTurn) and t.injected]
        assert bool(injected) is moved
        if moved:
            (tool_turn,) = [t for t in plan.turns if isinstance(t, ToolTurn)]
            body = tool_turn.results[0].body
            assert isinstance(body, ContentBody)
            assert body.parts == [Text(f"See file {note.label}.")]
            assert injected[0].parts[0] == Text(f"This is file {note.label}:")
            assert isinstance(injected[0].parts[1], Media) and injected[0].parts[1].data == PNG

    def test_media_a_target_cannot_take_becomes_a_listed_note(self) -> None:
        plan = plan_messages(
            self._result_with(FilePart.from_bytes(GIF), FilePart.from_bytes(WAV)), target="kimi"
        )
        assert [n.placement for n in plan.diagnostics.media] == ["user_message", "text_note"]
        gemini3 = plan_messages(
            self._result_with(FilePart.from_bytes(WAV)), target="gemini", model="gemini-3-pro"
        )
        assert [n.placement for n in gemini3.diagnostics.media] == [
            "sibling"
        ]  # audio: not nestable

    def test_unavailable_attachment_bytes_become_a_note(self) -> None:
        ref = FilePart(attachment=AttachmentRef(sha256="ab" * 32, size=10), media_type="image/png")
        plan = plan_messages([Message.user("see", ref)], target="anthropic")
        (note,) = plan.diagnostics.media
        assert note.placement == "text_note" and "not available" in (note.reason or "")
        with_bytes = plan_messages(
            [Message.user("see", ref)], target="anthropic", attachments={"ab" * 32: PNG}
        )
        assert with_bytes.diagnostics.media[0].placement == "user"

    def test_uris_are_sent_only_where_the_target_fetches_them(self) -> None:
        image = FilePart.from_uri("https://example.com/cat.png")
        bucket = FilePart.from_uri("gs://bucket/cat.png")
        chat = plan_messages([Message.user(image, bucket)], target="openai-chat")
        assert [n.placement for n in chat.diagnostics.media] == ["user", "text_note"]
        gemini = plan_messages([Message.user(image, bucket)], target="gemini")
        assert [n.placement for n in gemini.diagnostics.media] == ["user", "user"]

    def test_only_needed_attachments_are_fetched(self) -> None:
        png = FilePart(attachment=AttachmentRef(sha256="11" * 32, size=1), media_type="image/png")
        wav = FilePart(attachment=AttachmentRef(sha256="22" * 32, size=1), media_type="audio/wav")
        old = FilePart(attachment=AttachmentRef(sha256="33" * 32, size=1), media_type="image/png")
        messages = stored(Message.user("old", old), Message.user("new", png, wav))
        compaction = Compaction(through_seq=1, summary="s", created_at=T0)
        assert attachments_needed(messages, target="anthropic", compaction=compaction) == {
            "11" * 32
        }
        assert attachments_needed(messages, target="gemini") == {"11" * 32, "22" * 32, "33" * 32}


def test_render_of_a_conversation_uses_its_lifecycles() -> None:
    from convstore import Conversation

    conv = Conversation(
        id="c", created_at=T0, updated_at=T0,
        messages=stored(Message.user("q"), calling("a")),
        tool_calls=[lifecycle("a", ToolCallStatus.CANCELLED)],
    )  # fmt: skip
    rendered = render(conv, "openai-chat")
    assert rendered.diagnostics.synthetic_results[0].reason == "cancelled"
    assert rendered.payload["messages"][-1]["content"] == SYNTHETIC_TEXT["cancelled"]
