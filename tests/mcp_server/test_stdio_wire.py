"""``convstore mcp`` over stdio, byte by byte: every line gets an answer (issue 34, acceptance 4).

The SDK's own stdio reader drops a line it cannot decode and leaves the client waiting; here a
lone surrogate, undecodable bytes, a line that is not JSON and JSON that is not JSON-RPC are each
answered, and the server goes on serving. A client that leaves mid-call ends the server cleanly.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from typing import Any

from tests.mcp_server.servers import Database

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-wire-test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Wire:
    """The server's stdin and stdout as lines of bytes."""

    def __init__(self, database: Database) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *database.args()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""

    def send(self, line: bytes | dict[str, Any]) -> None:
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 120) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                assert left > 0 and selector.select(left), "no answer from the server"
                chunk = self.process.stdout.raw.read(65536)  # type: ignore[attr-defined]
                assert chunk, "the server closed stdout"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)  # stdout holds nothing but JSON lines
        return message

    def handshake(self) -> None:
        self.send(INITIALIZE)
        assert self.receive()["result"]["serverInfo"]["name"] == "convstore"
        self.send(INITIALIZED)

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        err = self.process.stderr.read()  # until the server exits
        self.process.stdout.close()
        self.process.stderr.close()
        return self.process.wait(timeout=120), err.decode("utf-8", "replace")


def _call(request_id: int, name: str, arguments: str) -> bytes:
    """A tools/call line with ``arguments`` as raw JSON text (escapes kept as written)."""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
    ).encode()


def test_every_line_gets_an_answer_and_the_server_keeps_serving(database: Database) -> None:
    wire = Wire(database)
    try:
        wire.handshake()
        wire.send(_call(2, "search_conversations", r'{"query":"report \ud800"}'))
        # Latin-1 bytes where UTF-8 belongs: undecodable, kept as lone surrogates, refused.
        wire.send(_call(3, "search_conversations", '{"query":"caf@"}').replace(b"@", b"\xe9"))
        wire.send(b"{not json at all")
        wire.send(b'{"jsonrpc":"2.0","id":4,"hello":"world"}')
        wire.send(
            b'{"jsonrpc":"2.0","id":5,"method":"resources/read",'
            b'"params":{"uri":"convstore://conversations/\\udfff"}}'
        )
        wire.send(_call(6, "search_conversations", '{"query":"report"}'))
        answers: dict[Any, list[dict[str, Any]]] = {}
        for _ in range(6):
            message = wire.receive()
            answers.setdefault(message.get("id"), []).append(message)
    finally:
        status, err = wire.close()
    for request_id in (2, 3):
        [answer] = answers[request_id]
        result = answer["result"]
        assert result["isError"] is True
        [text] = result["content"]
        assert text["text"].startswith('refused: argument "query" is not valid Unicode'), text
    [not_json] = answers[None]
    assert not_json["error"]["code"] == -32700
    [invalid] = answers[4]
    assert invalid["error"]["code"] == -32600
    [resource] = answers[5]
    assert resource["error"]["message"].startswith("refused: ")
    [search] = answers[6]
    hits = search["result"]["structuredContent"]["hits"]
    assert {hit["conversation_id"] for hit in hits} == {database.mine.corpus["en"]}
    assert status == 0, err
    assert "Traceback" not in err


def test_a_client_leaving_mid_call_ends_the_server_cleanly(database: Database) -> None:
    wire = Wire(database)
    wire.handshake()
    arguments = f'{{"conversation_id":"{database.mine.agent}","include_images":true}}'
    wire.send(_call(2, "read_conversation", arguments))
    status, err = wire.close()  # stdin closed before the answer is read
    assert status == 0, err
    assert "Traceback" not in err
