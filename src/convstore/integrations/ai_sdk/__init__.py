"""AI SDK UI messages (the JSON ``useChat`` persists) to and from canonical messages.

`to_ui_messages` turns a stored conversation into AI SDK v5+ ``UIMessage`` dicts; the inverse,
`from_ui_messages`, turns what a client sends back into `Message` objects ready to append.

Invariants:

- Output is exactly the UIMessage format: ``{id, role, parts, metadata?}``, no other key, and
  an optional field is left out rather than set to ``null``. Every history passes the ``ai``
  package's ``safeValidateUIMessages`` and ``convertToModelMessages`` (tested under node).
- One UI message per user or system message; one assistant UI message per run of stored
  assistant and tool messages, each stored assistant message its own step (a ``step-start``
  part between steps), tool results folded into their call's tool part.
- Tool part ``state`` comes from the tool-call lifecycle: ``input-available`` while pending,
  ``output-available`` / ``output-error`` once answered; cancelled and interrupted calls are
  ``output-error``, so no call stays open mid-history.
- A ``content`` result is a list of UI text and file parts in ``output``, marked in
  ``metadata.aiPython.toolResultKinds[toolCallId] = "content"`` (vercel-labs/ai-python's
  convention), and rehydrates as a `ContentOutput`. ``json`` is the default and ``error`` rides
  the state, so neither is recorded.
- Files are application URLs from ``file_url`` (absolute, never ``data:``): base64 never
  reaches a UI message. Inbound ``data:`` URLs become inline `FilePart` bytes, which ``append``
  stores as blobs; ``resolve_url`` maps the application's own URLs back to stored attachments.
- UI message ids are the messages' `Message.id`, or ``"{conversation id}-{seq}"`` for a stored
  message without one. Inbound, a UI message's first message takes its id and the further
  messages it splits into take ``"{id}-{n}"``.
- Reasoning carries its replay artefacts as ``providerMetadata`` in the AI SDK providers'
  own keys (``anthropic.signature`` / ``redactedData``, ``openai.itemId`` /
  ``reasoningEncryptedContent``, ``google.thoughtSignature``), the rest under ``convstore``.

Its modules:

- ``_from_ui``: UI messages a client sends back, as canonical messages to append.
- ``_keys``: the metadata and ``providerMetadata`` keys both directions share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from convstore.errors import InvalidInputError
from convstore.integrations.ai_sdk._from_ui import from_ui_messages
from convstore.integrations.ai_sdk._keys import (
    ADAPTER_KEY,
    KINDS_KEY,
    OWN_KEY,
    FileUrl,
    JsonDict,
    ResolveUrl,
)
from convstore.model import (
    ContentOutput,
    Conversation,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallPart,
    ToolCallStatus,
    ToolOutput,
    ToolResultPart,
)

__all__ = ["FileUrl", "ResolveUrl", "from_ui_messages", "to_ui_messages"]

_CANCELLED: Final = "Tool call cancelled: no result was recorded."
_INTERRUPTED: Final = "Tool call interrupted: no result was recorded."


# -- canonical -> UI ----------------------------------------------------------------------------


def to_ui_messages(
    conversation: Conversation | Sequence[Message], *, file_url: FileUrl | None = None
) -> list[JsonDict]:
    """The conversation as AI SDK ``UIMessage`` dicts, oldest first.

    Args:
        conversation: a loaded `Conversation` (its lifecycles give the tool part states), or
            messages (then an unanswered call is open only in the last UI message).
        file_url: the absolute URL the application serves a stored (or inline) file at;
            required when the conversation holds such files. External ``uri`` files keep their
            URL.

    Raises:
        InvalidInputError: a file without ``file_url``, or ``file_url`` giving a relative or
            ``data:`` URL.
    """
    if isinstance(conversation, Conversation):
        messages, calls, cid = conversation.messages, conversation.tool_calls, conversation.id
    else:
        messages, calls, cid = list(conversation), None, None
    lifecycles = None if calls is None else {call.id: call for call in calls}
    out: list[JsonDict] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.role in (Role.SYSTEM, Role.USER):
            parts = [_ui_part(part, message, file_url) for part in message.parts]
            out.append(_ui_message(_ui_id(message, cid), message.role.value, parts, {}))
            index += 1
            continue
        if message.role is Role.TOOL:
            index += 1  # a result with no assistant turn before it has no tool part to join
            continue
        bubble = _Bubble(_ui_id(message, cid))
        while index < len(messages) and messages[index].role in (Role.ASSISTANT, Role.TOOL):
            current = messages[index]
            if current.role is Role.ASSISTANT:
                bubble.add_step(current, file_url)
            else:
                for result in current.tool_results:
                    bubble.answer(result.call_id, result.output, file_url)
            index += 1
        out.append(bubble.finish(lifecycles, last=index >= len(messages), file_url=file_url))
    return out


def _ui_id(message: Message, cid: str | None) -> str:
    if message.id is not None:
        return message.id
    conversation = message.conversation_id or cid
    if conversation is None or message.seq is None:
        raise InvalidInputError(
            "a message without an id must be stored (conversation and seq) to get a UI id"
        )
    return f"{conversation}-{message.seq}"


def _ui_message(ui_id: str, role: str, parts: list[JsonDict], kinds: JsonDict) -> JsonDict:
    message: JsonDict = {"id": ui_id, "role": role, "parts": parts}
    if kinds:
        message["metadata"] = {ADAPTER_KEY: {KINDS_KEY: kinds}}
    return message


@dataclass
class _Bubble:
    """One assistant UI message being built from a run of assistant and tool messages."""

    ui_id: str
    parts: list[JsonDict] = field(default_factory=list)
    tools: dict[str, JsonDict] = field(default_factory=dict)
    kinds: JsonDict = field(default_factory=dict)
    steps: int = 0

    def add_step(self, message: Message, file_url: FileUrl | None) -> None:
        if self.steps:
            self.parts.append({"type": "step-start"})
        self.steps += 1
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                if part.id in self.tools:
                    continue  # a repeated call id: the first call stands for it
                tool = _tool_part(part)
                self.tools[part.id] = tool
                self.parts.append(tool)
            elif isinstance(part, TextPart) and not part.text:
                continue
            else:
                self.parts.append(_ui_part(part, message, file_url))

    def answer(self, call_id: str, output: ToolOutput, file_url: FileUrl | None) -> None:
        """A stored result: the first one for a call of this turn wins."""
        tool = self.tools.get(call_id)
        if tool is not None and tool["state"] == "input-available":
            self.settle(call_id, output, file_url)

    def settle(self, call_id: str, output: ToolOutput, file_url: FileUrl | None) -> None:
        _set_output(self.tools[call_id], output, file_url)
        if isinstance(output, ContentOutput):
            self.kinds[call_id] = "content"
        else:
            self.kinds.pop(call_id, None)

    def finish(
        self, lifecycles: dict[str, ToolCall] | None, *, last: bool, file_url: FileUrl | None
    ) -> JsonDict:
        """The UI message; the lifecycles (when known) decide every tool part's state."""
        for call_id, tool in self.tools.items():
            call = None if lifecycles is None else lifecycles.get(call_id)
            if call is None:
                if tool["state"] == "input-available" and not last:
                    _set_error(tool, _INTERRUPTED)  # messages alone: a later turn came
            elif call.output is not None:
                self.settle(call_id, call.output, file_url)
            else:
                self.kinds.pop(call_id, None)
                _apply_lifecycle(tool, call)
        return _ui_message(self.ui_id, "assistant", self.parts, self.kinds)


