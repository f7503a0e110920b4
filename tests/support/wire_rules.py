"""Independent checks that a rendered payload obeys its target's rules.

Written from the providers' documented rules (ARCHITECTURE.md "Rendering rules"; the per
target pages in docs/providers), not from convstore's encoders, so a test that renders and then
checks is not checking the code against itself. `check_payload` raises AssertionError with the
rule that broke.

Also validates each message/item against the official SDK request types. Those are TypedDicts
whose iterable fields pydantic validates lazily, so the validated value is walked to force
every nested check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from convstore import capabilities_for

__all__ = ["check_payload", "check_tools", "media_in_payload", "sdk_validate"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
_ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
_KIMI_ID = re.compile(r"^functions\.([a-zA-Z0-9_-]+):(\d+)$")
_GEMINI3_NESTED = {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}


# -- SDK types ------------------------------------------------------------------------------------


@cache
def _adapter(target: str) -> TypeAdapter[Any]:
    match target:
        case "mistral":
            from mistralai.client.models import ChatCompletionRequestMessage

            return TypeAdapter(ChatCompletionRequestMessage)
        case "openai-chat" | "kimi":
            from openai.types.chat import ChatCompletionMessageParam

            return TypeAdapter(ChatCompletionMessageParam)
        case "openai-responses":
            from openai.types.responses import ResponseInputItemParam

            return TypeAdapter(ResponseInputItemParam)
        case "anthropic":
            from anthropic.types import MessageParam

            return TypeAdapter(MessageParam)
    raise AssertionError(f"no SDK adapter for {target}")


def _force(value: Any) -> Any:
    """Walk a validated value, consuming pydantic's lazy iterators (which validates them)."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_force(v) for v in value]
    if type(value).__name__ == "ValidatorIterator":
        return [_force(v) for v in value]
    return value


def sdk_validate(target: str, payload: dict[str, Any]) -> None:
    """Validate every message/item/content of ``payload`` with the provider SDK's types."""
    if target == "gemini":
        from google.genai import types

        for content in payload["contents"]:
            types.Content.model_validate(content)  # genai models refuse unknown keys
        if "systemInstruction" in payload:
            types.Content.model_validate(payload["systemInstruction"])
        return
    key = "input" if target == "openai-responses" else "messages"
    adapter = _adapter(target)
    for item in payload[key]:
        validated = _force(adapter.validate_python(item))
        if target == "mistral" and "is_unknown=True" in repr(validated):
            # Mistral's SDK keeps unknown content chunks instead of refusing them.
            raise AssertionError(f"mistral: a content chunk its SDK does not know: {item}")


# -- structural rules -----------------------------------------------------------------------------


def _fail(target: str, where: str, rule: str) -> AssertionError:
    return AssertionError(f"{target}: {where}: {rule}")


