"""Serving the inspector on uvicorn, for ``convstore serve``."""

from __future__ import annotations

import copy
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp

__all__ = ["run"]


class _AnnouncingServer(uvicorn.Server):
    """A uvicorn server that says where it listens once it does (the real port for 0)."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str, int], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            self._announce(str(host), int(port))


async def run(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    announce: Callable[[str, int], None],
    access_log: bool = True,
) -> None:
    """Serve ``app`` until interrupted (Ctrl-C or SIGTERM end it cleanly).

    ``access_log``: one line per request on stderr (uvicorn's access log).
    """
    # uvicorn writes its access log to stdout; stdout is where `convstore serve` says where it
    # listens (scripts read it), so the log goes to stderr with uvicorn's other lines.
    log_config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        log_config=log_config,
        server_header=False,
    )
    await _AnnouncingServer(config, announce).serve()
