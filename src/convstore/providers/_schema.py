"""Rewriting a tool's JSON Schema into the subset a target accepts.

Three dialects, chosen by the capabilities row (`convstore.capabilities.ToolSchema`):

- ``JSON_SCHEMA``: the schema as written, with an object root (Anthropic ``input_schema``,
  Chat Completions and Responses without strict mode, Mistral, Kimi).
- ``OPENAI_STRICT`` (a tool with ``strict=True`` on an OpenAI target): every object gets
  ``additionalProperties: false`` and lists every property in ``required``; a property that was
  optional becomes a union with ``null``; keywords strict mode does not support are dropped.
- ``OPENAPI`` (Gemini ``functionDeclarations``): the OpenAPI 3.0 subset of Gemini's ``Schema``:
  ``$ref`` inlined from ``$defs``/``definitions``, no ``additionalProperties``, ``anyOf`` with a
  ``null`` branch (or a ``type`` list with ``null``) as ``nullable``, upper-case type names,
  only the ``format`` values Gemini documents per type, string-only ``enum``.

Invariants:

- Pure: the input schema is never changed; a new one is returned.
- Every constraint the rewrite cannot keep, and every rewrite that changes meaning, is reported
  through the ``loss`` callback (tool, JSON-pointer-like path, keyword, what happened), which
  the encoders turn into `convstore.transcript.diagnostics.SchemaNote`s.
- Bounded: recursive ``$ref``s are cut at their first repetition, and nesting deeper than
  `MAX_SCHEMA_DEPTH` is replaced by an unconstrained schema, both reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["MAX_SCHEMA_DEPTH", "LossHandler", "gemini_schema", "object_schema", "strict_schema"]

MAX_SCHEMA_DEPTH: Final = 32
"""Deepest schema nesting rewritten; below it a node becomes unconstrained (and is reported)."""

LossHandler = Callable[[str, str, str], None]
"""``loss(path, keyword, detail)``: one constraint dropped or rewritten."""

_Schema = dict[str, Any]

# Gemini ``Schema`` fields (ai.google.dev/api/caching#Schema), camelCase as the REST API names them.
_GEMINI_KEYS: Final = frozenset(
    {
        "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
        "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
        "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
        "maximum",
    }
)  # fmt: skip
_GEMINI_FORMATS: Final[dict[str, frozenset[str]]] = {
    "NUMBER": frozenset({"float", "double"}),
    "INTEGER": frozenset({"int32", "int64"}),
    "STRING": frozenset({"enum", "date-time"}),
}
_GEMINI_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "array", "object"})

# Keywords OpenAI strict mode refuses ("Supported schemas", Structured Outputs guide).
_STRICT_UNSUPPORTED: Final = frozenset(
    {
        "minLength", "maxLength", "minProperties", "maxProperties", "patternProperties",
        "unevaluatedProperties", "propertyNames", "uniqueItems", "contains", "minContains",
        "maxContains", "unevaluatedItems", "not", "if", "then", "else", "dependentRequired",
        "dependentSchemas", "allOf",
    }
)  # fmt: skip
# Keywords that only annotate: dropping them loses no constraint, so it is not reported.
_ANNOTATIONS: Final = frozenset({"$schema", "$id", "$comment", "examples", "deprecated"})


def object_schema(schema: Mapping[str, Any], loss: LossHandler) -> _Schema:
    """``schema`` with an object root, as every target requires of a tool's parameters."""
    out = dict(schema)
    if out.get("type") != "object":
        if "type" in out:
            loss("", "type", f"root type {out['type']!r} replaced by 'object'")
        out["type"] = "object"
    out.setdefault("properties", {})
    return out


# -- OpenAI strict mode -----------------------------------------------------------------------


def strict_schema(schema: Mapping[str, Any], loss: LossHandler) -> _Schema:
    """``schema`` as OpenAI strict mode requires it."""
    out: _Schema = _Strict(loss).node(object_schema(schema, loss), "", 0)
    return out


