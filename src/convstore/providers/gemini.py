"""Gemini ``generateContent`` (REST JSON), both model generations: parse and encode.

Wire shape: ``{"contents": [Content...], "systemInstruction": Content}``; a ``Content`` is
``{"role": "user" | "model", "parts": [Part...]}`` and a ``Part`` holds exactly one of ``text``,
``inlineData``, ``fileData``, ``functionCall``, ``functionResponse`` (plus ``executableCode`` /
``codeExecutionResult`` from the code-execution tool), optionally ``thought: true`` and a
``thoughtSignature``. Sources for every rule are in ``docs/providers/gemini.md``.

Invariants of `parse` / `parse_response`:

- Keys are read in lowerCamelCase or snake_case at every depth (the API's JSON mapping accepts
  both), and a role is matched without regard to case; a content without a role is the
  model's when it holds a call or a thought, the user's otherwise.
- Nothing is dropped. A thought part becomes a `ThinkingPart`; a ``thoughtSignature`` on any
  other part becomes a signature-only `ThinkingPart` whose ``rides_on`` names the carrier's
  kind, placed immediately before the carrier. Signatures are kept verbatim (the API hands
  them out in standard base64 and SDKs send them back URL-safe; both decode to the same bytes).
  The field is bytes on the wire, so a signature that is not base64 (`is_base64`) is malformed:
  the API never hands one out and refuses one sent back.
- A user content holding function responses becomes a ``tool`` message (results in order)
  followed by a ``user`` message with the rest of that content, if any.
- ``functionResponse.response`` maps to an output as follows: exactly ``{"error": "<text>"}``
  is an `ErrorOutput`; exactly ``{"output": <non-object>}`` is that value (the API documents
  ``output``/``error`` as the keys it reads); nested media (``parts``) make a `ContentOutput`
  of the response's text (``output`` text, or the whole object as JSON text) and the files;
  anything else is kept whole as a `JsonOutput` object. A response nested deeper than
  `convstore.limits.MAX_JSON_DEPTH` is malformed (no store would keep it, and its JSON text
  could not be written).
- Base64 media in either alphabet become inline `FilePart` parts. When the declared type is
  contradicted by a signature the bytes carry, the bytes win (the API answered for the bytes it
  got); a declared type whose mandatory signature is missing is refused.
- Malformed input raises `MalformedPayloadError` naming the JSON path.

Invariants of `encode`:

- Output is REST JSON in camelCase; one content per plan turn, except that a user turn after a
  plain user content joins it and an assistant turn left with no part is left out (both
  noted). A `ToolTurn` is one user content holding exactly its ``functionResponse`` parts, in
  call order; media moved out of results (Gemini 2.x) arrive as the plan's injected
  `UserTurn`, a separate user content after the function responses, as the accepted corpus
  sends them.
- ``functionResponse.response`` is always an object: a JSON object result as it is, any other
  value as ``{"output": value}``, an error as ``{"error": message}``, content as
  ``{"output": text}`` (``{}`` when it is media only) with its media nested in ``parts`` as
  inline data (Gemini 3). A JSON result holding a ``$ref`` key is sent as JSON text, because
  Gemini resolves ``$ref`` in a response against nested parts' display names and rejects it.
- A reasoning part riding on a part sends its signature on the next part of that kind in the
  same turn; a thought part is a ``thought: true`` text part with its own signature. With
  ``capabilities.dummy_thought_signature`` set (Gemini 3), the first ``functionCall`` of every
  model content in the current turn that has no signature gets the documented dummy one.
- No text part is empty or whitespace only: thought text that is (`is_blank`, as the planner
  treats text) is no thought part, and its signature, if any, rides on the next part as an
  empty thought's does. A signature that is not base64 (a hand-built `ThinkingPart`; parsing
  refuses one) is not sent: the reasoning goes as unsigned reasoning does, and it is noted.
- Every decision the planner did not record is added to ``plan.diagnostics.notes``.
"""

from __future__ import annotations

from typing import Any, assert_never

from pydantic import JsonValue

