"""Parsing OpenAI Responses request histories and response bodies into canonical messages.

The wire rules and their sources are stated in `convstore.providers.openai_responses` (the encoder).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import JsonValue

from convstore.model import (
    ContentOutput,
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
)
from convstore.providers._openai import AUDIO_FORMATS, FILE_ID_PREFIX
from convstore.providers._parsing import (
    CallIds,
    Json,
    decode_base64,
    inline_file,
    inline_file_data,
    parse_arguments,
    parse_data_url,
)
from convstore.providers._usage import with_usage

__all__ = [
    "PROVIDER",
    "TARGET",
    "annotation_problem",
    "parse",
    "parse_response",
]

TARGET: Final = "openai-responses"
"""Render target and parse source name."""

PROVIDER: Final = "openai"
"""Provider family recorded on parsed assistant messages and reasoning."""


_PHASES: Final = frozenset({"commentary", "final_answer"})

_ANNOTATION_FIELDS: Final[dict[str, dict[str, type]]] = {
    # Every field of each ``output_text`` annotation, all required, as the input type declares
    # them (``ResponseOutputTextParam.annotations``); its output twin has the same four shapes.
    "file_citation": {"file_id": str, "filename": str, "index": int},
    "url_citation": {"url": str, "title": str, "start_index": int, "end_index": int},
    "container_file_citation": {
        "container_id": str,
        "file_id": str,
        "filename": str,
        "start_index": int,
        "end_index": int,
    },
    "file_path": {"file_id": str, "index": int},
}


# -- parse ------------------------------------------------------------------------------------


def parse(payload: Mapping[str, Any]) -> list[Message]:
    """Canonical messages from a Responses request body (``input`` and ``instructions``).

    Histories are accepted as stored: calls without outputs, outputs without calls, repeated
    outputs and an assistant-first history all parse. ``model`` is kept as provenance.
    """
    root = Json(payload, TARGET)
    root.object()
    history = _History(root.str_or_none("model"))
    # A string is shorthand for one message; a response object echoes prompt-template
    # instructions as a list of input items, so both keys take both forms.
    for key, role in (("instructions", Role.SYSTEM), ("input", Role.USER)):
        node = root.get(key)
        if node is None:
            continue
        if isinstance(node.value, str):
            if node.value:
                history.add_message(Message(role=role, parts=[TextPart(text=node.value)]))
            continue
        for item in node.items():
            history.add_item(item)
    return history.finish()


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a response body, with the token usage it reports."""
    return with_usage(_response_message(body), body, TARGET)


def _response_message(body: Mapping[str, Any]) -> Message:
    """The assistant `Message` of a Responses response body: its ``output`` items, in order."""
    root = Json(body, TARGET)
    root.object()
    model = root.str_or_none("model")
    reader = _ItemReader(model, CallIds("call"))
    parts: list[Part] = []
    for item in root.require("output").items():
        part_list = reader.assistant_parts(item)
        if part_list is None:
            raise item.fail(f"unexpected output item of type {_item_type(item)!r}")
        parts.extend(part_list)
    return Message(
        role=Role.ASSISTANT,
        parts=parts,
        provider=PROVIDER,
        model=model,
        provider_details=_response_details(root),
    )


def _response_details(root: Json) -> dict[str, JsonValue] | None:
    """What a response says about itself that a later reader may want (id, status, why cut)."""
    details: dict[str, JsonValue] = {}
    response_id = root.str_or_none("id")
    if response_id is not None:
        details["response_id"] = response_id
    status = root.str_or_none("status")
    if status is not None:
        details["status"] = status
    incomplete = root.get("incomplete_details")
    reason = None if incomplete is None else incomplete.str_or_none("reason")
    if reason is not None:
        details["incomplete_reason"] = reason
    return details or None