class _Strict:
    def __init__(self, loss: LossHandler) -> None:
        self._loss = loss

    def node(self, schema: Any, path: str, depth: int) -> Any:
        if not isinstance(schema, Mapping):
            return schema  # booleans stand as they are
        if depth > MAX_SCHEMA_DEPTH:
            self._loss(path, "*", f"nested deeper than {MAX_SCHEMA_DEPTH} levels: unconstrained")
            return {}
        out: _Schema = {}
        for key, value in schema.items():
            if key in _STRICT_UNSUPPORTED and not (key == "allOf" and len(value) == 1):
                self._loss(path, key, "not supported in strict mode: dropped")
                continue
            name = key
            if key == "oneOf":
                self._loss(path, "oneOf", "sent as anyOf (exclusivity not enforced)")
                name = "anyOf"
            out[name] = self._child(name, value, path, depth)
        if "allOf" in out:  # a single allOf branch merges into its parent
            (only,) = out.pop("allOf")
            if isinstance(only, Mapping):
                out = {**only, **out}
            elif only is not True:
                self._loss(path, "allOf", f"boolean branch {only!r}: dropped")
        if out.get("type") == "object" or "properties" in out:
            self._close_object(out, path)
        return out

    def _child(self, key: str, value: Any, path: str, depth: int) -> Any:
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            return {k: self.node(v, f"{path}/{key}/{k}", depth + 1) for k, v in value.items()}
        if key in ("items", "additionalProperties") and isinstance(value, Mapping):
            return self.node(value, f"{path}/{key}", depth + 1)
        if key in ("anyOf", "allOf", "prefixItems") and isinstance(value, list):
            return [self.node(v, f"{path}/{key}/{i}", depth + 1) for i, v in enumerate(value)]
        return value

    def _close_object(self, out: _Schema, path: str) -> None:
        extra = out.get("additionalProperties")
        if extra is not False:
            if extra is not None:
                self._loss(path, "additionalProperties", "strict mode requires false: replaced")
            out["additionalProperties"] = False
        properties: dict[str, Any] = dict(out.get("properties") or {})
        required = set(out.get("required") or ())
        for name, prop in properties.items():
            if name not in required:
                properties[name] = _nullable(prop)
                self._loss(
                    f"{path}/properties/{name}", "required", "optional: required, null allowed"
                )
        out["properties"] = properties
        out["required"] = list(properties)


