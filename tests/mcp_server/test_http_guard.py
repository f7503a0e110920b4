"""``convstore mcp --transport http``: Host, Origin and token checks (the MCP specification's
security warning for Streamable HTTP), and a client that disconnects mid-call."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest
from mcp import Client
from starlette.types import Message, Receive, Scope, Send

from convstore.mcp._http import HttpGuard
from tests.mcp_server.servers import TOKEN, Database, HttpServer

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "guard-test", "version": "0"},
    },
}


def _post(server: HttpServer, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(
        server.url, json=INITIALIZE, headers={**ACCEPT, **(headers or {})}, timeout=60
    )


def test_a_rebound_host_name_is_refused(http_server: HttpServer) -> None:
    refused = _post(http_server, {"host": f"attacker.example:{http_server.port}"})
    assert refused.status_code == 421
    assert refused.json()["error"]["message"].startswith("refused: ")
    for host in ("127.0.0.1", "localhost", f"localhost:{http_server.port}"):
        assert _post(http_server, {"host": host}).status_code == 200, host


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("https://attacker.example", 403),
        ("http://localhost.attacker.example", 403),
        ("null", 403),
        ("http://localhost:3000", 200),
        ("http://127.0.0.1:6274", 200),
    ],
)
def test_only_loopback_origins_are_let_in(
    http_server: HttpServer, origin: str, status: int
) -> None:
    assert _post(http_server, {"origin": origin}).status_code == status


def test_with_a_token_every_request_carries_it(token_server: HttpServer) -> None:
    assert _post(token_server).status_code == 401
    assert _post(token_server, {"authorization": "Bearer wrong"}).status_code == 401
    assert _post(token_server, {"authorization": f"Basic {TOKEN}"}).status_code == 401
    missing = _post(token_server)
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert _post(token_server, {"authorization": f"Bearer {TOKEN}"}).status_code == 200


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"through"})


async def _status(guard: HttpGuard, headers: dict[str, str], scheme: str = "https") -> int:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: dict[str, Any] = {
        "type": "http",
        "scheme": scheme,
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    await guard(scope, receive, send)
    return int(sent[0]["status"])


async def test_beyond_loopback_an_origin_must_be_the_servers_own() -> None:
    guard = HttpGuard(_app, loopback=False, token=TOKEN)
    auth = {"authorization": f"Bearer {TOKEN}", "host": "mcp.example.org"}
    assert await _status(guard, auth) == 200
    assert await _status(guard, {**auth, "origin": "https://mcp.example.org"}) == 200
    assert await _status(guard, {**auth, "origin": "https://other.example.org"}) == 403
    assert await _status(guard, {**auth, "origin": "http://mcp.example.org"}) == 403
    assert await _status(guard, {"host": "mcp.example.org"}) == 401
    assert await _status(guard, {**auth, "host": "bad host:x"}) == 400


async def test_a_client_disconnecting_mid_call_leaves_the_server_serving(
    database: Database, http_server: HttpServer
) -> None:
    with httpx.Client(timeout=60) as http:
        opened = http.post(http_server.url, json=INITIALIZE, headers=ACCEPT)
        session = opened.headers["mcp-session-id"]
        headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(http_server.url, json=initialized, headers=headers).status_code == 202
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "read_conversation",
            "arguments": {"conversation_id": database.mine.agent, "include_images": True},
        },
    }
    body = json.dumps(call).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{http_server.port}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body
    for _ in range(3):  # the request sent whole, the connection closed before any answer
        with socket.create_connection(("127.0.0.1", http_server.port), timeout=60) as raw:
            raw.sendall(request)
            raw.shutdown(socket.SHUT_RDWR)
    async with Client(http_server.url, cache=None) as client:
        result = await client.call_tool(
            "read_conversation", {"conversation_id": database.mine.long}
        )
        assert not result.is_error
    assert http_server.process.poll() is None
