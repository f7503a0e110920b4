"""uvicorn as the inspector (``convstore serve``) and the MCP server (``convstore mcp``) run it.

Imported only by those two commands' serving modules: both extras install uvicorn.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

__all__ = ["AnnouncingServer"]


class AnnouncingServer(uvicorn.Server):
    """A uvicorn server that says where it listens once it does (the real port for 0)."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str, int], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            self._announce(str(host), int(port))
