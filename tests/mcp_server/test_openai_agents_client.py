"""An openai-agents `Agent` with a scripted model uses ``convstore mcp`` through the SDK's own MCP
clients, over stdio and Streamable HTTP, and the tool results reach the model's next request
(issue 34, acceptance 3). Runs in ``.venv-agents`` (``make pytest-agents``, no suite conftest).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="openai-agents runs in .venv-agents (make test)")

from agents import Agent, Runner  # noqa: E402
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from tests.mcp_server.servers import Database, make_database, start_http, stop  # noqa: E402

TOOLS = {"search_conversations", "list_conversations", "read_conversation", "get_tool_call"}


def _output(call_input: Any, call_id: str) -> str:
    """The tool output the model was sent for ``call_id``."""
    [item] = [
        i
        for i in call_input
        if isinstance(i, dict)
        and i.get("type") == "function_call_output"
        and i.get("call_id") == call_id
    ]
    output = item["output"]
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


async def _run_agent(server: MCPServer, database: Database) -> None:
    agent_id = database.mine.agent
    model = ScriptedModel(
        [
            ModelStep.respond(
                lambda call: [
                    function_call("search_conversations", {"query": "東京タワー"}, call_id="c1")
                ]
            ),
            ModelStep.respond(
                lambda call: [
                    function_call(
                        "get_tool_call",
                        {"conversation_id": agent_id, "call_id": "call_mail"},
                        call_id="c2",
                    )
                ]
            ),
            ModelStep.respond(lambda call: [assistant_message("You went to Tokyo Tower.")]),
        ]
    )
    agent = Agent(name="historian", model=model, mcp_servers=[server])
    result = await Runner.run(agent, "Where did I go in Tokyo, and why did the mail fail?")
    assert result.final_output == "You went to Tokyo Tower."
    first, second, third = model.calls
    assert {tool.name for tool in first.tools} >= TOOLS
    searched = _output(second.input, "c1")
    assert database.mine.corpus["ja"] in searched
    assert "⟦東京タワー⟧" in searched
    assert database.theirs.corpus["ja"] not in searched  # the server's tenant only
    assert "SMTP relay refused the message" in _output(third.input, "c2")
    model.assert_complete()


async def test_an_agent_uses_the_server_over_stdio(tmp_path: Path) -> None:
    database = await make_database(tmp_path)
    params = {"command": sys.executable, "args": database.args()}
    async with MCPServerStdio(params, client_session_timeout_seconds=120) as server:  # type: ignore[arg-type]
        await _run_agent(server, database)


async def test_an_agent_uses_the_server_over_streamable_http(tmp_path: Path) -> None:
    database = await make_database(tmp_path)
    running = start_http(database)
    try:
        params = {"url": running.url, "timeout": 120}
        async with MCPServerStreamableHttp(params, client_session_timeout_seconds=120) as server:  # type: ignore[arg-type]
            await _run_agent(server, database)
    finally:
        stop(running)
