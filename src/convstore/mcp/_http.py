"""Streamable HTTP for ``convstore mcp --transport http``: the SDK's app behind a guard.

The MCP specification's security warning for Streamable HTTP (transports, 2025-11-25):
servers MUST validate the ``Origin`` header of every connection (403 when present and
invalid), SHOULD bind only to localhost when run locally, and SHOULD authenticate every
connection; without this, a web page can reach a local server by DNS rebinding. So:

- On a loopback address (the default), the ``Host`` header must name a loopback host
  (``127.0.0.1``, ``localhost``, ``[::1]``; any port), else 421 — a rebound name such as
  ``attacker.example`` is refused — and an ``Origin``, when sent, must be a loopback origin,
  else 403.
- Any other address needs a token (``convstore mcp`` refuses to start without one); an
  ``Origin``, when sent, must then be the server's own (the scheme and ``Host`` of the request).
- With a token, every request carries ``Authorization: Bearer TOKEN`` (compared in constant
  time), else 401, before the SDK sees the request.

The SDK's own Host/Origin check is replaced by this one (one rule set, stated here), and the
MCP endpoint answers JSON rather than an SSE stream: the server sends nothing unprompted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import urlsplit

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from convstore._http_guard import bearer, header, host_name, is_loopback, respond, token_matches
from convstore._serving import AnnouncingServer

__all__ = ["MCP_PATH", "HttpGuard", "http_app", "serve_http"]

MCP_PATH: Final = "/mcp"
SHUTDOWN_GRACE: Final = 5


class HttpGuard:
    """Host, Origin and token checks in front of the MCP app."""

    def __init__(self, app: ASGIApp, *, loopback: bool, token: str | None) -> None:
        self._app = app
        self._loopback = loopback
        self._token = None if token is None else token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request; refuse it or pass it on."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _respond(send, *refusal)
            return
        await self._app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        host = header(scope, b"host")
        hostname = None if host is None else host_name(host)
        if hostname is None:
            return 400, "a single, well-formed Host header is required", []
        if self._loopback and not is_loopback(hostname):
            return 421, f"this server answers only for loopback hosts, not {hostname!r}", []
        origin = header(scope, b"origin")
        if origin is not None and not self._origin_allowed(origin, scope, host or ""):
            return 403, "cross-origin requests are refused (the Origin is not allowed)", []
        if self._token is not None and not self._authorized(scope):
            challenge = [(b"www-authenticate", b'Bearer realm="convstore-mcp"')]
            return 401, "a token is required: send Authorization: Bearer TOKEN", challenge
        return None

    def _origin_allowed(self, origin: str, scope: Scope, host: str) -> bool:
        try:
            parsed = urlsplit(origin)
        except ValueError:
            return False
        if parsed.scheme not in ("http", "https") or parsed.hostname is None:
            return False
        if self._loopback:
            return is_loopback(parsed.hostname)
        return parsed.netloc.lower() == host.lower() and parsed.scheme == scope.get("scheme")

    def _authorized(self, scope: Scope) -> bool:
        assert self._token is not None
        return token_matches(bearer(header(scope, b"authorization") or ""), self._token)


async def _respond(
    send: Send, status: int, reason: str, headers: list[tuple[bytes, bytes]]
) -> None:
    # A JSON-RPC error without an id, as the specification allows for refused connections.
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": f"refused: {reason}"}}
    ).encode()
    await respond(send, status, body, b"application/json", headers)


def http_app(server: MCPServer[Any], *, host: str, token: str | None) -> ASGIApp:
    """The server's Streamable HTTP app at `MCP_PATH`, guarded for a server bound to ``host``."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=host,
    )
    return HttpGuard(app, loopback=is_loopback(host), token=token)


async def serve_http(
    server: MCPServer[Any],
    *,
    host: str,
    port: int,
    token: str | None,
    announce: Callable[[str, int], None],
) -> None:
    """Serve ``server`` over Streamable HTTP until interrupted (Ctrl-C or SIGTERM)."""
    app = http_app(server, host=host, token=token)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        server_header=False,
        # Open MCP sessions would otherwise hold a stop (SIGTERM, Ctrl-C) until clients leave.
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
    await AnnouncingServer(config, announce).serve()