def _tool_part(part: ToolCallPart) -> JsonDict:
    tool: JsonDict = {
        "type": f"tool-{part.name}",
        "toolCallId": part.id,
        "state": "input-available",
        "input": dict(part.arguments),
    }
    own = _drop_none(
        {
            "providerId": part.provider_id,
            "providerDetails": part.provider_details,
            "rawArguments": part.raw_arguments,
        }
    )
    if own:
        tool["callProviderMetadata"] = {OWN_KEY: own}
    return tool


def _apply_lifecycle(tool: JsonDict, call: ToolCall) -> None:
    """The state of a call without a result on its path."""
    match call.status:
        case ToolCallStatus.CANCELLED:
            _set_error(tool, _CANCELLED)
        case ToolCallStatus.INTERRUPTED:
            _set_error(tool, _INTERRUPTED)
        case ToolCallStatus.PENDING | ToolCallStatus.COMPLETE | ToolCallStatus.ERROR:
            _reset(tool)  # complete and error always carry their output


def _reset(tool: JsonDict) -> None:
    for key in ("output", "errorText"):
        tool.pop(key, None)
    tool["state"] = "input-available"


def _set_error(tool: JsonDict, text: str) -> None:
    _reset(tool)
    tool["state"] = "output-error"
    tool["errorText"] = text


