"""Planning: any stored history -> a `Plan` every encoder can map without repairs.

This is where history is repaired, once, for every target. The passes, in order:

1. compaction: the summary replaces the compacted range (`convstore.transcript.compaction`),
   then an optional ``last=N`` window (`convstore.transcript.window`);
2. pairing (`convstore.transcript.pairing`): each call's first stored result wins wherever it
   was stored; later results for the same call are duplicates; results whose call is not in
   the render are orphans (dropped, or turned into user text with ``orphan_results="text"``);
   calls without a result get a synthetic, neutrally worded error result whose reason comes
   from the call's lifecycle;
3. placement: results move right after their call's assistant turn, in call order;
4. projection: ids and tool names are projected for the target (`IdProjector`); tool
   definitions get the same name projection as their calls (`Plan.tools`);
5. reasoning policy (`ReasoningDecisions`: signed reasoning replayed once, and only where the
   target takes it in a message) and media placement (`MediaResolver`);
6. shape: empty or whitespace-only text, empty turns and empty results never reach an encoder;
   an assistant turn that follows one without calls is merged into it (so a call turn always
   follows a user or tool turn); a target that needs a user turn first gets a neutral one.

Invariants: deterministic (same input, same plan); pure (no I/O: attachment bytes are passed
in); every change to what the provider sees is in ``plan.diagnostics``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from convstore.capabilities import Capabilities, capabilities_for, is_text_document
from convstore.model import (
    Compaction,
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolDefinition,
    ToolOutput,
    ToolResultPart,
)
from convstore.transcript.compaction import apply_compaction
from convstore.transcript.diagnostics import Diagnostics, DroppedResult, SyntheticResult
from convstore.transcript.id_projection import IdProjector
from convstore.transcript.media_placement import MediaResolver
from convstore.transcript.pairing import Pairing
from convstore.transcript.plan import (
    AssistantPart,
    AssistantTurn,
    Call,
    ContentBody,
    ErrorBody,
    JsonBody,
    Media,
    Plan,
    Reasoning,
    Result,
    ResultBody,
    Text,
    ToolSpec,
    ToolTurn,
    Turn,
    UserPart,
    UserTurn,
    is_blank,
)
from convstore.transcript.reasoning import ReasoningDecisions, ReasoningPolicy
from convstore.transcript.window import apply_window

__all__ = ["OrphanPolicy", "attachments_needed", "plan_messages"]

OrphanPolicy = Literal["drop", "text"]

SyntheticReason = Literal["cancelled", "interrupted", "pending", "missing"]

SYNTHETIC_TEXT: Final[dict[SyntheticReason, str]] = {
    "cancelled": "The tool call was cancelled before it returned a result.",
    "interrupted": "The tool call was interrupted before it returned a result.",
    "pending": "The tool call has not returned a result yet.",
    "missing": "No result was recorded for this tool call.",
}
"""Neutral wording of synthetic results, by reason."""

SUMMARY_PREFIX: Final = "Summary of the earlier conversation:\n"
CONTINUATION_TEXT: Final = "[The conversation continues.]"
EMPTY_RESULT_TEXT: Final = "(no output)"


# Enum members bound once: ``Role.USER`` is a class-attribute lookup through the enum's
# metaclass, which the planner would otherwise pay per message on every render.
_SYSTEM: Final = Role.SYSTEM
_USER: Final = Role.USER
_ASSISTANT: Final = Role.ASSISTANT
_TOOL: Final = Role.TOOL


class _Planner:
    def __init__(
        self,
        *,
        caps: Capabilities,
        model: str | None,
        diagnostics: Diagnostics,
        attachments: Mapping[str, bytes],
        reasoning: ReasoningPolicy,
        orphans: OrphanPolicy,
        statuses: Mapping[str, ToolCallStatus],
    ) -> None:
        self.caps = caps
        self.model = model
        self.diagnostics = diagnostics
        self.reasoning = ReasoningDecisions(caps, model, reasoning, diagnostics.reasoning)
        self.orphans = orphans
        self.statuses = statuses
        self.ids = IdProjector(caps)
        self.media = MediaResolver(caps, attachments, diagnostics)
        self.emitted: set[str] = set()
        self.turns: list[Turn] = []

    def run(
        self, messages: Sequence[Message], summary: str | None, tool_names: Sequence[str] = ()
    ) -> list[str]:
        system: list[str] = []
        conversation: list[Message] = []
        for message in messages:
            if message.role is not _SYSTEM:
                conversation.append(message)
                continue
            if conversation:
                self.diagnostics.notes.append(
                    f"system message (seq {message.seq}) moved to the system prompt"
                )
            system.extend(
                p.text for p in message.parts if isinstance(p, TextPart) and not is_blank(p.text)
            )
        pairing = Pairing(conversation, self.diagnostics)
        self.ids.reserve(pairing.call_ids, [*pairing.names, *tool_names])
        if summary:
            self.turns.append(UserTurn([Text(SUMMARY_PREFIX + summary)]))
        last_user = pairing.last_user
        for index, message in enumerate(conversation):
            role = message.role
            if role is _ASSISTANT:
                self._assistant(message, pairing, index < last_user)
            elif role is _TOOL:
                self._tool(message, pairing)
            else:
                assert role is _USER  # system messages were set aside above
                self._user(message)
        if conversation and not any(_sends_something(turn) for turn in self.turns):
            # Every message was blank, an orphan result or reasoning no message follows (which
            # encoders may not replay alone): no provider takes a request without a message,
            # so a neutral one stands in.
            self.turns.append(UserTurn([Text(CONTINUATION_TEXT)]))
            self.diagnostics.notes.append(
                f"nothing in the history could be sent: added {CONTINUATION_TEXT!r}"
            )
        self._ensure_user_first()
        return system

    # -- turns --------------------------------------------------------------------------------

    def _user(self, message: Message) -> None:
        parts: list[UserPart] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                if not is_blank(part.text):
                    parts.append(Text(part.text, part.provider_details))
            elif isinstance(part, FilePart):
                parts.append(self.media.in_message(part, message.seq, assistant=False))
        if parts:
            self.turns.append(UserTurn(parts))

    def _assistant(self, message: Message, pairing: Pairing, user_after: bool) -> None:
        parts: list[AssistantPart] = []
        calls: list[Call] = []
        same_provider = message.provider == self.caps.family
        previous = self.turns[-1] if self.turns else None
        # A call turn must follow a user or tool turn (Gemini): a message after an assistant turn
        # without calls joins it, so where reasoning may stand depends on that turn too.
        joined = (
            previous
            if isinstance(previous, AssistantTurn)
            and not any(isinstance(p, Call) for p in previous.parts)
            else None
        )
        # Content counts as after reasoning once reasoning was seen (after_content implies
        # seen_reasoning), so each content part sets after_content to seen_reasoning.
        seen_reasoning, after_content = (
            _reasoning_run(joined.parts) if joined is not None else (False, False)
        )
        # Dispatch on the kind string: a class-pattern `match` costs an isinstance per case,
        # for every part of every message of a render.
        for part in message.parts:
            kind = part.kind
            if kind == "tool_call":
                assert isinstance(part, ToolCallPart)
                if part.id in self.emitted:
                    self.diagnostics.notes.append(
                        f"call id {part.id!r} appears twice; its repeat (seq {message.seq}) "
                        "was left out"
                    )
                    continue
                call = self._call(part, same_provider)
                parts.append(call)
                calls.append(call)
                after_content = seen_reasoning
            elif kind == "text":
                assert isinstance(part, TextPart)
                if not is_blank(part.text):
                    parts.append(Text(part.text, part.provider_details))
                    after_content = seen_reasoning
            elif kind == "thinking":
                assert isinstance(part, ThinkingPart)
                kept = self.reasoning.decide(part, message.seq, after_content=after_content)
                if kept is not None:
                    parts.append(kept)
                    if isinstance(kept, Reasoning):
                        seen_reasoning = True
                    else:
                        after_content = seen_reasoning
            elif kind == "file":
                assert isinstance(part, FilePart)
                parts.append(self.media.in_message(part, message.seq, assistant=True))
                after_content = seen_reasoning
            else:
                raise AssertionError(f"{kind} parts are not allowed in assistant messages")
        if not parts:
            return
        if joined is not None:
            joined.parts.extend(parts)
        else:
            self.turns.append(AssistantTurn(parts, message.provider, message.model))
        if calls:
            self._results(calls, pairing, user_after)

    def _call(self, part: ToolCallPart, same_provider: bool) -> Call:
        self.emitted.add(part.id)
        wire_name = self.ids.name(part.name)
        wire_id = self.ids.call_id(part.id, wire_name)
        self.diagnostics.canonical_call_ids.append(part.id)
        # Positional: one per call of the history, on every render (keywords cost more).
        return Call(
            part.id,
            wire_id,
            part.name,
            wire_name,
            part.arguments,
            part.raw_arguments,
            part.provider_id,
            part.provider_details,
            same_provider,
        )

    def _results(self, calls: list[Call], pairing: Pairing, user_after: bool) -> None:
        results: list[Result] = []
        moved: list[Media | Text] = []
        for call in calls:
            stored = pairing.results.get(call.call_id)
            if stored is not None:
                body = self._body(stored.part.output, stored.seq, call.call_id, moved)
                results.append(Result(call, body, synthetic=stored.part.synthetic))
                continue
            reason = self._synthetic_reason(call.call_id, user_after)
            self.diagnostics.synthetic_results.append(
                SyntheticResult(call.call_id, call.wire_id, reason)
            )
            results.append(Result(call, ErrorBody(SYNTHETIC_TEXT[reason]), synthetic=True))
        self.turns.append(ToolTurn(results))
        if moved:
            self.turns.append(UserTurn(list(moved), injected=True))

    def _synthetic_reason(self, call_id: str, user_after: bool) -> SyntheticReason:
        match self.statuses.get(call_id):
            case ToolCallStatus.CANCELLED:
                return "cancelled"
            case ToolCallStatus.INTERRUPTED:
                return "interrupted"
            case ToolCallStatus.PENDING | None if user_after:
                return "interrupted"
            case ToolCallStatus.PENDING:
                return "pending"
            case _:
                return "missing"

    def _body(
        self, output: ToolOutput, seq: int | None, call_id: str, moved: list[Media | Text]
    ) -> ResultBody:
        kind = output.kind
        if kind == "json":
            assert isinstance(output, JsonOutput)
            if output.value == "":
                self.diagnostics.notes.append(
                    f"empty result of call {call_id!r} sent as {EMPTY_RESULT_TEXT!r}"
                )
                return JsonBody(EMPTY_RESULT_TEXT)
            return JsonBody(output.value)
        if kind == "error":
            assert isinstance(output, ErrorOutput)
            message = output.message
            return ErrorBody(message if not is_blank(message) else "The tool reported an error.")
        assert isinstance(output, ContentOutput)
        parts: list[Text | Media] = []
        for part in output.parts:
            if isinstance(part, TextPart):
                if not is_blank(part.text):
                    parts.append(Text(part.text))
            else:
                parts.append(self.media.in_result(part, seq, call_id, moved))
        return ContentBody(parts or [Text(EMPTY_RESULT_TEXT)])

    def _tool(self, message: Message, pairing: Pairing) -> None:
        for part in message.parts:
            if not isinstance(part, ToolResultPart) or part.call_id in self.emitted:
                continue  # answered calls got their results right after the call
            if part.call_id in pairing.call_ids:
                continue  # its call comes later; the result moves there
            if not pairing.is_first(part):
                continue  # a repeat of an orphan: recorded as a duplicate
            action = self.orphans
            self.diagnostics.dropped_results.append(
                DroppedResult(
                    part.call_id, message.seq, "orphan", "dropped" if action == "drop" else "text"
                )
            )
            if action == "text":
                moved: list[Media | Text] = []
                body = self._body(part.output, message.seq, part.call_id, moved)
                text = _orphan_text(part, body)
                self.turns.append(UserTurn([Text(text), *moved]))

    def tools(self, definitions: Sequence[ToolDefinition]) -> list[ToolSpec]:
        """The definitions under the names their calls were projected to (first one wins)."""
        specs: dict[str, ToolSpec] = {}
        for definition in definitions:
            if definition.name in specs:
                self.diagnostics.notes.append(
                    f"tool {definition.name!r} is defined twice; the first definition was sent"
                )
                continue
            specs[definition.name] = ToolSpec(definition, self.ids.name(definition.name))
        return list(specs.values())

    def _ensure_user_first(self) -> None:
        if self.caps.requires_user_first and not (
            self.turns and isinstance(self.turns[0], UserTurn)
        ):
            self.turns.insert(0, UserTurn([Text(CONTINUATION_TEXT)]))
            self.diagnostics.notes.append(
                f"{self.caps.target} needs a user message first: added {CONTINUATION_TEXT!r}"
            )


def _sends_something(turn: Turn) -> bool:
    """Whether every encoder sends ``turn`` (reasoning alone in a turn may be dropped)."""
    if isinstance(turn, AssistantTurn):
        return any(not isinstance(part, Reasoning) for part in turn.parts)
    return True


def _reasoning_run(parts: list[AssistantPart]) -> tuple[bool, bool]:
    """Whether ``parts`` hold replayed reasoning, and content after it."""
    seen = False
    for part in parts:
        if isinstance(part, Reasoning):
            seen = True
        elif seen:
            return True, True
    return seen, False


def _orphan_text(part: ToolResultPart, body: ResultBody) -> str:
    match body:
        case JsonBody(value=value):
            content = value if isinstance(value, str) else repr(value)
        case ErrorBody(message=message):
            content = f"error: {message}"
        case ContentBody(parts=parts):
            content = "\n".join(p.text for p in parts if isinstance(p, Text))
    tool = part.name or "call"
    return f"[Result of tool {tool} {part.call_id!r}, whose call is not shown:]\n{content}"


def plan_messages(
    messages: Sequence[Message],
    *,
    target: str,
    model: str | None = None,
    tool_calls: Sequence[ToolCall] = (),
    compaction: Compaction | None = None,
    attachments: Mapping[str, bytes] | None = None,
    reasoning: ReasoningPolicy = "drop",
    orphan_results: OrphanPolicy = "drop",
    tools: Sequence[ToolDefinition] = (),
    last: int | None = None,
) -> Plan:
    """Plan ``messages`` for ``target``/``model``.

    Args:
        messages: the history, oldest first.
        target: a render target (see `convstore.capabilities.TARGETS`).
        model: the model the request is for; selects the capabilities row and decides which
            signed reasoning may be replayed.
        tool_calls: lifecycle records (from a loaded `Conversation`) that word synthetic results.
        compaction: the compaction record to apply, if any.
        attachments: bytes of stored attachments by SHA-256 (what the store fetched).
        reasoning: foreign reasoning is dropped (``"drop"``) or sent as text (``"text"``).
        orphan_results: results whose call is not rendered are dropped or sent as user text.
        tools: tool definitions to send, projected like the calls (`Plan.tools`).
        last: render only the newest ``last`` non-system messages (`apply_window`).
    """
    caps = capabilities_for(target, model)
    diagnostics = Diagnostics(target=target, model=model)
    view = apply_compaction(messages, compaction)
    diagnostics.compaction = view.note
    planned = view.messages
    if last is not None:
        window = apply_window(planned, last, summary=bool(view.summary))
        diagnostics.window = window.note
        planned = window.messages
    planner = _Planner(
        caps=caps,
        model=model,
        diagnostics=diagnostics,
        attachments=attachments or {},
        reasoning=reasoning,
        orphans=orphan_results,
        statuses={call.id: call.status for call in tool_calls},
    )
    system = planner.run(planned, view.summary, [t.name for t in tools])
    specs = planner.tools(tools)
    diagnostics.id_map = planner.ids.id_map
    diagnostics.name_map = planner.ids.name_map
    return Plan(
        target=target,
        model=model,
        capabilities=caps,
        diagnostics=diagnostics,
        system=system,
        turns=planner.turns,
        tools=specs,
    )


def attachments_needed(
    messages: Sequence[Message],
    *,
    target: str,
    model: str | None = None,
    compaction: Compaction | None = None,
    last: int | None = None,
) -> set[str]:
    """SHA-256 of every stored attachment a render of ``messages`` may send inline.

    The store fetches exactly these (concurrently) before rendering; files the target cannot
    take, files compacted away or outside the window, are not fetched. Text documents are
    fetched for every target: where there is no native slot they are sent decoded.
    """
    caps = capabilities_for(target, model)
    view = apply_compaction(messages, compaction)
    planned = view.messages
    if last is not None:
        planned = apply_window(planned, last, summary=bool(view.summary)).messages
    needed: set[str] = set()
    for message in planned:
        needed.update(
            f.attachment.sha256
            for f in message.files
            if f.attachment is not None
            and (caps.inlines(f.media_type) or is_text_document(f.media_type))
        )
    return needed
