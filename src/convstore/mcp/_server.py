"""`create_server`: the MCP server object, its four tools and its resources.

Invariants:

- Read-only: every tool and resource reads through the public `ConversationStore` API, with the
  tenant given here; no argument can name another tenant.
- Tool names, argument names and result shapes are CONTRACT.md v4's. Each tool's input schema
  states its limits, and `ArgumentChecks` refuses a call outside its schema before the tool runs.
- Resources: ``convstore://conversations/{id}`` (a template: the active path as Markdown), and
  the newest `RECENT_RESOURCES` conversations listed as resources of that form.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp_types import CallToolResult, ToolAnnotations
from mcp_types import Resource as MCPResource
from pydantic import Field

from convstore import ConversationStore, ConvstoreError, __version__
from convstore.mcp._checks import ArgumentChecks
from convstore.mcp._results import ListResult, ReadResult, SearchResult, ToolCallDetail
from convstore.mcp._tools import (
    LIST_LIMIT_MAX,
    READ_LAST_MAX,
    SEARCH_LIMIT_MAX,
    ConversationTools,
)
from convstore.mcp._views import markdown

__all__ = ["RECENT_RESOURCES", "RESOURCE_LAST", "create_server"]

RECENT_RESOURCES: Final = 50
RESOURCE_LAST: Final = 500
URI_PREFIX: Final = "convstore://conversations/"

_INSTRUCTIONS: Final = (
    "Past conversations of this application's users, read-only. search_conversations finds "
    "messages by words (any language); read_conversation reads a window of one conversation "
    "(newest first by default; page back with before_seq, read another branch with head_seq); "
    "get_tool_call returns a tool call with its arguments, status and whole output; "
    "list_conversations lists conversations, newest first. Results carry conversation ids, "
    "seqs and message ids: cite them."
)
_READ_ONLY: Final = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

Role = Literal["system", "user", "assistant", "tool"]
ConversationId = Annotated[str, Field(description="A conversation id (from a search or a list).")]
Seq = Annotated[int, Field(ge=1)]


class ConvstoreMCPServer(MCPServer[Any]):
    """An `MCPServer` whose resource list is the store's newest conversations."""

    def __init__(self, store: ConversationStore, *, tenant: str | None) -> None:
        super().__init__(
            name="convstore",
            title="convstore: past conversations",
            instructions=_INSTRUCTIONS,
            version=__version__,
            log_level="WARNING",
        )
        self._store = store
        self._tenant = tenant

    async def list_resources(self) -> list[MCPResource]:
        """The newest conversations, each as its ``convstore://conversations/{id}`` resource."""
        page = await self._store.list_conversations(tenant=self._tenant, limit=RECENT_RESOURCES)
        return [
            MCPResource(
                uri=f"{URI_PREFIX}{summary.id}",
                name=summary.title or summary.id,
                description=f"{summary.message_count} messages, updated "
                f"{summary.updated_at.isoformat()}",
                mime_type="text/markdown",
            )
            for summary in page
        ]


def create_server(store: ConversationStore, tenant: str | None = None) -> MCPServer[Any]:
    """The MCP server over ``store``, confined to ``tenant`` (``None``: every tenant's data).

    The caller keeps ``store`` open while the server runs. Serve it with the SDK
    (``await server.run_stdio_async()``, ``server.streamable_http_app()``) or with
    ``convstore mcp``, whose stdio reader also answers lines it cannot decode.
    """
    server = ConvstoreMCPServer(store, tenant=tenant)
    tools = ConversationTools(store, tenant=tenant)

    @server.tool(annotations=_READ_ONLY)
    async def search_conversations(
        query: Annotated[
            str,
            Field(
                description='Words, "exact phrases" and -excluded words; each is found as a '
                "case-insensitive substring, in any language (also code identifiers)."
            ),
        ],
        conversation_id: Annotated[
            str | None, Field(description="Search only this conversation.")
        ] = None,
        roles: Annotated[
            list[Role] | None, Field(description="Only messages with these roles.")
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=SEARCH_LIMIT_MAX, description="How many hits, best first.")
        ] = 10,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search past conversations for messages (and titles) containing the query.

        Each hit names its conversation, the message's seq and id, its role, a snippet with
        the matches marked ⟦like this⟧, and whether it is on the conversation's active branch.
        A hit with seq null matched the conversation's title.
        """
        return await tools.search(query, conversation_id, list(roles) if roles else None, limit)

    @server.tool(annotations=_READ_ONLY)
    async def list_conversations(
        limit: Annotated[
            int, Field(ge=1, le=LIST_LIMIT_MAX, description="How many conversations.")
        ] = 20,
        cursor: Annotated[
            str | None, Field(description="next_cursor of the previous page.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="Only conversations whose metadata has these keys and values."),
        ] = None,
    ) -> Annotated[CallToolResult, ListResult]:
        """List conversations, newest first, with their ids, titles and times.

        next_cursor is null on the last page; otherwise pass it as cursor for the next one.
        """
        return await tools.listing(limit, cursor, metadata)

    @server.tool(annotations=_READ_ONLY)
    async def read_conversation(
        conversation_id: ConversationId,
        last: Annotated[
            int,
            Field(ge=1, le=READ_LAST_MAX, description="How many of the newest messages."),
        ] = 20,
        before_seq: Annotated[
            Seq | None,
            Field(
                description="Only messages before this seq: pass the first seq of a page to "
                "read the page before it."
            ),
        ] = None,
        head_seq: Annotated[
            Seq | None,
            Field(
                description="Read the branch ending at this message instead of the active "
                "one (search hits off the active path name one)."
            ),
        ] = None,
        include_images: Annotated[
            bool,
            Field(
                description="Also return the window's images (PNG, JPEG, GIF, WebP; "
                "size-capped) as image content."
            ),
        ] = False,
    ) -> Annotated[CallToolResult, ReadResult]:
        """Read messages of one conversation, oldest first: by default its newest 20.

        Each message has its seq, id, role, text, the tool calls it made (with their status
        on this branch), the tool result it holds (text cut at 2,000 characters: get_tool_call
        returns it whole) and its files (name, media type, sha256).
        """
        return await tools.read(conversation_id, last, before_seq, head_seq, include_images)

    @server.tool(annotations=_READ_ONLY)
    async def get_tool_call(
        conversation_id: ConversationId,
        call_id: Annotated[str, Field(description="The tool call's id (from read_conversation).")],
    ) -> Annotated[CallToolResult, ToolCallDetail]:
        """Get one tool call: its name, arguments, lifecycle status and whole output.

        status is pending, complete, error, cancelled or interrupted; result_kind is json,
        content or error (null while pending); output_text is the output as text and files
        the files a content result holds.
        """
        return await tools.tool_call(conversation_id, call_id)

    @server.resource(
        f"{URI_PREFIX}{{id}}",
        name="conversation",
        description="A conversation's active path as Markdown (its newest "
        f"{RESOURCE_LAST} messages).",
        mime_type="text/markdown",
    )
    async def conversation_resource(id: str) -> str:  # the URI template's name
        try:
            conversation = await store.load(id, tenant=tenant, last=RESOURCE_LAST)
        except ConvstoreError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        return markdown(conversation)

    server.middleware.append(ArgumentChecks(server))
    return server