def _nullable(schema: Any) -> Any:
    """``schema`` also accepting ``null`` (how strict mode spells an optional property)."""
    if not isinstance(schema, Mapping):
        return schema
    kind = schema.get("type")
    out = dict(schema)
    if isinstance(kind, str) and "$ref" not in schema and "anyOf" not in schema:
        if kind != "null":
            out["type"] = [kind, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        return out
    if isinstance(kind, list):
        if "null" not in kind:
            out["type"] = [*kind, "null"]
        return out
    if isinstance(out.get("anyOf"), list):
        if not any(isinstance(b, Mapping) and b.get("type") == "null" for b in out["anyOf"]):
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    return {"anyOf": [out, {"type": "null"}]}


# -- Gemini ----------------------------------------------------------------------------------


def gemini_schema(schema: Mapping[str, Any], loss: LossHandler) -> _Schema:
    """``schema`` in Gemini's OpenAPI subset."""
    root = object_schema(schema, loss)
    definitions: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = root.get(key)
        if isinstance(found, Mapping):
            definitions.update({f"#/{key}/{name}": value for name, value in found.items()})
    out = _Gemini(loss, definitions).node(root, "", 0, ())
    return out if isinstance(out, dict) else {"type": "OBJECT", "properties": {}}


class _Gemini:
    def __init__(self, loss: LossHandler, definitions: Mapping[str, Any]) -> None:
        self._loss = loss
        self._definitions = definitions

    def node(self, schema: Any, path: str, depth: int, refs: tuple[str, ...]) -> _Schema:
        if not isinstance(schema, Mapping):
            if schema is not True:
                self._loss(path, "*", f"boolean schema {schema!r}: unconstrained")
            return {}
        if depth > MAX_SCHEMA_DEPTH:
            self._loss(path, "*", f"nested deeper than {MAX_SCHEMA_DEPTH} levels: unconstrained")
            return {}
        resolved = self._resolve(schema, path, refs)
        if resolved is None:  # a recursive reference, cut
            return {"type": "OBJECT"}
        schema, refs_here = resolved
        out: _Schema = {}
        nullable = self._types(schema, out, path)
        for key, value in schema.items():
            if key in ("type", "anyOf", "oneOf", "allOf", "const", "$defs", "definitions"):
                continue
            if key not in _GEMINI_KEYS:
                if key not in _ANNOTATIONS:
                    self._loss(path, key, "not in Gemini's schema subset: dropped")
                continue
            out[key] = self._child(key, value, path, depth, refs_here)
        nullable |= self._unions(schema, out, path, depth, refs_here)
        self._const(schema, out, path)
        if nullable:
            out["nullable"] = True
        self._check_format(out, path)
        self._check_enum(out, path)
        if "required" in out:
            known = out.get("properties") or {}
            out["required"] = [name for name in out["required"] if name in known]
        return out

    def _resolve(
        self, schema: Mapping[str, Any], path: str, refs: tuple[str, ...]
    ) -> tuple[_Schema, tuple[str, ...]] | None:
        """The node with its ``$ref`` chain inlined, and the references followed.

        Sibling keywords win over the referenced schema's; ``None`` for a recursive reference.
        """
        out = dict(schema)
        seen: list[str] = []
        while isinstance(out.get("$ref"), str):
            ref = out["$ref"]
            if ref in refs or ref in seen:
                self._loss(path, "$ref", f"recursive reference {ref}: cut to an object")
                return None
            target = self._definitions.get(ref)
            if not isinstance(target, Mapping):
                self._loss(path, "$ref", f"unresolvable reference {ref}: unconstrained")
                out.pop("$ref")
                break
            seen.append(ref)
            out.pop("$ref")
            out = {**target, **out}
        return out, (*refs, *seen)

    def _types(self, schema: Mapping[str, Any], out: _Schema, path: str) -> bool:
        kind = schema.get("type")
        names = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        nullable = "null" in names
        names = [n for n in names if n != "null"]
        if len(names) > 1:
            self._loss(path, "type", f"type union {names} kept as its first type {names[0]!r}")
        if names:
            if names[0] in _GEMINI_TYPES:
                out["type"] = names[0].upper()
            elif names[0].upper() in _GEMINI_FORMATS or names[0].lower() in _GEMINI_TYPES:
                out["type"] = names[0].upper()  # already Gemini's spelling
            else:
                self._loss(path, "type", f"unknown type {names[0]!r}: dropped")
        return nullable

    def _unions(
        self, schema: Mapping[str, Any], out: _Schema, path: str, depth: int, refs: tuple[str, ...]
    ) -> bool:
        nullable = False
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if not isinstance(branches, list):
                continue
            if key == "oneOf":
                self._loss(path, "oneOf", "sent as anyOf (exclusivity not enforced)")
            kept = []
            for index, branch in enumerate(branches):
                if (
                    isinstance(branch, Mapping)
                    and branch.get("type") == "null"
                    and len(branch) == 1
                ):
                    nullable = True
                    continue
                kept.append(self.node(branch, f"{path}/{key}/{index}", depth + 1, refs))
            if len(kept) == 1:
                out.update({k: v for k, v in kept[0].items() if k not in out})
            elif kept:
                out["anyOf"] = kept
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            if len(all_of) > 1:
                self._loss(path, "allOf", "branches merged into one schema")
            for index, branch in enumerate(all_of):
                merged = self.node(branch, f"{path}/allOf/{index}", depth + 1, refs)
                for k, v in merged.items():
                    if k == "properties" and isinstance(out.get(k), dict):
                        out[k] = {**out[k], **v}
                    elif k == "required" and isinstance(out.get(k), list):
                        out[k] = list(dict.fromkeys([*out[k], *v]))
                    else:
                        out.setdefault(k, v)
        return nullable

    def _child(self, key: str, value: Any, path: str, depth: int, refs: tuple[str, ...]) -> Any:
        if key == "properties" and isinstance(value, Mapping):
            return {
                name: self.node(prop, f"{path}/properties/{name}", depth + 1, refs)
                for name, prop in value.items()
            }
        if key == "items":
            if isinstance(value, list):
                self._loss(path, "items", "tuple items: only the first kept")
                value = value[0] if value else {}
            return self.node(value, f"{path}/items", depth + 1, refs)
        return value

    def _const(self, schema: Mapping[str, Any], out: _Schema, path: str) -> None:
        if "const" not in schema:
            return
        value = schema["const"]
        if isinstance(value, str):
            out["enum"] = [value]
            out.setdefault("type", "STRING")
        else:
            self._loss(path, "const", f"non-string const {value!r}: dropped")

    def _check_format(self, out: _Schema, path: str) -> None:
        fmt = out.get("format")
        if fmt is None:
            return
        allowed = _GEMINI_FORMATS.get(str(out.get("type")), frozenset())
        if fmt not in allowed:
            del out["format"]
            self._loss(path, "format", f"format {fmt!r} not supported for this type: dropped")

    def _check_enum(self, out: _Schema, path: str) -> None:
        enum = out.get("enum")
        if enum is None:
            return
        if not isinstance(enum, list) or not all(isinstance(v, str) for v in enum):
            del out["enum"]
            self._loss(path, "enum", "only string enums are supported: dropped")
        elif out.get("type", "STRING") != "STRING":
            del out["enum"]
            self._loss(path, "enum", "enum on a non-string type: dropped")
