"""`create_app`: the inspector's routes, templates and outer wall, assembled."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from convstore.store import ConversationStore
from convstore.web._attachments import Attachments
from convstore.web._guard import DEFAULT_HOSTS, Guard
from convstore.web._pages import Pages

__all__ = ["create_app"]

_HERE = Path(__file__).parent


async def _favicon(_request: Request) -> Response:
    return FileResponse(_HERE / "static" / "favicon.svg", media_type="image/svg+xml")


def create_app(
    store: ConversationStore,
    tenant: str | None = None,
    token: str | None = None,
    *,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The read-only inspector over an open ``store``, as an ASGI application.

    Args:
        store: an open store; the caller keeps it open while the app serves and closes it.
        tenant: confine every page, search and attachment to this tenant; another tenant's
            conversation is a 404, exactly like a missing one.
        token: require this token on every request (``Authorization: Bearer``, or
            ``?token=`` once in a browser, which keeps it as a cookie). Give one whenever
            the app is reachable from anywhere but this machine.
        allowed_hosts: the host names a request's ``Host`` header may name (default: this
            machine's loopback names, `DEFAULT_HOSTS`); any other is refused with 421, so a
            web page that rebinds its own name to this machine reads nothing. ``["*"]``
            turns the check off (for an app mounted behind a server that checks hosts itself).
    """
    if token is not None and not token:
        raise ValueError("token must not be empty (None: no token)")
    hosts = frozenset(
        h.lower() for h in (DEFAULT_HOSTS if allowed_hosts is None else allowed_hosts)
    )
    if not hosts:
        raise ValueError("allowed_hosts must name at least one host (or be None: loopback)")
    environment = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates = Jinja2Templates(env=environment)
    pages = Pages(store, tenant=tenant, templates=templates)
    attachments = Attachments(store, tenant=tenant)
    routes = [
        Route("/", pages.conversations, methods=["GET"], name="conversations"),
        Route("/health", pages.health, methods=["GET"], name="health"),
        # One route for the page, its render preview and its document: which one is decided
        # on the raw path (`_params.conversation_path`), where an id is one encoded segment.
        Route("/conversations/{rest:path}", pages.conversation_routes, methods=["GET"]),
        Route("/attachments/{sha256}", attachments.get, methods=["GET"], name="attachment"),
        # Browsers ask for /favicon.ico whatever the page links: the same icon.
        Route("/favicon.ico", _favicon, methods=["GET"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, allowed_hosts=None if "*" in hosts else hosts)],
        exception_handlers=pages.exception_handlers(),
    )
