"""Tool definitions on the wire: each format's ``tools`` field, read and written.

Shapes (sources in ``docs/providers/<target>.md``):

=========================== =====================================================================
format                      ``tools`` entry
=========================== =====================================================================
Chat (OpenAI, Mistral, Kimi) ``{"type": "function", "function": {name, description, parameters,
                            strict?}}`` (and the legacy top-level ``functions`` list, read only)
Responses                   ``{"type": "function", name, description, parameters, strict}``
Anthropic                   ``{name, description, input_schema}``
Gemini                      ``{"functionDeclarations": [{name, description, parameters}]}``
                            (``parametersJsonSchema`` is read too)
=========================== =====================================================================

Invariants:

- Writing: every definition goes under the name the plan projected for it (the one its calls
  carry); its schema is rewritten by `convstore.providers._schema` for the target's dialect;
  every loss is a `SchemaNote` in the plan's diagnostics. ``strict`` is sent only where the
  capabilities row says the target takes it (elsewhere a ``strict=True`` is noted as dropped).
- Reading: only function tools become `ToolDefinition`s; built-in tools (web search, code
  execution, Anthropic server tools, Gemini ``googleSearch``...) are not tool definitions a
  history's calls can name, and are skipped. Gemini's OpenAPI schemas are read back as JSON
  Schema (lower-case types, ``nullable`` as a union with ``null``), so a Gemini request renders
  back to the same declarations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from convstore.capabilities import ToolSchema
from convstore.errors import InvalidMessageError, MalformedPayloadError
from convstore.model import ToolDefinition
from convstore.providers._parsing import Json
from convstore.providers._schema import gemini_schema, object_schema, strict_schema
from convstore.transcript.diagnostics import SchemaNote
from convstore.transcript.plan import Plan, ToolSpec

__all__ = [
    "anthropic_tools",
    "chat_tools",
    "gemini_tools",
    "read_tools",
    "responses_tools",
]

_Tool = dict[str, Any]

# -- writing ----------------------------------------------------------------------------------


def _parameters(plan: Plan, spec: ToolSpec) -> dict[str, Any]:
    definition = spec.definition
    notes = plan.diagnostics.tools

    def loss(path: str, keyword: str, detail: str) -> None:
        notes.append(SchemaNote(definition.name, path, keyword, detail))

    caps = plan.capabilities
    if caps.tool_schema is ToolSchema.OPENAPI:
        return gemini_schema(definition.parameters, loss)
    if definition.strict and caps.strict_tools:
        return strict_schema(definition.parameters, loss)
    return object_schema(definition.parameters, loss)


def _strict(plan: Plan, spec: ToolSpec) -> bool | None:
    strict = spec.definition.strict
    if strict and not plan.capabilities.strict_tools:
        plan.diagnostics.tools.append(
            SchemaNote(
                spec.definition.name, "", "strict", f"{plan.target} has no strict mode: dropped"
            )
        )
        return None
    return strict if plan.capabilities.strict_tools else None


def _function(plan: Plan, spec: ToolSpec, schema_key: str) -> tuple[_Tool, bool | None]:
    """A function's declaration and the strict flag the target keeps (None: leave it out).

    The declaration: its wire name, its parameters under ``schema_key``, its description when
    it has one.
    """
    function: _Tool = {"name": spec.wire_name, schema_key: _parameters(plan, spec)}
    if spec.definition.description is not None:
        function["description"] = spec.definition.description
    return function, _strict(plan, spec)


def chat_tools(plan: Plan) -> list[_Tool]:
    """The Chat Completions ``tools`` field (OpenAI, Mistral, Kimi)."""
    out: list[_Tool] = []
    for spec in plan.tools:
        function, strict = _function(plan, spec, "parameters")
        if strict is not None:
            function["strict"] = strict
        out.append({"type": "function", "function": function})
    return out


def responses_tools(plan: Plan) -> list[_Tool]:
    """The Responses ``tools`` field (``strict`` is required there; ``false`` when unsaid)."""
    return [
        {
            "type": "function",
            "name": spec.wire_name,
            "description": spec.definition.description,
            "parameters": _parameters(plan, spec),
            "strict": bool(_strict(plan, spec)),
        }
        for spec in plan.tools
    ]


def anthropic_tools(plan: Plan) -> list[_Tool]:
    """The Anthropic Messages ``tools`` field (no strict mode: a strict tool is noted)."""
    return [_function(plan, spec, "input_schema")[0] for spec in plan.tools]


def gemini_tools(plan: Plan) -> list[_Tool]:
    """The Gemini ``tools`` field: one tool holding every function declaration."""
    declarations = [_function(plan, spec, "parameters")[0] for spec in plan.tools]
    return [{"functionDeclarations": declarations}] if declarations else []


# -- reading ----------------------------------------------------------------------------------

_SPELLINGS: Final = {
    "functionDeclarations": ("functionDeclarations", "function_declarations"),
    "parametersJsonSchema": ("parametersJsonSchema", "parameters_json_schema"),
}


def _definition(
    node: Json, name_key: str, schema: Json | None, *, strict: Json | None = None
) -> ToolDefinition:
    name = node.require(name_key).string()
    description = node.get("description")
    parameters = schema.object() if schema is not None else {}
    flag = strict.boolean() if strict is not None else None
    try:
        return ToolDefinition(
            name=name,
            description=description.string() if description is not None else None,
            parameters=parameters or {"type": "object", "properties": {}},
            strict=flag,
        )
    except InvalidMessageError as exc:
        raise node.fail(f"is not a tool definition: {exc}") from exc


def _chat(root: Json) -> list[ToolDefinition]:
    out: list[ToolDefinition] = []
    for tool in (root.get("tools") or Json([], root.source)).items():
        if tool.str_or_none("type") not in (None, "function"):
            continue
        function = tool.require("function")
        out.append(
            _definition(function, "name", function.get("parameters"), strict=function.get("strict"))
        )
    legacy = root.get("functions") or Json([], root.source)
    out.extend(_definition(f, "name", f.get("parameters")) for f in legacy.items())
    return out


def _responses(root: Json) -> list[ToolDefinition]:
    return [
        _definition(tool, "name", tool.get("parameters"), strict=tool.get("strict"))
        for tool in (root.get("tools") or Json([], root.source)).items()
        if tool.str_or_none("type") == "function"
    ]


def _anthropic(root: Json) -> list[ToolDefinition]:
    return [
        _definition(tool, "name", tool.get("input_schema"))
        for tool in (root.get("tools") or Json([], root.source)).items()
        # Client tools have no type or "custom"; server tools name a versioned type.
        if tool.str_or_none("type") in (None, "custom") and tool.has("input_schema")
    ]


def _gemini(root: Json) -> list[ToolDefinition]:
    out: list[ToolDefinition] = []
    for tool in (root.get("tools") or Json([], root.source)).items():
        declarations = tool.get(*_SPELLINGS["functionDeclarations"])
        for declaration in (declarations or Json([], root.source)).items():
            json_schema = declaration.get(*_SPELLINGS["parametersJsonSchema"])
            if json_schema is not None:
                out.append(_definition(declaration, "name", json_schema))
                continue
            definition = _definition(declaration, "name", declaration.get("parameters"))
            out.append(
                definition.model_copy(update={"parameters": _from_openapi(definition.parameters)})
            )
    return out


def _from_openapi(schema: Any) -> Any:
    """A Gemini OpenAPI schema as JSON Schema: lower-case types, ``nullable`` as ``null``."""
    if isinstance(schema, list):
        return [_from_openapi(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _from_openapi(prop) for name, prop in value.items()}
        elif key in ("items", "anyOf", "any_of"):
            out["anyOf" if key == "any_of" else key] = _from_openapi(value)
        elif key != "nullable":
            out[key] = value
    if schema.get("nullable") is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif isinstance(out.get("anyOf"), list):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    return out


_READERS: Final = {
    "openai-chat": _chat,
    "mistral": _chat,
    "kimi": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def read_tools(payload: Json, source: str) -> list[ToolDefinition]:
    """The function tool definitions of a request payload in ``source`` format."""
    reader = _READERS.get(source)
    if reader is None:
        raise MalformedPayloadError(f"no tool definitions are read from {source!r}")
    return reader(payload)
