"""Tool definitions on every target: goldens, properties, the corpus's own tools round trip.

Every payload is checked by `tests.support.wire_rules` (documented names and shapes, Gemini's
OpenAPI subset, OpenAI strict mode) and validated with the SDKs' tool types.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convstore
from convstore import (
    ErrorOutput,
    JsonOutput,
    MalformedPayloadError,
    Message,
    Role,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    UnsupportedFormatError,
    parse,
    parse_tools,
    render,
)
from convstore.capabilities import TARGETS
from tests.providers.chat.helpers import assert_golden
from tests.providers.conversations import TARGET_MODELS
from tests.support.corpus import CORPUS_DIR
from tests.support.wire_rules import check_payload

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "when": {"type": "string", "format": "date-time"},
        },
        "required": ["city"],
        "additionalProperties": False,
    },
    strict=True,
)
SEARCH = ToolDefinition(
    name="web.search",  # a dotted name: only Gemini takes it as it is
    description="Search the web.",
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {
                    "site": {"type": "string", "format": "hostname"},
                    "after": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
                },
                "required": ["site"],
            }
        },
        "properties": {
            "query": {"type": "string", "maxLength": 200},
            "filters": {"type": "array", "items": {"$ref": "#/$defs/Filter"}, "uniqueItems": True},
            "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50},
            "mode": {"oneOf": [{"const": "fast"}, {"const": "deep"}]},
            "extra": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["query"],
    },
)
NO_ARGS = ToolDefinition(name="ping", parameters={})
TOOLS = [WEATHER, SEARCH, NO_ARGS]


def _history() -> list[Message]:
    return [
        Message.system("Use the tools."),
        Message.user("Weather in Oslo, then search for ski resorts."),
        Message.assistant(
            ToolCallPart(id="call_w1", name="get_weather", arguments={"city": "Oslo"}),
            ToolCallPart(id="call_s1", name="web.search", arguments={"query": "ski resorts"}),
            provider="anthropic",
            model="claude-sonnet-4-5",
        ),
        Message(
            role=Role.TOOL,
            parts=[
                ToolResultPart(call_id="call_w1", output=JsonOutput(value={"c": -3})),
                ToolResultPart(
                    call_id="call_s1",
                    name="web.search",
                    output=ErrorOutput(message="rate limited"),
                ),
            ],
        ),
        Message.assistant("It is -3°C; the search failed.", provider="anthropic"),
    ]


def _tool_names(target: str, payload: dict[str, Any]) -> list[str]:
    tools = payload.get("tools", [])
    match target:
        case "openai-chat" | "mistral" | "kimi":
            return [t["function"]["name"] for t in tools]
        case "gemini":
            return [d["name"] for t in tools for d in t["functionDeclarations"]]
        case _:
            return [t["name"] for t in tools]


def _call_and_result_names(target: str, payload: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Tool names on the calls, and on the results where the format names them."""
    calls: list[str] = []
    results: list[str] = []
    match target:
        case "openai-chat" | "mistral" | "kimi":
            for message in payload["messages"]:
                calls += [c["function"]["name"] for c in message.get("tool_calls", [])]
                if message["role"] == "tool" and "name" in message:
                    results.append(message["name"])
        case "openai-responses":
            calls += [i["name"] for i in payload["input"] if i.get("type") == "function_call"]
        case "anthropic":
            for message in payload["messages"]:
                if isinstance(message["content"], list):
                    calls += [b["name"] for b in message["content"] if b["type"] == "tool_use"]
        case "gemini":
            for content in payload["contents"]:
                calls += [
                    p["functionCall"]["name"] for p in content["parts"] if "functionCall" in p
                ]
                results += [
                    p["functionResponse"]["name"]
                    for p in content["parts"]
                    if "functionResponse" in p
                ]
    return calls, results


# -- goldens -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "model"), TARGET_MODELS, ids=[f"{t}-{m}" for t, m in TARGET_MODELS]
)
def test_golden_tools(target: str, model: str) -> None:
    """Tools and the calls naming them, per target; compared with the reviewed golden file."""
    rendered = render(_history(), target, model=model, tools=TOOLS)
    check_payload(target, model, rendered.payload)
    actual = {
        "tools": rendered.payload["tools"],
        "name_map": rendered.diagnostics.name_map,
        "schema_notes": [asdict(note) for note in rendered.diagnostics.tools],
    }
    assert_golden("tools", f"{target}-{model}", actual)


@pytest.mark.parametrize(("target", "model"), TARGET_MODELS)
def test_a_projected_name_is_the_same_on_definition_calls_and_results(
    target: str, model: str
) -> None:
    rendered = render(_history(), target, model=model, tools=TOOLS)
    wire = rendered.diagnostics.name_map.get("web.search", "web.search")
    if target == "gemini":
        assert wire == "web.search"  # Gemini names may hold dots
    else:
        assert wire == "web_search"
    names = _tool_names(target, rendered.payload)
    calls, results = _call_and_result_names(target, rendered.payload)
    assert wire in names and wire in calls
    assert set(calls) <= set(names)
    assert set(results) <= set(names)