class _History:
    """Folds a flat item list into canonical messages (see the module invariants)."""

    def __init__(self, model: str | None) -> None:
        self._model = model
        self._reader = _ItemReader(model, CallIds("call"))
        self._messages: list[Message] = []
        self._assistant: list[Part] = []
        self._results: list[Part] = []

    def add_item(self, item: Json) -> None:
        parts = self._reader.assistant_parts(item)
        if parts is not None:
            self._flush_results()
            self._assistant.extend(parts)
            return
        result = self._reader.result_part(item)
        if result is not None:
            self._flush_assistant()
            self._results.append(result)
            return
        self.add_message(self._reader.input_message(item))

    def add_message(self, message: Message) -> None:
        self._flush_assistant()
        self._flush_results()
        self._messages.append(message)

    def finish(self) -> list[Message]:
        self._flush_assistant()
        self._flush_results()
        return self._messages

    def _flush_assistant(self) -> None:
        if self._assistant:
            self._messages.append(
                Message(
                    role=Role.ASSISTANT,
                    parts=self._assistant,
                    provider=PROVIDER,
                    model=self._model,
                )
            )
            self._assistant = []

    def _flush_results(self) -> None:
        if self._results:
            self._messages.append(Message(role=Role.TOOL, parts=self._results))
            self._results = []


def _item_type(item: Json) -> str | None:
    item.object()
    return item.str_or_none("type")


def _is_message(item: Json) -> bool:
    # ``type`` is optional on input messages (EasyInputMessage); a ``role`` makes one.
    kind = _item_type(item)
    return kind == "message" or (kind is None and item.has("role"))


class _ItemReader:
    """Reads single items; owns the canonical call ids and tool names of one parse."""

    def __init__(self, model: str | None, ids: CallIds) -> None:
        self._model = model
        self._ids = ids

    def assistant_parts(self, item: Json) -> list[Part] | None:
        """The parts of an assistant-side item, or ``None`` when the item is not one."""
        match _item_type(item):
            case "reasoning":
                return [self._reasoning(item)]
            case "function_call":
                return [self._function_call(item)]
            case _ if _is_message(item) and item.require("role").string() == "assistant":
                return list(_assistant_content(item))
            case _:
                return None

    def result_part(self, item: Json) -> ToolResultPart | None:
        """The result of a ``function_call_output`` item, or ``None`` for other items."""
        if _item_type(item) != "function_call_output":
            return None
        provider_id = _non_empty(item.require("call_id"))
        canonical = self._ids.result(provider_id)
        return ToolResultPart(
            call_id=canonical,
            output=_tool_output(item.require("output")),
            name=self._ids.name_of(canonical),
        )

    def input_message(self, item: Json) -> Message:
        """A user or system message item (assistant items are read by `assistant_parts`)."""
        if not _is_message(item):
            raise item.fail(f"unsupported input item type {_item_type(item)!r}")
        role = item.require("role")
        match role.string():
            case "user":
                return Message(role=Role.USER, parts=list(_content_parts(item.require("content"))))
            case "system" | "developer" as wire_role:
                return Message(
                    role=Role.SYSTEM,
                    parts=list(_system_content(item.require("content"))),
                    provider_details={"role": wire_role} if wire_role == "developer" else None,
                )
            case other:
                raise role.fail(f"unknown role {other!r}")

    def _reasoning(self, item: Json) -> ThinkingPart:
        summary = _texts(item.get("summary"))
        raw = _texts(item.get("content"))
        return ThinkingPart(
            text="\n\n".join(summary or raw or []),
            provider=PROVIDER,
            model=self._model,
            reasoning_id=_non_empty(item.require("id")),
            encrypted_content=item.str_or_none("encrypted_content"),
            summary=summary,
            provider_details={"content": list(raw)} if raw else None,
        )

    def _function_call(self, item: Json) -> ToolCallPart:
        call_id = _non_empty(item.require("call_id"))
        name = _non_empty(item.require("name"))
        arguments, raw = parse_arguments(item.get("arguments"))
        item_id = item.str_or_none("id")
        details: dict[str, JsonValue] | None = {"item_id": item_id} if item_id else None
        return self._ids.call_part(call_id, name, arguments, raw, details)


def _non_empty(node: Json) -> str:
    text = node.string()
    if not text:
        raise node.fail("must not be empty")
    return text


def _texts(node: Json | None) -> list[str] | None:
    """The ``text`` of each entry of a summary / reasoning-content list."""
    if node is None:
        return None
    return [entry.require("text").string() for entry in node.items()]


def _assistant_content(item: Json) -> Iterator[TextPart | FilePart]:
    """An assistant message's parts; text keeps the item id, phase and annotations."""
    item_details: dict[str, JsonValue] = {}
    item_id = item.str_or_none("id")
    if item_id:
        item_details["item_id"] = item_id
    phase = item.str_or_none("phase")
    if phase is not None:
        item_details["phase"] = phase
    content = item.require("content")
    if isinstance(content.value, str):
        yield TextPart(text=content.value, provider_details=item_details or None)
        return
    for entry in content.items():
        part = _content_part(entry)
        if isinstance(part, FilePart):
            yield part
            continue
        details = dict(item_details)
        if _item_type(entry) == "refusal":
            details["refusal"] = True
        annotations = entry.get("annotations")
        if annotations is not None and annotations.array():
            details["annotations"] = _annotations(annotations)
        yield TextPart(text=part.text, provider_details=details or None)


