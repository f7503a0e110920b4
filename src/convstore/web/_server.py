"""Serving the inspector on uvicorn, for ``convstore serve``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from convstore._serving import AnnouncingServer

__all__ = ["run"]


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
    await AnnouncingServer(config, announce).serve()
