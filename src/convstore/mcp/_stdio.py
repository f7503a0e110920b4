r"""The stdio transport of ``convstore mcp``: every line read gets an answer.

The SDK's own stdio reader drops a line it cannot decode (a lone surrogate such as ``\ud800``
in a JSON string, which strict JSON decoders refuse), so the client waits for an answer that
never comes. This reader decodes each line in three steps:

1. the SDK's strict decoder (the common case);
2. Python's `json` decoder, which keeps a lone surrogate as one (undecodable UTF-8 bytes become
   lone surrogates too): a well-formed request goes on to the server, whose `ArgumentChecks`
   refuse it with a message naming the argument, under the request's own id;
3. otherwise a JSON-RPC error: -32700 (parse error, id null) for a line that is not JSON,
   -32600 (invalid request, with the line's id when it has a usable one) for JSON that is not a
   JSON-RPC message. A line longer than `MAX_LINE_BYTES` is refused whole.

While it serves, file descriptor 1 points at stderr, so a stray ``print`` in any library cannot
corrupt the protocol stream; the wire is a duplicate of the original stdout, restored on exit.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from convstore.mcp._checks import surrogate_path
from convstore.mcp._compat import lowlevel_server

__all__ = ["MAX_LINE_BYTES", "Answer", "decode_line", "run_stdio", "stdio_streams"]

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
_CHUNK: Final = 1024 * 1024


@dataclass(frozen=True)
class Answer:
    """The transport's own answer to a line the server cannot be given."""

    message: SessionMessage


_Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def _error(request_id: str | int | None, code: int, message: str) -> Answer:
    error = ErrorData(code=code, message=message)
    return Answer(SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))


def _usable_id(raw: Any) -> str | int | None:
    ident = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    if isinstance(ident, str) and surrogate_path(ident) is not None:
        return None  # an id that cannot be written back as JSON text
    return ident


def decode_line(line: bytes) -> SessionMessage | Answer | None:
    """The message on one line, or the answer to it; ``None`` for a blank line."""
    line = line.strip()
    if not line:
        return None
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValidationError:
        pass
    try:
        raw = json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return _error(None, PARSE_ERROR, "Parse error: the line is not a JSON value")
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_python(raw, by_name=False))
    except (ValidationError, RecursionError):
        return _error(
            _usable_id(raw),
            INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
        )


def _read_line(stream: BinaryIO) -> bytes | None:
    """One line (``b""`` at the end of input), or ``None`` for a line over the limit."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line
    while True:  # skip the rest of the oversized line
        rest = stream.readline(_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return None


async def _read(
    stdin: BinaryIO,
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    answers: MemoryObjectSendStream[SessionMessage],
) -> None:
    async with to_server, answers:
        while True:
            line = await anyio.to_thread.run_sync(_read_line, stdin, abandon_on_cancel=True)
            if line is None:
                too_long = f"Parse error: a line longer than {MAX_LINE_BYTES} bytes"
                await answers.send(_error(None, PARSE_ERROR, too_long).message)
                continue
            if not line:
                return
            decoded = decode_line(line)
            if isinstance(decoded, Answer):
                await answers.send(decoded.message)
            elif decoded is not None:
                await to_server.send(decoded)


def _encode(message: SessionMessage) -> bytes:
    try:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
    except (ValueError, UnicodeError):
        # Nothing the server sends should fail to encode; if it does, the client still gets an
        # answer for the request rather than a dead line.
        ident = getattr(message.message, "id", None)
        fallback = _error(
            ident if isinstance(ident, str | int) else None,
            INTERNAL_ERROR,
            "Internal error: the answer could not be encoded as JSON",
        )
        text = fallback.message.message.model_dump_json(by_alias=True, exclude_unset=True)
    return text.encode("utf-8") + b"\n"


async def _write(stdout: BinaryIO, outgoing: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with outgoing:
        async for message in outgoing:
            data = _encode(message)
            await anyio.to_thread.run_sync(_write_all, stdout, data)


def _write_all(stdout: BinaryIO, data: bytes) -> None:
    stdout.write(data)
    stdout.flush()


@asynccontextmanager
async def stdio_streams(
    stdin: BinaryIO, stdout: BinaryIO
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """The server's read and write streams over ``stdin`` and ``stdout`` (binary, line-framed)."""
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, stdin, to_server, to_client.clone())
        tasks.start_soon(_write, stdout, outgoing)
        try:
            yield from_client, to_client
        finally:
            tasks.cancel_scope.cancel()


@contextmanager
def _wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The process's stdin and stdout as binary streams, with fd 1 pointed at stderr."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        # Buffered: its write() hands over every byte (a raw one may be partial); flushed per line.
        with os.fdopen(wire_fd, "wb", closefd=False) as stdout:
            yield sys.stdin.buffer, stdout
    finally:
        os.dup2(wire_fd, 1)
        os.close(wire_fd)


async def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client closes stdin."""
    inner = lowlevel_server(server)
    with _wire() as (stdin, stdout):
        async with stdio_streams(stdin, stdout) as (read_stream, write_stream):
            await inner.run(read_stream, write_stream, inner.create_initialization_options())