def _annotations(node: Json) -> list[JsonValue]:
    """An ``annotations`` array, each entry checked against its type's declared fields.

    The API hands out only these shapes and refuses any other on replay, so another shape is
    malformed rather than kept to fail later. Extra keys are kept (a newer API may add some);
    the encoder sends only the declared ones.
    """
    for entry in node.items():
        problem = annotation_problem(entry.value)
        if problem is not None:
            raise entry.fail(problem)
    return list(node.array())


def annotation_problem(value: Any) -> str | None:
    """Why ``value`` is not an annotation the Responses API takes back; ``None`` when it is."""
    if not isinstance(value, dict):
        return "an annotation must be an object"
    kind = value.get("type")
    fields = _ANNOTATION_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return f"unknown annotation type {kind!r}"
    for name, expected in fields.items():
        field = value.get(name)
        if not isinstance(field, expected) or isinstance(field, bool):
            what = "an integer" if expected is int else "a string"
            return f"a {kind} annotation needs {name!r} as {what}"
    return None


def _system_content(content: Json) -> Iterator[TextPart]:
    for part in _content_parts(content):
        if isinstance(part, FilePart):
            raise content.fail("a system or developer message can only hold text")
        yield part


def _content_parts(content: Json) -> Iterator[TextPart | FilePart]:
    """A message's ``content``: a string, or a list of content parts."""
    if isinstance(content.value, str):
        yield TextPart(text=content.value)
        return
    for entry in content.items():
        yield _content_part(entry)


def _content_part(entry: Json) -> TextPart | FilePart:
    match _item_type(entry):
        case "input_text" | "output_text":
            return TextPart(text=entry.require("text").string())
        case "refusal":
            return TextPart(text=entry.require("refusal").string())
        case "input_image":
            return _input_image(entry)
        case "input_file":
            return _input_file(entry)
        case "input_audio":
            return _input_audio(entry.require("input_audio"))
        case other:
            raise entry.fail(f"unsupported content part type {other!r}")


def _input_image(entry: Json) -> FilePart:
    url = entry.get("image_url")
    if url is not None:
        return _file_from_url(url, filename=None)
    file_id = entry.get("file_id")
    if file_id is not None:
        return FilePart.from_uri(FILE_ID_PREFIX + _non_empty(file_id))
    raise entry.fail("input_image needs an image_url or a file_id")


def _input_file(entry: Json) -> FilePart:
    filename = entry.str_or_none("filename")
    data = entry.get("file_data")
    if data is not None:
        return inline_file_data(data, filename)
    url = entry.get("file_url")
    if url is not None:
        return FilePart.from_uri(_non_empty(url), filename=filename)
    file_id = entry.get("file_id")
    if file_id is not None:
        return FilePart.from_uri(FILE_ID_PREFIX + _non_empty(file_id), filename=filename)
    raise entry.fail("input_file needs file_data, a file_url or a file_id")


def _input_audio(audio: Json) -> FilePart:
    data = audio.require("data")
    audio_format = audio.require("format")
    media_type = AUDIO_FORMATS.get(audio_format.string())
    if media_type is None:
        raise audio_format.fail(f"unknown audio format {audio_format.value!r}")
    return inline_file(decode_base64(data.string(), data), media_type, None, data)


def _file_from_url(node: Json, *, filename: str | None) -> FilePart:
    url = _non_empty(node)
    decoded = parse_data_url(url, node)
    if decoded is None:
        return FilePart.from_uri(url, filename=filename)
    declared, data = decoded
    return inline_file(data, declared, filename, node)


def _tool_output(output: Json) -> ToolOutput:
    """A ``function_call_output.output``: a string, or a list of text / image / file parts."""
    if isinstance(output.value, str):
        return JsonOutput(value=output.value)
    parts = [_content_part(entry) for entry in output.items()]
    if not parts:
        return JsonOutput(value="")
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return JsonOutput(value=parts[0].text)
    return ContentOutput(parts=parts)