def test_openai_strict_schema() -> None:
    rendered = render(_history(), "openai-chat", model="gpt-5", tools=[WEATHER])
    (tool,) = rendered.payload["tools"]
    function = tool["function"]
    assert function["strict"] is True
    schema = function["parameters"]
    assert schema["required"] == ["city", "unit", "when"]
    assert schema["properties"]["unit"] == {"type": ["string", "null"], "enum": ["c", "f", None]}
    assert schema["additionalProperties"] is False
    dropped = {(n.path, n.keyword) for n in rendered.diagnostics.tools}
    assert ("/properties/city", "minLength") in dropped  # strict mode has no minLength


def test_gemini_schema_subset() -> None:
    rendered = render(_history(), "gemini", model="gemini-2.5-flash", tools=[SEARCH])
    (declaration,) = rendered.payload["tools"][0]["functionDeclarations"]
    schema = declaration["parameters"]
    assert schema["type"] == "OBJECT"
    filters = schema["properties"]["filters"]["items"]  # $ref inlined
    assert filters["properties"]["after"] == {"type": "STRING", "nullable": True}
    assert "format" not in filters["properties"]["site"]  # "hostname" is not a Gemini format
    assert schema["properties"]["limit"] == {
        "type": "INTEGER",
        "nullable": True,
        "minimum": 1,
        "maximum": 50,
    }
    assert schema["properties"]["mode"]["anyOf"] == [
        {"enum": ["fast"], "type": "STRING"},
        {"enum": ["deep"], "type": "STRING"},
    ]
    losses = {(n.path, n.keyword) for n in rendered.diagnostics.tools}
    assert {
        ("/properties/filters", "uniqueItems"),
        ("/properties/extra", "additionalProperties"),
        ("/properties/filters/items/properties/site", "format"),
        ("/properties/mode", "oneOf"),
    } <= losses


def test_anthropic_and_kimi_drop_strict_with_a_note() -> None:
    for target in ("anthropic", "kimi"):
        rendered = render(_history(), target, tools=[WEATHER])
        assert "strict" not in json.dumps(rendered.payload["tools"])
        assert any(n.keyword == "strict" for n in rendered.diagnostics.tools), target


def test_no_tools_no_tools_field() -> None:
    for target in TARGETS:
        assert "tools" not in render(_history(), target, tools=[]).payload


def test_a_tool_defined_twice_is_sent_once() -> None:
    rendered = render(_history(), "openai-chat", tools=[WEATHER, WEATHER])
    assert len(rendered.payload["tools"]) == 1
    assert any("defined twice" in note for note in rendered.diagnostics.notes)


# -- properties ---------------------------------------------------------------------------------

_NAMES = st.text(alphabet=st.sampled_from("abcXYZ019_-.: /éß"), min_size=1, max_size=80).filter(
    lambda s: s.strip()
)

_SCALARS = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "format": "uuid"},
        {"type": "string", "format": "date-time", "maxLength": 5},
        {"type": "integer", "minimum": 0, "multipleOf": 2},
        {"type": "number", "format": "float"},
        {"type": "boolean"},
        {"type": ["string", "null"]},
        {"enum": [1, 2, 3]},
        {"const": "x"},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        {"$ref": "#/$defs/Node"},
        {},
        True,
    ]
)


def _object_schemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda props, required, extra: {
            "type": "object",
            "properties": props,
            "required": [k for k in props if k in required],
            **({"additionalProperties": extra} if extra is not None else {}),
        },
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), children, max_size=4),
        st.sets(st.sampled_from(["a", "b", "c"])),
        st.sampled_from([None, False, True, {"type": "string"}]),
    )


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        _object_schemas(children),
        st.builds(lambda items: {"type": "array", "items": items}, children),
        st.builds(lambda branches: {"allOf": branches}, st.lists(children, min_size=1, max_size=2)),
    )


_SCHEMAS = st.recursive(_SCALARS, _objects, max_leaves=12)


@st.composite
def _tool_definitions(draw: st.DrawFn) -> ToolDefinition:
    body = draw(_object_schemas(_SCHEMAS))
    body["$defs"] = {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}
    return ToolDefinition(
        name=draw(_NAMES),
        description=draw(st.none() | st.text(max_size=20)),
        parameters=body,
        strict=draw(st.none() | st.booleans()),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    definitions=st.lists(_tool_definitions(), min_size=1, max_size=4, unique_by=lambda t: t.name)
)
def test_any_tools_render_valid_and_consistent_on_every_target(
    definitions: list[ToolDefinition],
) -> None:
    """Whatever the schemas and names: every target's payload passes its rules and SDK types,
    every definition is sent once, and each call carries its definition's wire name."""
    history = [
        Message.user("go"),
        Message.assistant(
            *[
                ToolCallPart(id=f"c{i}", name=d.name, arguments={})
                for i, d in enumerate(definitions)
            ]
        ),
        *[Message.tool_result(f"c{i}", "ok", name=d.name) for i, d in enumerate(definitions)],
    ]
    for target, model in TARGET_MODELS:
        rendered = render(history, target, model=model, tools=definitions)
        check_payload(target, model, rendered.payload)
        names = _tool_names(target, rendered.payload)
        assert len(names) == len(definitions)
        calls, results = _call_and_result_names(target, rendered.payload)
        expected = [rendered.diagnostics.name_map.get(d.name, d.name) for d in definitions]
        assert names == expected and calls == expected
        assert set(results) <= set(names)


