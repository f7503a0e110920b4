"""The one SDK internal convstore.mcp uses (`convstore.mcp._compat`) is where it expects."""

from __future__ import annotations

from mcp.server.lowlevel.server import Server

from convstore import ConversationStore
from convstore.mcp import create_server
from convstore.mcp._compat import lowlevel_server


async def test_the_low_level_server_is_reachable(store: ConversationStore) -> None:
    server = create_server(store)
    inner = lowlevel_server(server)
    assert isinstance(inner, Server)
    assert inner.name == "convstore"
    # The stdio reader runs it with these options; the handshake advertises tools and resources.
    options = inner.create_initialization_options()
    assert options.capabilities.tools is not None
    assert options.capabilities.resources is not None
