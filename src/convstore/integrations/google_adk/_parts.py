"""google-adk events → canonical convstore messages.

Invariants:

- An event's content maps part by part, in order: text → `TextPart` (``thought`` text →
  `ThinkingPart`), ``inline_data`` → an inline `FilePart` (a blob once appended),
  ``file_data`` → a `FilePart` by URI, ``function_call`` → `ToolCallPart`,
  ``function_response`` → `ToolResultPart` (files it carries make a `ContentOutput`).
- Roles follow the content: ``model`` content is one ``assistant`` message; ``user`` content is
  a run of ``user`` and ``tool`` messages, one per role change, so function responses are tool
  results. An event without content is one empty message (``user`` when the user wrote it,
  ``assistant`` otherwise) that only carries the native record.
- Sub-messages are named ``<key>~<n>`` (the key is the event id unless that is taken); the
  caller names the last one ``<key>``.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from convstore.errors import ConvstoreError
from convstore.integrations._core.native_blobs import InlineFile
from convstore.integrations._core.role_runs import RoleRuns
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
    Usage,
)

__all__ = ["event_messages"]


def event_messages(event: Event, key: str) -> list[Message]:
    """The canonical messages of ``event``, named after ``key``.

    The last one's id and native record are the caller's to set.
    """
    content = event.content
    model = (content is not None and content.role == "model") or (
        content is not None and content.role is None and event.author != "user"
    )
    runs = RoleRuns()
    for part in (content.parts or []) if content is not None else []:
        mapped = _part(part, assistant=model, event=event, index=len(runs))
        if mapped is not None:
            runs.add(mapped[0], [mapped[1]])
    if not runs:
        runs.add(Role.USER if event.author == "user" else Role.ASSISTANT, [])
    usage = _usage(event.usage_metadata)
    messages = []
    for message_id, role, parts in runs.named(key):
        assistant = role == Role.ASSISTANT
        messages.append(
            Message(
                role=role,
                parts=parts,
                id=message_id,
                model=event.model_version[:255] if assistant and event.model_version else None,
                usage=usage if assistant else None,
            )
        )
    return messages


def _part(
    part: types.Part, *, assistant: bool, event: Event, index: int
) -> tuple[Role, Part] | None:
    role = Role.ASSISTANT if assistant else Role.USER
    if part.function_call is not None:
        call = part.function_call
        return Role.ASSISTANT, ToolCallPart(
            id=call.id or f"{event.id}:call:{index}:{call.name}",
            name=call.name or "unknown",
            arguments=_json_object(call.args),
        )
    if part.function_response is not None:
        response = part.function_response
        return Role.TOOL, ToolResultPart(
            call_id=response.id or f"{event.id}:result:{index}:{response.name}",
            name=response.name,
            output=_output(response),
        )
    if part.text is not None:
        if part.thought and assistant:
            return role, ThinkingPart(text=part.text)
        return role, TextPart(text=part.text)
    file = _file(part)
    if file is not None:
        return role, file
    return None


def _file(part: types.Part | types.FunctionResponsePart) -> FilePart | None:
    blob = part.inline_data
    if blob is not None and blob.data is not None:
        return InlineFile(blob.data, blob.mime_type).part()
    data = part.file_data
    if data is not None and data.file_uri:
        try:
            return FilePart.from_uri(data.file_uri, media_type=data.mime_type)
        except (ConvstoreError, ValueError):
            return None  # a URI convstore will not keep as a reference stays native-only
    return None


def _output(response: types.FunctionResponse) -> ToolOutput:
    payload = _json_object(response.response)
    files = [f for p in response.parts or [] if (f := _file(p)) is not None]
    if files:
        text = TextPart(text=json.dumps(payload, ensure_ascii=False))
        return ContentOutput(parts=[text, *files])
    if set(payload) == {"error"} and isinstance(payload["error"], str):
        return ErrorOutput(message=payload["error"] or "error")
    return JsonOutput(value=payload)


def _json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {}
    try:
        return dict(json.loads(json.dumps(value, default=str)))
    except (TypeError, ValueError):
        return {}


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage | None:
    if metadata is None:
        return None
    return Usage(
        input_tokens=max(metadata.prompt_token_count or 0, 0),
        output_tokens=max(metadata.candidates_token_count or 0, 0)
        + max(metadata.thoughts_token_count or 0, 0),
        cached_tokens=max(metadata.cached_content_token_count or 0, 0),
        reasoning_tokens=max(metadata.thoughts_token_count or 0, 0),
    )
