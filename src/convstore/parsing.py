"""`parse`, `parse_tools` and `parse_response`: provider wire JSON -> canonical values.

Invariants:

- Histories are accepted as applications stored them, invalid ones included (calls without
  results, results without calls, repeats, same-role runs); malformed JSON is refused with a
  `MalformedPayloadError`, never a ``KeyError``/``TypeError``. So is JSON no provider could
  have received as JSON text: a lone surrogate in a string or key, a NaN or infinite number.
- Everything is kept, including opaque reasoning artefacts and provider ids.
- A response may be given as JSON or as the provider SDK's response object; SDK objects are
  duck-typed (``to_dict()``, else ``model_dump()``), never imported.
- With ``rendered=``, a response is read against the render it answers: tool names and call
  ids the render projected are mapped back to the canonical ones (an id the render sent names
  the call it was sent for), and any other id that collides with a canonical call id of the
  render gets a fresh one (``<id>~<n>``, the provider's id kept as ``provider_id``), so the
  application's next `ConversationStore.complete_tool_call` names a call the store knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from convstore.errors import MalformedPayloadError
from convstore.model import Message, Part, ToolCallPart, ToolDefinition
from convstore.providers import source_for
from convstore.providers._parsing import check_json_text, root_object
from convstore.providers._wire_tools import read_tools
from convstore.rendering import Rendered

__all__ = ["parse", "parse_response", "parse_tools"]


def _object(payload: Any, what: str, source: str) -> Mapping[str, Any]:
    if not isinstance(payload, Mapping):
        raise MalformedPayloadError(f"{what} must be a JSON object, got {type(payload).__name__}")
    check_json_text(payload, source)
    return payload


def parse(payload: Mapping[str, Any], source: str, *, model: str | None = None) -> list[Message]:
    """The messages of a provider request payload (a stored history).

    ``source`` is ``openai-chat`` (``mistral`` and ``kimi`` are read as it), ``openai-responses``,
    ``anthropic`` or ``gemini``. The system prompt (``system``, ``systemInstruction``,
    ``instructions`` or a system/developer message) becomes a ``system`` message.

    ``model`` names the model the history was sent to when the payload does not (Gemini puts
    it in the URL, not the body). It is recorded on assistant messages and their reasoning, so
    signed reasoning can later be replayed to that same model.
    """
    body = _object(payload, "a request payload", source)
    if model is not None and body.get("model") is None:
        body = {**body, "model": model}
    return source_for(source).parse(body)


def parse_tools(payload: Mapping[str, Any], source: str) -> list[ToolDefinition]:
    """The function tool definitions of a request payload (its ``tools`` field).

    Built-in tools (web search, code execution, server tools) are skipped: a history's calls
    cannot name them as functions. A payload without tools gives ``[]``.
    """
    source_for(source)  # an unknown source is refused like everywhere else
    body = _object(payload, "a request payload", source)
    return read_tools(root_object(body, source), source)


def _as_json(body: Any) -> Any:
    """A response body as JSON: SDK response objects are dumped, dicts pass through."""
    if isinstance(body, Mapping):
        return body
    to_dict = getattr(body, "to_dict", None)
    if callable(to_dict):  # openai, anthropic: JSON mode, wire field names
        return to_dict()
    dump = getattr(body, "model_dump", None)
    if callable(dump):  # google-genai, mistralai, any pydantic model
        try:
            return dump(mode="json", by_alias=True, exclude_none=True)
        except TypeError:
            return dump()
    return body


def parse_response(
    body: Mapping[str, Any] | Any, source: str, *, rendered: Rendered | None = None
) -> Message:
    """The assistant message of a provider response, with its token usage.

    ``body`` is the response JSON or the provider SDK's response object. With ``rendered``
    (the `Rendered` the request was made from), projected tool names and call ids are mapped
    back to the canonical ones.
    """
    json_body = _object(_as_json(body), "a response body", source)
    message = source_for(source).parse_response(json_body)
    if rendered is not None:
        message = _restore(message, rendered)
    return message


def _restore(message: Message, rendered: Rendered) -> Message:
    diagnostics = rendered.diagnostics
    names = {wire: canonical for canonical, wire in diagnostics.name_map.items()}
    ids = {wire: canonical for canonical, wire in diagnostics.id_map.items()}
    taken = set(diagnostics.canonical_call_ids)
    parts: list[Part] = []
    changed = False
    for original in message.parts:
        part = original
        if isinstance(part, ToolCallPart):
            name = names.get(part.name, part.name)
            call_id = ids.get(part.id)
            if call_id is None:
                call_id, n = part.id, 1
                while call_id in taken:
                    n += 1
                    call_id = f"{part.id}~{n}"
            taken.add(call_id)
            if (name, call_id) != (part.name, part.id):
                part = part.model_copy(
                    update={"name": name, "id": call_id, "provider_id": part.provider_id or part.id}
                )
                changed = True
        parts.append(part)
    return message.model_copy(update={"parts": parts}) if changed else message