def _set_output(tool: JsonDict, output: ToolOutput, file_url: FileUrl | None) -> None:
    match output:
        case ErrorOutput():
            _set_error(tool, output.message)
        case JsonOutput():
            _reset(tool)
            tool["state"] = "output-available"
            tool["output"] = output.value
        case ContentOutput():
            _reset(tool)
            tool["state"] = "output-available"
            tool["output"] = [_content_part(part, file_url) for part in output.parts]


def _content_part(part: TextPart | FilePart, file_url: FileUrl | None) -> JsonDict:
    if isinstance(part, TextPart):
        return _text_part(part)
    return _file_part(part, file_url)


def _ui_part(part: Part, message: Message, file_url: FileUrl | None) -> JsonDict:
    match part:
        case TextPart():
            return _text_part(part)
        case FilePart():
            return _file_part(part, file_url)
        case ThinkingPart():
            reasoning: JsonDict = {"type": "reasoning", "text": part.text}
            metadata = _thinking_metadata(part, message)
            if metadata:
                reasoning["providerMetadata"] = metadata
            return reasoning
        case ToolCallPart():
            return _tool_part(part)
        case ToolResultPart():
            raise AssertionError("tool results are folded into their call's tool part")


def _text_part(part: TextPart) -> JsonDict:
    text: JsonDict = {"type": "text", "text": part.text}
    if part.provider_details:
        text["providerMetadata"] = {OWN_KEY: {"providerDetails": part.provider_details}}
    return text


def _file_part(part: FilePart, file_url: FileUrl | None) -> JsonDict:
    if part.attachment is None and part.data is None and part.uri is not None:
        url = part.uri
    elif file_url is None:
        raise InvalidInputError("the conversation holds files: pass file_url= to serve them")
    else:
        url = file_url(part)
        scheme = urlsplit(url).scheme.lower() if isinstance(url, str) else ""
        if not scheme or scheme == "data":
            raise InvalidInputError(
                f"file_url must return an absolute URL that is not a data: URL, got {url!r:.80}"
            )
    ui: JsonDict = {"type": "file", "mediaType": part.media_type, "url": url}
    if part.filename is not None:
        ui["filename"] = part.filename
    return ui


def _thinking_metadata(part: ThinkingPart, message: Message) -> JsonDict:
    provider = part.provider or message.provider
    metadata: JsonDict = {}
    if part.signature is not None:
        key, name = (
            ("google", "thoughtSignature") if provider == "gemini" else ("anthropic", "signature")
        )
        metadata[key] = {name: part.signature}
    if part.redacted_data is not None:
        metadata.setdefault("anthropic", {})["redactedData"] = part.redacted_data
    openai = _drop_none(
        {"itemId": part.reasoning_id, "reasoningEncryptedContent": part.encrypted_content}
    )
    if openai:
        metadata["openai"] = openai
    own = _drop_none(
        {
            "provider": provider,
            "model": part.model or message.model,
            "summary": part.summary,
            "ridesOn": part.rides_on,
            "providerDetails": part.provider_details,
        }
    )
    if own:
        metadata[OWN_KEY] = own
    return metadata


def _drop_none(values: Mapping[str, Any]) -> JsonDict:
    return {key: value for key, value in values.items() if value is not None}