def _chat(target: str, payload: dict[str, Any]) -> None:
    messages = payload["messages"]
    assert set(payload) <= {"messages", "tools"}, (
        f"{target}: unexpected payload keys {set(payload)}"
    )
    seen_ids: set[str] = set()
    call_index = 0
    i = 0
    while i < len(messages):
        message = messages[i]
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise _fail(target, f"messages[{i}]", f"unknown role {role!r}")
        if role == "tool":
            raise _fail(target, f"messages[{i}]", "a tool message must follow its assistant call")
        content = message.get("content")
        if isinstance(content, str) and not content.strip() and not message.get("tool_calls"):
            raise _fail(target, f"messages[{i}]", "empty text content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "text" and not str(part.get("text", "")).strip():
                    raise _fail(target, f"messages[{i}]", "empty text part")
        calls = message.get("tool_calls") or []
        ids = []
        for call in calls:
            call_id = call["id"]
            name = call["function"]["name"]
            if not _NAME.match(name):
                raise _fail(target, f"messages[{i}]", f"invalid tool name {name!r}")
            if call_id in seen_ids:
                raise _fail(target, f"messages[{i}]", f"call id {call_id!r} reused")
            seen_ids.add(call_id)
            match target:
                case "openai-chat":
                    if len(call_id) > 40:
                        raise _fail(
                            target, f"messages[{i}]", f"call id longer than 40: {call_id!r}"
                        )
                case "mistral":
                    if not _MISTRAL_ID.match(call_id):
                        raise _fail(target, f"messages[{i}]", f"not 9 alphanumerics: {call_id!r}")
                case "kimi":
                    kimi = _KIMI_ID.match(call_id)
                    if not kimi or kimi.group(1) != name or int(kimi.group(2)) != call_index:
                        raise _fail(
                            target,
                            f"messages[{i}]",
                            f"not functions.{name}:{call_index}: {call_id!r}",
                        )
            call_index += 1
            ids.append(call_id)
        i += 1
        answered: list[str] = []
        while i < len(messages) and messages[i].get("role") == "tool":
            tool = messages[i]
            if not isinstance(tool.get("content"), str):
                raise _fail(target, f"messages[{i}]", "tool message content must be a string")
            answered.append(tool["tool_call_id"])
            i += 1
        if sorted(answered) != sorted(ids):
            raise _fail(target, f"messages[{i - 1}]", f"calls {ids} answered by {answered}")


def _responses(payload: dict[str, Any]) -> None:
    target = "openai-responses"
    items = payload["input"]
    assert set(payload) <= {"input", "instructions", "tools"}, f"{target}: keys {set(payload)}"
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    item_ids: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        item_id = item.get("id")
        if item_id is not None:
            # "Duplicate item found with id …": an item id appears once per input.
            if item_id in item_ids:
                raise _fail(target, f"input[{i}]", f"item id {item_id!r} sent twice")
            item_ids.add(item_id)
        if kind == "function_call":
            call_id = item["call_id"]
            if len(call_id) > 64 or call_id in calls:
                raise _fail(target, f"input[{i}]", f"bad or reused call_id {call_id!r}")
            if not _NAME.match(item["name"]):
                raise _fail(target, f"input[{i}]", f"invalid tool name {item['name']!r}")
            calls[call_id] = i
        elif kind == "function_call_output":
            call_id = item["call_id"]
            if call_id not in calls or call_id in outputs:
                raise _fail(
                    target, f"input[{i}]", f"output for unknown or answered call {call_id!r}"
                )
            outputs[call_id] = i
            output = item["output"]
            if isinstance(output, list) and not output:
                raise _fail(target, f"input[{i}]", "empty output list")
        elif kind == "reasoning":
            # A run of reasoning items precedes one item, replayed with its original id
            # (a run is what the API itself can emit: vercel/ai#10827).
            j = i + 1
            while j < len(items) and items[j].get("type") == "reasoning":
                j += 1
            following = items[j] if j < len(items) else None
            if following is None or not following.get("id"):
                raise _fail(target, f"input[{i}]", "reasoning without the item it preceded")
        elif kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                raise _fail(target, f"input[{i}]", f"unknown role {item.get('role')!r}")
            content = item.get("content")
            if isinstance(content, str) and not content.strip():
                raise _fail(target, f"input[{i}]", "empty message")
    if set(calls) != set(outputs):
        raise _fail(target, "input", f"calls without outputs: {set(calls) - set(outputs)}")


def _anthropic(payload: dict[str, Any]) -> None:
    target = "anthropic"
    assert set(payload) <= {"messages", "system", "tools"}, f"{target}: keys {set(payload)}"
    messages = payload["messages"]
    if not messages or messages[0]["role"] != "user":
        raise _fail(target, "messages[0]", "the first message must be the user's")
    pending: list[str] = []
    seen: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        expected = "user" if i % 2 == 0 else "assistant"
        if role != expected:
            raise _fail(target, f"messages[{i}]", f"roles must alternate; got {role}")
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not blocks:
            raise _fail(target, f"messages[{i}]", "empty content")
        results = [b for b in blocks if b.get("type") == "tool_result"]
        leading = 0
        while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
            leading += 1
        if len(results) != leading:
            raise _fail(target, f"messages[{i}]", "tool_result blocks must come first")
        if role == "user":
            if sorted(b["tool_use_id"] for b in results) != sorted(pending):
                raise _fail(target, f"messages[{i}]", f"results {results} do not answer {pending}")
            for block in results:
                if block.get("content") == [] or block.get("content") == "":
                    raise _fail(target, f"messages[{i}]", "empty tool_result content")
            pending = []
        elif pending:
            raise _fail(target, f"messages[{i}]", f"calls {pending} left unanswered")
        seen_other = False
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not block["text"].strip():
                raise _fail(target, f"messages[{i}]", "empty text block")
            if kind in ("thinking", "redacted_thinking") and seen_other:
                raise _fail(target, f"messages[{i}]", "thinking blocks must come first")
            if kind not in ("thinking", "redacted_thinking"):
                seen_other = True
            if kind == "tool_use":
                if role != "assistant":
                    raise _fail(target, f"messages[{i}]", "tool_use outside an assistant turn")
                if not _ANTHROPIC_ID.match(block["id"]) or block["id"] in seen:
                    raise _fail(target, f"messages[{i}]", f"bad or reused id {block['id']!r}")
                if not _NAME.match(block["name"]):
                    raise _fail(target, f"messages[{i}]", f"invalid tool name {block['name']!r}")
                seen.add(block["id"])
                pending.append(block["id"])
    if pending:
        raise _fail(target, "messages[-1]", f"calls {pending} left unanswered")


def _walk_keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _walk_keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_keys(item)


def _gemini(payload: dict[str, Any], model: str | None) -> None:
    target = "gemini"
    assert set(payload) <= {"contents", "systemInstruction", "tools"}, (
        f"{target}: keys {set(payload)}"
    )
    caps = capabilities_for("gemini", model)
    gemini3 = caps.dummy_thought_signature is not None
    contents = payload["contents"]
    if not contents or contents[0]["role"] != "user":
        raise _fail(target, "contents[0]", "the first content must be the user's")
    last_user_text = max(
        (i for i, c in enumerate(contents) if c["role"] == "user"
         and not any("functionResponse" in p for p in c["parts"])),
        default=-1,
    )  # fmt: skip
    for i, content in enumerate(contents):
        if content["role"] not in ("user", "model"):
            raise _fail(target, f"contents[{i}]", f"unknown role {content['role']!r}")
        parts = content["parts"]
        if not parts:
            raise _fail(target, f"contents[{i}]", "empty parts")
        for part in parts:
            if "text" in part and not part["text"].strip() and not part.get("thoughtSignature"):
                raise _fail(target, f"contents[{i}]", "empty text part")
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if responses:
            previous = contents[i - 1] if i else None
            previous_calls = [
                p["functionCall"]
                for p in (previous or {"parts": []})["parts"]
                if "functionCall" in p
            ]
            if content["role"] != "user" or not previous or previous["role"] != "model":
                raise _fail(
                    target, f"contents[{i}]", "function responses must answer the model turn before"
                )
            if [r["name"] for r in responses] != [c["name"] for c in previous_calls]:
                raise _fail(
                    target,
                    f"contents[{i}]",
                    "responses must match the calls in number, name and order",
                )
            if [r.get("id") for r in responses] != [c.get("id") for c in previous_calls]:
                raise _fail(target, f"contents[{i}]", "response ids must match the calls")
            for response in responses:
                if not isinstance(response["response"], dict):
                    raise _fail(target, f"contents[{i}]", "response must be an object")
                if "$ref" in set(_walk_keys(response["response"])):
                    raise _fail(target, f"contents[{i}]", "unescaped $ref in a response")
                for nested in response.get("parts", []):
                    if not gemini3:
                        raise _fail(target, f"contents[{i}]", "nested parts before Gemini 3")
                    blob = nested.get("inlineData") or nested.get("inline_data")
                    mime = blob and (blob.get("mimeType") or blob.get("mime_type"))
                    if not blob or mime not in _GEMINI3_NESTED or "displayName" in blob:
                        raise _fail(target, f"contents[{i}]", f"nested part not allowed: {nested}")
        if calls:
            if content["role"] != "model":
                raise _fail(target, f"contents[{i}]", "calls outside a model turn")
            previous = contents[i - 1] if i else None
            if previous is None or previous["role"] != "user":
                raise _fail(
                    target, f"contents[{i}]", "a call turn must follow a user or response turn"
                )
            following = contents[i + 1] if i + 1 < len(contents) else None
            if following is None or not any("functionResponse" in p for p in following["parts"]):
                raise _fail(target, f"contents[{i}]", "calls without a response turn after them")
            for call in calls:
                if not _GEMINI_NAME.match(call["name"]):
                    raise _fail(target, f"contents[{i}]", f"invalid function name {call['name']!r}")
            if gemini3 and i > last_user_text:
                first = next(p for p in parts if "functionCall" in p)
                if not first.get("thoughtSignature"):
                    raise _fail(
                        target,
                        f"contents[{i}]",
                        "first call of a current-turn step lacks a thought signature",
                    )


# -- tools ----------------------------------------------------------------------------------------

# Gemini's Schema (OpenAPI subset) fields; JSON Schema keywords outside it are refused.
_GEMINI_SCHEMA_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}  # fmt: skip
_GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def _gemini_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise _fail("gemini", where, "a schema must be an object")
    extra = set(schema) - _GEMINI_SCHEMA_KEYS
    if extra:
        raise _fail("gemini", where, f"keywords outside the OpenAPI subset: {extra}")
    if "type" in schema and schema["type"] not in _GEMINI_TYPES:
        raise _fail("gemini", where, f"type {schema['type']!r}")
    if "enum" in schema and not all(isinstance(v, str) for v in schema["enum"]):
        raise _fail("gemini", where, "enum values must be strings")
    for name, prop in (schema.get("properties") or {}).items():
        _gemini_schema(prop, f"{where}/properties/{name}")
    if "items" in schema:
        _gemini_schema(schema["items"], f"{where}/items")
    for i, branch in enumerate(schema.get("anyOf") or []):
        _gemini_schema(branch, f"{where}/anyOf/{i}")
    for name in schema.get("required") or []:
        if name not in (schema.get("properties") or {}):
            raise _fail("gemini", where, f"required {name!r} is not a property")


