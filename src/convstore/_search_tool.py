"""A search tool an agent can call: `ConversationStore.search` as a plain async function.

`search_tool(store, tenant=...)` returns ``search_conversations(query, conversation_id=None,
roles=None, limit=10)``, an async function with type hints and a docstring that agent
frameworks turn into a tool schema (openai-agents' ``function_tool``, pydantic-ai's
``Agent(tools=[...])``; see ``docs/search.md``). `SEARCH_TOOL_PARAMETERS` is the same schema
as JSON Schema, for frameworks that take one directly.

Invariants:

- The tenant is bound when the tool is made, never a parameter: a model cannot search another
  tenant's conversations, whatever it passes.
- The tool returns JSON-ready dicts (no model objects), and raises for nothing a model may
  send: a query is data (`convstore.store.search`); a ``limit`` above the maximum is clamped;
  anything else it cannot search with (a query that is not text or holds a lone surrogate, a
  ``limit`` that is no whole number, an unknown role) comes back as a ``"search refused: …"``
  string, the tool's result, so the model reads why and one bad call does not end an agent's
  run (a framework turns a raised exception into its own generic error text).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final, TypedDict

from pydantic import WithJsonSchema

from convstore.errors import InvalidInputError
from convstore.store import ConversationStore

__all__ = ["SEARCH_TOOL_PARAMETERS", "SearchToolHit", "search_tool"]

MAX_TOOL_LIMIT: Final = 50


class SearchToolHit(TypedDict):
    """One hit as the tool returns it."""

    conversation_id: str
    conversation_title: str | None
    seq: int | None
    role: str | None
    snippet: str
    on_active_path: bool


SEARCH_TOOL_PARAMETERS: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": 'Words, "exact phrases" and -excluded words; each is found as a '
            "case-insensitive substring (any language, code identifiers).",
        },
        "conversation_id": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "Search only this conversation.",
            "default": None,
        },
        "roles": {
            "anyOf": [
                {"type": "array", "items": {"enum": ["system", "user", "assistant", "tool"]}},
                {"type": "null"},
            ],
            "description": "Only messages with these roles.",
            "default": None,
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOOL_LIMIT,
            "description": "How many hits, best first.",
            "default": 10,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _is_text(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON can carry one, no database stores it
        return False
    return True


def _refusal(query: object, conversation_id: object, limit: object) -> str | None:
    """Why the tool cannot search with these arguments, or None."""
    if not _is_text(query):
        return "query must be text (a string without lone surrogates)"
    if conversation_id is not None and not _is_text(conversation_id):
        return "conversation_id must be text or null"
    whole = isinstance(limit, int) or (isinstance(limit, float) and limit.is_integer())
    if isinstance(limit, bool) or not whole:
        return f"limit must be a whole number from 1 to {MAX_TOOL_LIMIT}, not {limit!r}"
    return None


def _described(name: str) -> WithJsonSchema:
    """The JSON Schema a framework shows the model for parameter ``name``, validating nothing.

    Frameworks validate a tool's arguments against its signature before calling it, and answer
    a mismatch with their own generic error text; with these annotations every argument
    reaches the tool, which refuses what it cannot use in words the model can act on.
    """
    schema = dict(SEARCH_TOOL_PARAMETERS["properties"][name])
    schema.pop("default", None)  # the signature's default is the framework's to state
    return WithJsonSchema(schema)


_Query = Annotated[Any, _described("query")]
_ConversationId = Annotated[Any, _described("conversation_id")]
_Roles = Annotated[Any, _described("roles")]
_Limit = Annotated[Any, _described("limit")]


def search_tool(
    store: ConversationStore, *, tenant: str | None = None, include_thinking: bool = False
) -> Callable[..., Awaitable[list[SearchToolHit] | str]]:
    """A ``search_conversations`` tool over ``store``, confined to ``tenant``."""

    async def search_conversations(
        query: _Query,
        conversation_id: _ConversationId = None,
        roles: _Roles = None,
        limit: _Limit = 10,
    ) -> list[SearchToolHit] | str:
        """Search past conversations for messages and titles containing the query.

        Args:
            query: Words, "exact phrases" and -excluded words; each is found as a
                case-insensitive substring (any language, code identifiers).
            conversation_id: Search only this conversation.
            roles: Only messages with these roles (system, user, assistant, tool).
            limit: How many hits, best first (1 to 50).
        """
        refusal = _refusal(query, conversation_id, limit)
        if refusal is not None:
            return f"search refused: {refusal}"
        try:
            page = await store.search(
                query,
                tenant=tenant,
                conversation_id=conversation_id,
                roles=roles,
                include_thinking=include_thinking,
                limit=max(1, min(int(limit), MAX_TOOL_LIMIT)),
            )
        except InvalidInputError as exc:
            return f"search refused: {exc}"
        return [
            SearchToolHit(
                conversation_id=hit.conversation_id,
                conversation_title=hit.conversation_title,
                seq=hit.seq,
                role=None if hit.role is None else hit.role.value,
                snippet=hit.snippet,
                on_active_path=hit.on_active_path,
            )
            for hit in page
        ]

    return search_conversations
