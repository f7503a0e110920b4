"""The inspector's outer wall: one ASGI middleware every request passes through.

Invariants:

- With a token, every request carries it (``Authorization: Bearer``, or the cookie set when a
  browser first opens a page with ``?token=``), compared in constant time; otherwise 401,
  before routing, so nothing about the store leaks to a caller without it.
- The ``Host`` header names an allowed host (loopback names by default, `DEFAULT_HOSTS`),
  else 421 before anything else: a page on another site that rebinds its own name to
  127.0.0.1 (DNS rebinding) reaches the inspector with its own name as the host, and is
  refused.
- Read-only: any method but GET (and HEAD, GET without the body) is 405, on every path.
- Every response says ``X-Content-Type-Options: nosniff``, refuses framing and referrers, and
  carries a Content-Security-Policy: pages may load only this app's stylesheet and images and
  run no script at all; a response that sets its own (attachments) keeps it.
"""

from __future__ import annotations

import ipaddress
from http.cookies import SimpleCookie
from typing import Final
from urllib.parse import parse_qsl

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convstore._http_guard import bearer, header, host_name, respond, token_matches

__all__ = ["DEFAULT_HOSTS", "PAGE_CSP", "TOKEN_COOKIE", "Guard", "host_allowed"]

TOKEN_COOKIE: Final = "convstore_token"  # noqa: S105 - a cookie name, not a secret

PAGE_CSP: Final = (
    "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)

DEFAULT_HOSTS: Final = ("localhost", "127.0.0.1", "::1")
"""Host names allowed by default: this machine's (every 127.0.0.0/8 address counts too)."""

_ALWAYS: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


class Guard:
    """Token check, method check and security headers around the inspector's routes."""

    def __init__(
        self, app: ASGIApp, *, token: str | None, allowed_hosts: frozenset[str] | None
    ) -> None:
        self._app = app
        self._token = token.encode("utf-8") if token is not None else None
        self._hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._hosts is not None and not host_allowed(header(scope, b"host"), self._hosts):
            body = b"this host name is not served here (convstore serve --allowed-host NAME)\n"
            await _respond(send, 421, body, [])
            return
        login: list[tuple[bytes, bytes]] = []
        if self._token is not None:
            query_token = _query_token(scope)
            if query_token is not None and self._matches(query_token):
                # A browser opened a link with the token: keep it as a cookie for the links
                # that follow (they do not carry it).
                login = _login_cookie(scope, query_token)
            elif not self._matches(_presented_token(scope)):
                await _respond(
                    send,
                    401,
                    b"a token is required: open the page with ?token=... once, or send "
                    b"Authorization: Bearer ...\n",
                    [(b"www-authenticate", b'Bearer realm="convstore"')],
                )
                return
        if scope["method"] not in ("GET", "HEAD"):
            body = b"the inspector is read-only: GET only\n"
            await _respond(send, 405, body, [(b"allow", b"GET, HEAD")])
            return
        await self._app(scope, receive, _secured(send, login))

    def _matches(self, presented: str | None) -> bool:
        assert self._token is not None
        return token_matches(presented, self._token)


def host_allowed(host: str | None, allowed: frozenset[str]) -> bool:
    """Whether a ``Host`` header (``name[:port]``, ``[v6]:port``) names an allowed host.

    ``allowed`` holds lower-case names; every loopback IP address is allowed with
    ``127.0.0.1``. No header at all (HTTP/1.0), or one with no name (`host_name`), is
    refused: the check cannot be made.
    """
    name = None if host is None else host_name(host)
    if name is None:
        return False
    if name in allowed:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback and "127.0.0.1" in allowed


def _presented_token(scope: Scope) -> str | None:
    authorization = header(scope, b"authorization")
    if authorization is not None:
        return bearer(authorization)
    cookies = header(scope, b"cookie")
    if cookies is not None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(cookies)
        except ValueError:  # a malformed Cookie header: no token
            return None
        morsel = jar.get(TOKEN_COOKIE)
        return morsel.value if morsel is not None else None
    return None


def _query_token(scope: Scope) -> str | None:
    query = scope.get("query_string", b"").decode("latin-1")
    values = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == "token"]
    return values[0] if len(values) == 1 else None


def _login_cookie(scope: Scope, token: str) -> list[tuple[bytes, bytes]]:
    """The token as an HTTP-only, same-site cookie for the app's own path."""
    cookie: SimpleCookie = SimpleCookie()
    cookie[TOKEN_COOKIE] = token
    cookie[TOKEN_COOKIE]["path"] = scope.get("root_path", "") or "/"
    cookie[TOKEN_COOKIE]["httponly"] = True
    cookie[TOKEN_COOKIE]["samesite"] = "Strict"
    return [(b"set-cookie", cookie[TOKEN_COOKIE].OutputString().encode("latin-1"))]


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    csp = (b"content-security-policy", PAGE_CSP.encode())
    await respond(send, status, body, b"text/plain; charset=utf-8", [*_ALWAYS, csp, *headers])


def _secured(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    async def send_secured(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in extra:
                headers.append(name.decode(), value.decode("latin-1"))
            for name, value in _ALWAYS:
                headers[name.decode()] = value.decode()
            if "content-security-policy" not in headers:
                headers["content-security-policy"] = PAGE_CSP
        await send(message)

    return send_secured