def _strict_schema(target: str, schema: Any, where: str) -> None:
    """OpenAI strict mode: every object closed and listing every property as required."""
    if not isinstance(schema, dict):
        return
    kinds = schema.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    if is_object or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise _fail(target, where, "strict: additionalProperties must be false")
        if sorted(schema.get("required") or []) != sorted(schema.get("properties") or {}):
            raise _fail(target, where, "strict: every property must be required")
    for name, prop in (schema.get("properties") or {}).items():
        _strict_schema(target, prop, f"{where}/properties/{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _strict_schema(target, schema[key], f"{where}/{key}")
    for key in ("anyOf", "$defs", "definitions"):
        branches = schema.get(key)
        values = branches.values() if isinstance(branches, dict) else branches or []
        for i, branch in enumerate(values):
            _strict_schema(target, branch, f"{where}/{key}/{i}")


def _root_object(target: str, schema: Any, where: str) -> None:
    if not isinstance(schema, dict) or schema.get("type") not in ("object", "OBJECT"):
        raise _fail(target, where, "tool parameters must be an object schema")


def check_tools(target: str, payload: dict[str, Any]) -> None:
    """The ``tools`` field: documented names, shapes and schema dialect; SDK types."""
    tools = payload.get("tools")
    if tools is None:
        return
    names: list[str] = []
    match target:
        case "openai-chat" | "mistral" | "kimi":
            for i, tool in enumerate(tools):
                function = tool["function"]
                assert tool["type"] == "function", tool
                names.append(function["name"])
                _root_object(target, function["parameters"], f"tools[{i}]")
                if function.get("strict"):
                    _strict_schema(target, function["parameters"], f"tools[{i}]")
            _validate_tools(target, tools)
        case "openai-responses":
            for i, tool in enumerate(tools):
                assert tool["type"] == "function" and isinstance(tool["strict"], bool), tool
                names.append(tool["name"])
                _root_object(target, tool["parameters"], f"tools[{i}]")
                if tool["strict"]:
                    _strict_schema(target, tool["parameters"], f"tools[{i}]")
            _validate_tools(target, tools)
        case "anthropic":
            for i, tool in enumerate(tools):
                names.append(tool["name"])
                _root_object(target, tool["input_schema"], f"tools[{i}]")
            _validate_tools(target, tools)
        case "gemini":
            from google.genai import types

            for tool in tools:
                types.Tool.model_validate(tool)
                for i, declaration in enumerate(tool["functionDeclarations"]):
                    names.append(declaration["name"])
                    if "parameters" in declaration:
                        _root_object(target, declaration["parameters"], f"declarations[{i}]")
                        _gemini_schema(declaration["parameters"], f"declarations[{i}]")
    pattern = _GEMINI_NAME if target == "gemini" else _NAME
    for name in names:
        if not pattern.match(name):
            raise _fail(target, "tools", f"invalid tool name {name!r}")
    if len(set(names)) != len(names):
        raise _fail(target, "tools", f"duplicate tool names {names}")


@cache
def _tool_adapter(target: str) -> TypeAdapter[Any]:
    match target:
        case "mistral":
            from mistralai.client.models import Tool

            return TypeAdapter(Tool)
        case "openai-chat" | "kimi":
            from openai.types.chat import ChatCompletionFunctionToolParam

            return TypeAdapter(ChatCompletionFunctionToolParam)
        case "openai-responses":
            from openai.types.responses import FunctionToolParam

            return TypeAdapter(FunctionToolParam)
        case "anthropic":
            from anthropic.types import ToolParam

            return TypeAdapter(ToolParam)
    raise AssertionError(f"no SDK tool adapter for {target}")


def _validate_tools(target: str, tools: list[Any]) -> None:
    adapter = _tool_adapter(target)
    for tool in tools:
        validated = _force(adapter.validate_python(tool))
        if target == "mistral" and "is_unknown=True" in repr(validated):
            raise AssertionError(f"mistral: a tool its SDK does not know: {tool}")


def check_payload(target: str, model: str | None, payload: dict[str, Any]) -> None:
    """Raise AssertionError if ``payload`` breaks a rule of ``target``; also SDK-validate it."""
    check_tools(target, payload)
    match target:
        case "openai-chat" | "mistral" | "kimi":
            _chat(target, payload)
        case "openai-responses":
            _responses(payload)
        case "anthropic":
            _anthropic(payload)
        case "gemini":
            _gemini(payload, model)
        case _:
            raise AssertionError(f"unknown target {target}")
    sdk_validate(target, payload)


def media_in_payload(payload: Any) -> Iterator[str]:
    """Every base64 payload or data URL in a rendered payload (to find media by content)."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key == "data" and isinstance(value, str):
                yield value
            elif isinstance(value, str) and value.startswith("data:"):
                yield value.split(",", 1)[1]
            else:
                yield from media_in_payload(value)
    elif isinstance(payload, list):
        for value in payload:
            yield from media_in_payload(value)