# -- parse_tools and the corpus ----------------------------------------------------------------

RECORDS = sorted(CORPUS_DIR.glob("*.json"))


def _record(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
def test_corpus_tools_render_back_equivalently(path: Path) -> None:
    """A request's own tools, parsed and rendered back to its own target and model, are the
    tools it sent (Mistral's requests leave out ``"type": "function"``, which we send)."""
    record = _record(path)
    api, model, request = record["api"], record["model"], record["request"]
    tools = parse_tools(request, api)
    original = request.get("tools", [])
    if not original:
        assert tools == []
        return
    assert tools, "every accepted request with tools has function tools"
    source = "openai-chat" if api == "mistral" else api
    rendered = render(parse(request, source, model=model), api, model=model, tools=tools)
    check_payload(api, model, rendered.payload)
    sent = rendered.payload["tools"]
    if api == "mistral":
        sent = [{k: v for k, v in t.items() if k != "type"} for t in sent]
    if "parameters_json_schema" in json.dumps(original):
        # Gemini requests may give a JSON Schema; we send the OpenAPI ``parameters`` the
        # contract names, which cannot say additionalProperties: the one loss, and it is noted.
        assert {(n.keyword, n.path) for n in rendered.diagnostics.tools} <= {
            ("additionalProperties", "")
        }
        closed = [
            t.model_copy(update={"parameters": _without(t.parameters, "additionalProperties")})
            for t in tools
        ]
        assert parse_tools(rendered.payload, api) == closed
        return
    assert sent == original
    assert parse_tools(rendered.payload, api) == tools
    assert rendered.diagnostics.tools == []


def _without(schema: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


@pytest.mark.parametrize("path", RECORDS[::7], ids=[p.stem for p in RECORDS[::7]])
def test_corpus_tools_render_to_every_target(path: Path) -> None:
    record = _record(path)
    tools = parse_tools(record["request"], record["api"])
    source = "openai-chat" if record["api"] == "mistral" else record["api"]
    messages = parse(record["request"], source, model=record["model"])
    for target, model in TARGET_MODELS:
        rendered = render(messages, target, model=model, tools=tools)
        check_payload(target, model, rendered.payload)
        assert len(_tool_names(target, rendered.payload)) == len(tools)


def test_parse_tools_reads_each_format() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert parse_tools(
        {
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "f", "parameters": schema, "strict": True},
                }
            ]
        },
        "openai-chat",
    ) == [ToolDefinition(name="f", parameters=schema, strict=True)]
    assert parse_tools(
        {"tools": [{"type": "function", "name": "f", "parameters": schema, "strict": False},
                   {"type": "web_search"}]},
        "openai-responses",
    ) == [ToolDefinition(name="f", parameters=schema, strict=False)]  # fmt: skip
    assert parse_tools(
        {"tools": [{"name": "f", "description": "d", "input_schema": schema},
                   {"type": "web_search_20250305", "name": "web_search"}]},
        "anthropic",
    ) == [ToolDefinition(name="f", description="d", parameters=schema)]  # fmt: skip
    assert parse_tools(
        {"tools": [{"function_declarations": [
            {"name": "f", "parameters": {"type": "OBJECT", "properties": {
                "q": {"type": "STRING", "nullable": True}}}}]}, {"googleSearch": {}}]},
        "gemini",
    ) == [ToolDefinition(name="f", parameters={"type": "object", "properties": {
        "q": {"type": ["string", "null"]}}})]  # fmt: skip
    assert parse_tools({"functions": [{"name": "legacy"}]}, "kimi") == [
        ToolDefinition(name="legacy")
    ]
    assert parse_tools({"messages": []}, "mistral") == []


@pytest.mark.parametrize(
    ("payload", "source"),
    [
        ({"tools": [{"type": "function", "function": {"parameters": {}}}]}, "openai-chat"),
        ({"tools": [{"name": 3, "input_schema": {}}]}, "anthropic"),
        ({"tools": {"not": "a list"}}, "openai-responses"),
        ({"tools": [{"functionDeclarations": [{"name": "f", "parameters": []}]}]}, "gemini"),
    ],
)
def test_malformed_tools_are_typed_errors(payload: dict[str, Any], source: str) -> None:
    with pytest.raises(MalformedPayloadError):
        parse_tools(payload, source)


def test_unknown_source() -> None:
    with pytest.raises(UnsupportedFormatError):
        parse_tools({}, "cohere")


def test_public_names() -> None:
    assert convstore.ToolDefinition is ToolDefinition
    assert convstore.parse_tools is parse_tools