from convstore.model import (
    ThinkingPart,
)
from convstore.providers._encoding import json_text
from convstore.providers._parsing import (
    is_base64,
)
from convstore.providers._wire_tools import gemini_tools
from convstore.providers.gemini_parse import (
    TARGET,
    Carrier,
    Wire,
    parse,
    parse_response,
)
from convstore.transcript.plan import (
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
    ToolTurn,
    UserTurn,
    is_blank,
)

__all__ = ["TARGET", "encode", "parse", "parse_response"]


# -- encoding --------------------------------------------------------------------------------


def encode(plan: Plan) -> dict[str, Any]:
    """The ``contents`` (and ``systemInstruction``) of a request for ``plan``."""
    payload = _Encoder(plan).payload()
    if plan.tools:
        payload["tools"] = gemini_tools(plan)
    return payload


class _Encoder:
    """One render: contents in plan order, then the current turn's calls signed."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.notes = plan.diagnostics.notes
        self.contents: list[Wire] = []
        self.turn_start = 0
        """Index of the content that opens the current turn (the last real user message)."""

    def payload(self) -> dict[str, Any]:
        for index, turn in enumerate(self.plan.turns):
            match turn:
                case UserTurn(parts=parts, injected=injected):
                    opened = self._user([_user_part(p) for p in parts], index)
                    if not injected:
                        # Injected media turns continue the step they belong to, so they do not
                        # open a turn: signing from the last real user message covers both
                        # readings of where the current turn starts.
                        self.turn_start = opened
                case AssistantTurn():
                    parts_out = _ModelTurn(index, self.notes).encode(turn)
                    if parts_out:
                        self.contents.append({"role": "model", "parts": parts_out})
                    else:
                        self.notes.append(
                            f"turn {index}: assistant turn had nothing Gemini can carry; left out"
                        )
                case ToolTurn(results=results):
                    self.contents.append(
                        {"role": "user", "parts": [self._response(r) for r in results]}
                    )
                case _:
                    assert_never(turn)
        self._sign_current_turn()
        payload: dict[str, Any] = {"contents": self.contents}
        if self.plan.system:
            payload["systemInstruction"] = {
                "role": "user",
                "parts": [{"text": text} for text in self.plan.system],
            }
        return payload

    def _user(self, parts: list[Wire], index: int) -> int:
        """Append a user content, or extend the previous one; the index of the content used.

        Two user contents in a row are proven only after function responses (the accepted
        Gemini 2.5 requests send the tool's media that way), and some Gemini versions refuse
        other same-role runs, so a user turn after a plain user content joins it.
        """
        previous = self.contents[-1] if self.contents else None
        if (
            previous is not None
            and previous["role"] == "user"
            and not any("functionResponse" in p for p in previous["parts"])
        ):
            previous["parts"].extend(parts)
            self.notes.append(f"turn {index}: sent in the same user content as the turn before")
            return len(self.contents) - 1
        self.contents.append({"role": "user", "parts": parts})
        return len(self.contents) - 1

    def _response(self, result: Result) -> Wire:
        call = result.call
        response, nested = self._response_body(result.body, call)
        function_response: Wire = {"id": call.wire_id, "name": call.wire_name, "response": response}
        if nested:
            function_response["parts"] = nested
        return {"functionResponse": function_response}

    def _response_body(self, body: ResultBody, call: Call) -> tuple[Wire, list[Wire]]:
        match body:
            case JsonBody(value=value):
                if _has_ref_key(value):
                    self.notes.append(
                        f"result of call {call.call_id!r} holds a '$ref' key, which Gemini reads "
                        "as a reference to a nested part: sent as JSON text in 'output'"
                    )
                    return {"output": json_text(value)}, []
                if isinstance(value, dict):
                    return value, []
                return {"output": value}, []
            case ErrorBody(message=message):
                return {"error": message}, []
            case ContentBody(parts=parts):
                texts = [p.text for p in parts if isinstance(p, Text)]
                nested = [_media_part(p) for p in parts if isinstance(p, Media)]
                return ({"output": "\n".join(texts)} if texts else {}), nested
            case _:
                assert_never(body)

    def _sign_current_turn(self) -> None:
        dummy = self.plan.capabilities.dummy_thought_signature
        if dummy is None:
            return
        for content in self.contents[self.turn_start :]:
            if content["role"] != "model":
                continue
            first_call = next((p for p in content["parts"] if "functionCall" in p), None)
            if first_call is None or "thoughtSignature" in first_call:
                continue
            first_call["thoughtSignature"] = dummy
            self.notes.append(
                f"call {first_call['functionCall']['id']!r} opens a step of the current turn "
                "without a thought signature: sent Gemini's documented dummy signature"
            )


class _ModelTurn:
    """The parts of one model content, with thought signatures placed on their carriers."""

    def __init__(self, index: int, notes: list[str]) -> None:
        self.index = index
        self.notes = notes
        self.pending: dict[Carrier | None, str] = {}
        """Signatures waiting for the next part of a kind (``None``: of any kind)."""

    def encode(self, turn: AssistantTurn) -> list[Wire]:
        parts: list[Wire] = []
        for part in turn.parts:
            match part:
                case Reasoning(part=thinking):
                    parts.extend(self._reasoning(thinking))
                case Text(text=text):
                    parts.append(self._carry({"text": text}, "text"))
                case Media():
                    parts.append(self._carry(_media_part(part), "file"))
                case Call():
                    parts.append(self._carry(self._call(part), "tool_call"))
                case _:
                    assert_never(part)
        for carrier in self.pending:
            self.notes.append(
                f"turn {self.index}: a thought signature had no following "
                f"{carrier or 'part'} to ride on; not sent"
            )
        return parts

    def _reasoning(self, thinking: ThinkingPart) -> list[Wire]:
        out: list[Wire] = []
        signature = thinking.signature
        if signature and not is_base64(signature):
            self.notes.append(
                f"turn {self.index}: a thought signature that is not base64 was not sent "
                "(Gemini reads it as bytes); the reasoning went as unsigned reasoning does"
            )
            signature = None
        text = "" if is_blank(thinking.text) else thinking.text
        if text:
            thought: Wire = {"text": text, "thought": True}
            if signature and thinking.rides_on is None:
                thought["thoughtSignature"] = signature
            out.append(thought)
        if signature and (thinking.rides_on is not None or not text):
            if thinking.rides_on in self.pending:
                self.notes.append(
                    f"turn {self.index}: two thought signatures wait for the same "
                    f"{thinking.rides_on or 'part'}; the earlier one was not sent"
                )
            self.pending[thinking.rides_on] = signature
        return out

    def _carry(self, part: Wire, kind: Carrier) -> Wire:
        signature = self.pending.pop(kind, None)
        if signature is None:
            signature = self.pending.pop(None, None)
        if signature is not None:
            part["thoughtSignature"] = signature
        return part

    def _call(self, call: Call) -> Wire:
        if call.raw_arguments is not None and not call.arguments:
            self.notes.append(
                f"call {call.call_id!r}: its arguments were not a JSON object; Gemini takes an "
                "object, so it was sent with {}"
            )
        return {
            "functionCall": {"id": call.wire_id, "name": call.wire_name, "args": call.arguments}
        }


def _user_part(part: Text | Media) -> Wire:
    match part:
        case Text(text=text):
            return {"text": text}
        case Media():
            return _media_part(part)
        case _:
            assert_never(part)


def _media_part(media: Media) -> Wire:
    """``inlineData`` for bytes, ``fileData`` for a URI.

    Never with a ``displayName``: the Gemini API refuses it on these parts.
    """
    if media.uri is not None:
        return {"fileData": {"mimeType": media.media_type, "fileUri": media.uri}}
    return {"inlineData": {"mimeType": media.media_type, "data": media.base64}}


def _has_ref_key(value: JsonValue) -> bool:
    if isinstance(value, dict):
        return "$ref" in value or any(_has_ref_key(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref_key(v) for v in value)
    return False
