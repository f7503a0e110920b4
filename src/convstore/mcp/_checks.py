r"""Refusals: every tool call is checked against the tool's own input schema before it runs.

One middleware on the server sees each request before the SDK validates it. A ``tools/call``
naming an unknown tool, an argument the tool does not take, a value of the wrong type or out
of range, or text that is not valid Unicode (a lone surrogate, as JSON's ``\ud800`` escape or
undecodable bytes can produce) is answered at once with a tool error whose text starts with
``refused:`` and says what was wrong. The SDK's own validation would coerce some of these
(``"5"`` for an integer) and word the rest as a Python validation error; models correct
themselves from a short, exact reason.

Any other request whose parameters hold a lone surrogate is a JSON-RPC invalid-params error
with the same wording. Caller-supplied text is quoted ASCII-escaped and shortened, so a refusal
can always be sent (and never carries megabytes back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent

__all__ = ["ArgumentChecks", "quote", "refused", "surrogate_path"]

_QUOTED_MAX: Final = 80
_REASON_MAX: Final = 300


def quote(value: Any) -> str:
    """``value`` as short, ASCII-only JSON: safe to echo in any message."""
    text = json.dumps(value, ensure_ascii=True, default=repr)
    return text if len(text) <= _QUOTED_MAX else f"{text[: _QUOTED_MAX - 1]}…"


def refused(why: str) -> CallToolResult:
    """The tool error a refused call gets."""
    return CallToolResult(content=[TextContent(type="text", text=f"refused: {why}")], is_error=True)


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def surrogate_path(value: Any, path: str = "") -> str | None:
    """Where in ``value`` (a decoded JSON value) a string holds a lone surrogate, or ``None``."""
    if isinstance(value, str):
        return path or "the value" if _has_surrogate(value) else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            key_text = str(key)
            where = f"{path}.{quote(key_text)}" if path else quote(key_text)
            if _has_surrogate(key_text):
                return f"a key of {path or 'the object'}"
            found = surrogate_path(item, where)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = surrogate_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _reason(arguments: Mapping[str, Any], validator: Draft202012Validator) -> str | None:
    """Why ``arguments`` do not fit the tool's input schema (``validator``'s), or ``None``."""
    schema = validator.schema
    where = surrogate_path(arguments)
    if where is not None:
        return f"argument {where} is not valid Unicode text (it holds a lone surrogate)"
    known = schema.get("properties", {})
    unknown = [name for name in arguments if name not in known]
    if unknown:
        return (
            f"unknown argument {quote(unknown[0])}; this tool takes "
            f"{', '.join(sorted(known)) or 'no arguments'}"
        )
    # best_match descends into anyOf branches: "'robot' is not one of [...]" at roles.0, not
    # "['robot'] is not valid under any of the given schemas".
    error = best_match(validator.iter_errors(dict(arguments)))
    if error is None:
        return None
    name = ".".join(str(step) for step in error.absolute_path) or "arguments"
    message = error.message
    if len(message) > _REASON_MAX:
        message = f"{message[:_REASON_MAX]}…"
    return f"argument {name}: {message}"


class ArgumentChecks:
    """The middleware: refuse a bad call before the SDK or the tool sees it."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server
        self._validators: dict[str, Draft202012Validator] | None = None

    async def _input_validators(self) -> dict[str, Draft202012Validator]:
        # Tools are fixed when the server is made: their schemas are read once.
        if self._validators is None:
            tools = await self._server.list_tools()
            self._validators = {
                tool.name: Draft202012Validator(dict(tool.input_schema)) for tool in tools
            }
        return self._validators

    async def _call_refusal(self, params: Mapping[str, Any]) -> str | None:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str):
            return None  # not a tools/call the SDK can read: its own -32602 answers it
        validators = await self._input_validators()
        if name not in validators:
            return f"unknown tool {quote(name)}; the tools are {', '.join(sorted(validators))}"
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return f"the arguments must be an object, not {quote(arguments)}"
        return _reason(arguments, validators[name])

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Check one inbound message; pass it on unless it is refused."""
        params = ctx.params
        if ctx.request_id is None or not isinstance(params, Mapping):
            return await call_next(ctx)
        if ctx.method == "tools/call":
            why = await self._call_refusal(params)
            if why is not None:
                return refused(why)
        else:
            where = surrogate_path(params)
            if where is not None:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"refused: {where} is not valid Unicode text (a lone surrogate)",
                )
        return await call_next(ctx)
