"""A pydantic-ai `Agent` with a function model uses ``convstore mcp`` through pydantic-ai's own MCP
client (`MCPToolset`, on FastMCP's client), over stdio and Streamable HTTP, and the tool results
reach the model's next request (issue 34, acceptance 3). Runs in ``.venv-pydantic-ai``
(``make test-pydantic-ai``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.integrations.pydantic_ai_google_adk_support import require
from tests.mcp_server.servers import Database, make_database, start_http, stop

require("pydantic_ai.mcp")

from fastmcp.client import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

TOOLS = {"search_conversations", "list_conversations", "read_conversation", "get_tool_call"}


def _returned(messages: list[ModelMessage], call_id: str) -> str:
    """What the model was sent for ``call_id``, as text."""
    [part] = [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.tool_call_id == call_id
    ]
    content = part.content
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


async def _run_agent(toolset: MCPToolset[Any], database: Database) -> None:
    seen: list[list[ModelMessage]] = []
    offered: list[set[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        offered.append({tool.name for tool in info.function_tools})
        step = len(seen)
        if step == 1:
            return ModelResponse(
                parts=[ToolCallPart("search_conversations", {"query": "東京タワー"}, "c1")]
            )
        if step == 2:
            arguments = {"conversation_id": database.mine.agent, "call_id": "call_mail"}
            return ModelResponse(parts=[ToolCallPart("get_tool_call", arguments, "c2")])
        return ModelResponse(parts=[TextPart("You went to Tokyo Tower.")])

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with agent:
        result = await agent.run("Where did I go in Tokyo, and why did the mail fail?")
    assert result.output == "You went to Tokyo Tower."
    assert len(seen) == 3
    assert offered[0] >= TOOLS
    searched = _returned(seen[1], "c1")
    assert database.mine.corpus["ja"] in searched
    assert "⟦東京タワー⟧" in searched
    assert database.theirs.corpus["ja"] not in searched  # the server's tenant only
    assert "SMTP relay refused the message" in _returned(seen[2], "c2")


async def test_an_agent_uses_the_server_over_stdio(tmp_path: Path) -> None:
    database = await make_database(tmp_path)
    # The server imports the SDK before it answers (about 2 s of CPU; far more on a loaded
    # machine): give the handshake more than FastMCP's default 5 seconds.
    client = Client(StdioTransport(sys.executable, database.args()), init_timeout=120)
    toolset: MCPToolset[Any] = MCPToolset(client)
    await _run_agent(toolset, database)


async def test_an_agent_uses_the_server_over_streamable_http(tmp_path: Path) -> None:
    database = await make_database(tmp_path)
    running = start_http(database)
    try:
        await _run_agent(MCPToolset(running.url), database)
    finally:
        stop(running)
