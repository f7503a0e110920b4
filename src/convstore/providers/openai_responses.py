"""OpenAI Responses API (``POST /v1/responses``): ``input`` items <-> canonical messages.

Parsing reads a request body (``input`` plus ``instructions``) or a response body (its
``output``); encoding maps a `Plan` to ``{"input": [...], "instructions": "..."}``. The rules
and their public sources are in ``docs/providers/openai-responses.md``.

Invariants:

- Items, not messages: one assistant turn is a run of ``reasoning``, assistant ``message`` and
  ``function_call`` items. Parsing folds each such run (between user, system and tool items)
  into ONE assistant `Message`, in item order; consecutive ``function_call_output`` items
  become one ``tool`` message. Encoding unfolds an assistant turn back into items, in order.
- Every opaque artefact survives a parse: reasoning ids, ``encrypted_content``, summaries and
  raw reasoning text (`ThinkingPart`), ``call_id`` (`ToolCallPart.provider_id`), ``fc_`` and
  ``msg_`` item ids, message ``phase`` and output-text annotations (``provider_details``).
- A reasoning item is replayed only together with the item it preceded, sent right after it
  with its original item id; and an original item id is sent only right after its replayed
  reasoning (or after a sibling item that was). The API refuses either half on its own
  ("Item 'rs_...' of type 'reasoning' was provided without its required following item",
  "Item 'fc_...' of type 'function_call' was provided without its required 'reasoning'
  item"). Reasoning that cannot be replayed so is dropped and recorded in the diagnostics.
- A reasoning item id is sent at most once per request ("Duplicate item found with id rs_...
  Remove duplicate items from your input and try again"). Parsing keeps a history as given, a
  repeated ``rs_`` item included; the planner replays signed reasoning once per render
  (`convstore.transcript.reasoning`): the first occurrence goes with its follower, a repeat is
  left out and recorded (its content already reaches the model through the first). The same
  holds for ``msg_`` and ``fc_`` ids: the content entries of one message item (parsed as
  parts sharing its id) go back as that one item, and an id met again later in the history
  goes out on its first item only.
- Output-text annotations are one of the four shapes the API hands out and takes back
  (``file_citation``, ``url_citation``, ``container_file_citation``, ``file_path``) with
  their required fields; any other is malformed at parse. Encoding replays each declared
  shape with its declared keys only, and leaves out (noted) what a hand-built part holds else.
- Base64 media become inline `FilePart`s whose media type is what the bytes prove when they
  carry a known signature, else what the payload declared (the provider accepted the bytes,
  so they are the better witness); URLs stay URIs; Files API ids become
  ``openai://files/{id}`` URIs.
- Malformed input raises `MalformedPayloadError` (through `Json`), never a bare
  ``KeyError``/``TypeError``/``ValueError``. Item types convstore cannot represent (hosted
  tools, ``item_reference``) are refused the same way rather than silently dropped.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, assert_never

from pydantic import JsonValue

from convstore.model import (
    ThinkingPart,
)
from convstore.providers._encoding import (
    arguments_text,
    note_media_as_text,
    note_reasoning_dropped,
    result_text,
)
from convstore.providers._openai import FILE_ID_PREFIX
from convstore.providers._wire_tools import responses_tools
from convstore.providers.openai_responses_parse import (
    _ANNOTATION_FIELDS,
    _PHASES,
    TARGET,
    annotation_problem,
    parse,
    parse_response,
)
from convstore.transcript.plan import (
    AssistantTurn,
    Call,
    ContentBody,
    Media,
    Plan,
    Reasoning,
    Result,
    ResultBody,
    Text,
    ToolTurn,
    UserTurn,
)

__all__ = ["TARGET", "encode", "parse", "parse_response"]


# -- encode -----------------------------------------------------------------------------------


def encode(plan: Plan) -> dict[str, Any]:
    """The request fragment for ``plan``: ``input``, plus ``instructions`` for a system prompt.

    Several system prompts (the planner hoists them all, in order) are joined with blank lines
    into the one ``instructions`` text, and the join is noted in the diagnostics.
    """
    encoder = _Encoder(plan)
    payload: dict[str, Any] = {"input": encoder.input_items()}
    if plan.system:
        if len(plan.system) > 1:
            plan.diagnostics.notes.append(
                f"{len(plan.system)} system prompts joined, in order, into one instructions text"
            )
        payload["instructions"] = "\n\n".join(plan.system)
    if plan.tools:
        payload["tools"] = responses_tools(plan)
    return payload


class _Encoder:
    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        # The API refuses an item id twice in one input ("Duplicate item found with id"):
        # an id goes out once, on the first item that may carry it.
        self._sent_ids: set[str] = set()

    def input_items(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for turn in self._plan.turns:
            match turn:
                case UserTurn(parts=parts):
                    items.append({"role": "user", "content": _user_content(parts)})
                case AssistantTurn():
                    items.extend(self._assistant_items(turn))
                case ToolTurn(results=results):
                    items.extend(_call_output(result) for result in results)
                case _:
                    assert_never(turn)
        return items

    def _assistant_items(self, turn: AssistantTurn) -> Iterator[dict[str, Any]]:
        """The items of one assistant turn, replaying reasoning only with its following item.

        ``chained`` says whether the previous item went out with its original id; an item
        may keep its id only right after its replayed reasoning or after such a sibling.
        """
        same_provider = turn.provider == self._plan.capabilities.family
        pending: list[Reasoning] = []
        chained = False
        message: dict[str, Any] | None = None  # the last message item, while it may grow
        for part in turn.parts:
            match part:
                case Reasoning():
                    pending.append(part)
                    continue
                case Text():
                    item_id = _item_id(part.provider_details) if same_provider else None
                case Call():
                    item_id = _original_call_item_id(part)
                case Media():
                    item_id = None
                case _:
                    assert_never(part)
            if (
                not pending
                and isinstance(part, Text)
                and message is not None
                and item_id is not None
                and message.get("id") == item_id
            ):
                # Parsing keeps each content entry of a message item as its own part, all
                # with the item's id: they go back as that one item.
                entry = _assistant_message(
                    part, item_id, same_provider, self._plan.diagnostics.notes
                )
                message["content"].extend(entry["content"])
                continue
            if item_id is not None and item_id in self._sent_ids:
                item_id = None
            if pending:
                keep_id = item_id is not None and all(_replayable(r.part) for r in pending)
                yield from self._settle_reasoning(pending, follower_kept=keep_id)
                pending = []
            else:
                keep_id = item_id is not None and chained
            chained = keep_id
            if keep_id and item_id is not None:
                self._sent_ids.add(item_id)
            message = None
            match part:
                case Text():
                    message = _assistant_message(
                        part,
                        item_id if keep_id else None,
                        same_provider,
                        self._plan.diagnostics.notes,
                    )
                    yield message
                case Call():
                    yield _function_call(part, item_id if keep_id else None)
                case Media():
                    yield self._assistant_media_note(part)
        if pending:
            yield from self._settle_reasoning(pending, follower_kept=False)

    def _settle_reasoning(
        self, run: list[Reasoning], *, follower_kept: bool
    ) -> Iterator[dict[str, Any]]:
        """Emit a run of reasoning items before their follower, or record why it is dropped."""
        if follower_kept:
            yield from (_reasoning_item(r.part) for r in run)
            return
        for reasoning in run:
            part = reasoning.part
            if not part.reasoning_id:
                why = "it has no Responses reasoning item id"
            elif not part.encrypted_content:
                why = "it has no encrypted_content, which a stateless (store=false) request needs"
            else:
                why = "the item it preceded is not replayed right after it with its original id"
            note_reasoning_dropped(self._plan.diagnostics, part, f"{TARGET} encoder: {why}")

    def _assistant_media_note(self, media: Media) -> dict[str, Any]:
        # Assistant message content takes only output_text and refusal parts.
        label = media.label or media.media_type
        reason = f"{TARGET} assistant messages carry text only"
        note_media_as_text(self._plan.diagnostics, media, reason)
        return {"role": "assistant", "content": f"[file {label} ({media.media_type})]"}


def _replayable(part: ThinkingPart) -> bool:
    """Whether a reasoning part can stand as a stateless ``reasoning`` input item."""
    return bool(part.reasoning_id and part.encrypted_content)


def _item_id(details: Mapping[str, JsonValue] | None) -> str | None:
    value = (details or {}).get("item_id")
    return value if isinstance(value, str) and value else None


def _original_call_item_id(call: Call) -> str | None:
    """The ``fc_`` item id to replay, when the call is still the item the provider produced."""
    if not call.same_provider:
        return None
    # A projected id or name makes it a different item than the one stored under that id.
    if call.provider_id is not None and call.wire_id != call.provider_id:
        return None
    if call.wire_name != call.name:
        return None
    return _item_id(call.provider_details)


def _user_content(parts: list[Text | Media]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    return [_input_part(part) for part in parts]


def _input_part(part: Text | Media) -> dict[str, Any]:
    match part:
        case Text(text=text):
            return {"type": "input_text", "text": text}
        case Media():
            return _media_part(part)
        case _:
            assert_never(part)


def _media_part(media: Media) -> dict[str, Any]:
    """``input_image`` for images, ``input_file`` for everything else (PDFs)."""
    file_id = _file_id(media)
    if media.media_type.startswith("image/"):
        image: dict[str, Any] = {"type": "input_image", "detail": "auto"}
        if file_id is not None:
            image["file_id"] = file_id
        else:
            image["image_url"] = media.data_url
        return image
    document: dict[str, Any] = {"type": "input_file"}
    if file_id is not None:
        document["file_id"] = file_id
    elif media.uri is not None:
        document["file_url"] = media.uri
    else:
        # The API requires a filename with inline file data.
        document["file_data"] = media.data_url
        document["filename"] = media.filename or _made_up_filename(media)
        return document
    if media.filename:
        document["filename"] = media.filename
    return document


def _file_id(media: Media) -> str | None:
    if media.uri is not None and media.uri.startswith(FILE_ID_PREFIX):
        return media.uri.removeprefix(FILE_ID_PREFIX) or None
    return None


def _made_up_filename(media: Media) -> str:
    extension = mimetypes.guess_extension(media.media_type, strict=False) or ""
    return f"file-{media.label}{extension}" if media.label else f"file{extension}"


def _assistant_message(
    text: Text, item_id: str | None, same_provider: bool, notes: list[str]
) -> dict[str, Any]:
    details = text.provider_details or {}
    phase = details.get("phase") if same_provider else None
    if item_id is None:
        message: dict[str, Any] = {"role": "assistant", "content": text.text}
    else:
        content: dict[str, Any]
        if details.get("refusal") is True:
            content = {"type": "refusal", "refusal": text.text}
        else:
            content = {
                "type": "output_text",
                "text": text.text,
                "annotations": _replayed_annotations(details.get("annotations"), notes),
            }
        message = {
            "type": "message",
            "role": "assistant",
            "id": item_id,
            "status": "completed",
            "content": [content],
        }
    if phase in _PHASES:
        message["phase"] = phase
    return message


def _replayed_annotations(value: JsonValue | None, notes: list[str]) -> list[dict[str, Any]]:
    """The annotations to replay: each declared shape with its declared keys only.

    Parsing refuses other shapes, but ``provider_details`` of a hand-built part are not parsed:
    what the input type would refuse is left out (noted) rather than failing the request.
    """
    if value is None:
        return []
    entries = value if isinstance(value, list) else [value]
    kept: list[dict[str, Any]] = []
    for entry in entries:
        problem = annotation_problem(entry)
        if problem is not None:
            notes.append(f"{TARGET}: an output_text annotation was left out: {problem}")
            continue
        assert isinstance(entry, dict)
        declared = _ANNOTATION_FIELDS[str(entry["type"])]
        kept.append({key: entry[key] for key in ("type", *declared)})
    return kept


def _function_call(call: Call, item_id: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call.wire_id,
        "name": call.wire_name,
        "arguments": arguments_text(call),
    }
    if item_id is not None:
        item["id"] = item_id
    return item


def _reasoning_item(part: ThinkingPart) -> dict[str, Any]:
    summaries: Iterable[str] = (
        part.summary if part.summary is not None else ([part.text] if part.text else [])
    )
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": part.reasoning_id,
        "summary": [{"type": "summary_text", "text": text} for text in summaries],
        "encrypted_content": part.encrypted_content,
    }
    raw = (part.provider_details or {}).get("content")
    if isinstance(raw, list) and raw and all(isinstance(text, str) for text in raw):
        item["content"] = [{"type": "reasoning_text", "text": text} for text in raw]
    return item


def _call_output(result: Result) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": result.call.wire_id,
        "output": _output(result.body),
    }


def _output(body: ResultBody) -> str | list[dict[str, Any]]:
    """A string for text-only results; a list of input parts when the result carries media.

    Responses has no error flag on an output: an error result is its message text, as peers
    send it.
    """
    if isinstance(body, ContentBody) and any(isinstance(p, Media) for p in body.parts):
        return [_input_part(part) for part in body.parts]
    return result_text(body)
