"""The request checks the inspector (``web/_guard``) and the MCP server (``mcp/_http``) share.

Each server decides what it requires (the inspector: a named host, a token, GET only; the MCP
server: a loopback or token-guarded host and an allowed ``Origin``); how a request is read is
written once, here.

Invariants:

- A header counts only when it is sent once: a repeated ``Host`` or ``Authorization`` is as
  good as none (`header`), so two proxies cannot disagree about which one was checked.
- A ``Host`` value is read one way (`host_name`): lower-case, without its port, brackets or
  a trailing dot; a malformed one (a port that is not a number, user info, no name, an IPv6
  address without brackets) has no name and is refused by both servers.
- Loopback means ``localhost`` or an address in 127.0.0.0/8 or ``::1`` (`is_loopback`).
- A bearer token is compared in constant time (`token_matches`).
- Standard library only at run time: the command line asks `is_loopback` before the web or
  MCP extra is known to be installed.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Sequence

    from starlette.types import Scope, Send

__all__ = ["bearer", "header", "host_name", "is_loopback", "respond", "token_matches"]


def header(scope: Scope, name: bytes) -> str | None:
    """The request's ``name`` header (lower-case bytes), when it is sent exactly once."""
    values = [value for key, value in scope["headers"] if key == name]
    return str(values[0].decode("latin-1")) if len(values) == 1 else None


def host_name(authority: str) -> str | None:
    """The host a ``Host`` header value names (``name``, ``name:port``, ``[v6]:port``), if valid."""
    authority = authority.strip()
    try:
        parsed = urlsplit(f"//{authority}")
        _ = parsed.port  # a malformed port raises here
    except ValueError:
        return None
    if "@" in authority or not parsed.hostname:
        return None
    return parsed.hostname.rstrip(".") or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, IPv6 bracketed or not) is this machine only."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer(authorization: str) -> str | None:
    """The credentials of an ``Authorization: Bearer ...`` value (None for another scheme)."""
    scheme, _, credentials = authorization.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def token_matches(presented: str | None, token: bytes) -> bool:
    """Whether a presented token is ``token`` (UTF-8), compared in constant time."""
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), token)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes,
    headers: Sequence[tuple[bytes, bytes]],
) -> None:
    """A whole response at once (a refusal): its type and length, then ``headers``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
