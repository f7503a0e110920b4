"""Where convstore reaches into the MCP SDK beyond its documented surface (one place).

`MCPServer` runs stdio only through the SDK's own reader, which drops a line it cannot decode
without answering it; ``convstore mcp`` runs the low-level server on streams of its own
(`convstore.mcp._stdio`). tests/mcp_server/test_compat.py checks the attribute on the pinned
SDK.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer

__all__ = ["lowlevel_server"]


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level `Server` an `MCPServer` wraps."""
    inner = server._lowlevel_server  # see the module docstring
    if not isinstance(inner, Server):  # pragma: no cover - an SDK that moved it
        raise TypeError("this mcp SDK keeps no low-level server where convstore expects it")
    return inner
