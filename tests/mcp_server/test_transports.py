"""The SDK's own client against ``convstore mcp``: over stdio (a subprocess, as a desktop client
starts it) and over Streamable HTTP (a running server), in both protocol eras the SDK speaks.
"""

from __future__ import annotations

import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp_server.exercise import exercise
from tests.mcp_server.servers import Database, HttpServer


def stdio_parameters(database: Database, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=database.args(*extra))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_tool_and_resource_over_stdio(database: Database, mode: str) -> None:
    async with Client(stdio_parameters(database), mode=mode, cache=None) as client:  # type: ignore[arg-type]
        assert client.server_info is not None and client.server_info.name == "convstore"
        await exercise(client, database.mine)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_tool_and_resource_over_http(
    database: Database, http_server: HttpServer, mode: str
) -> None:
    async with Client(http_server.url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        await exercise(client, database.mine)
