"""`create_app`: the inspector's routes, templates and outer wall, assembled."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from convstore.store import ConversationStore
from convstore.web._attachments import Attachments
from convstore.web._guard import Guard
from convstore.web._pages import Pages

__all__ = ["create_app"]

_HERE = Path(__file__).parent


def create_app(
    store: ConversationStore, tenant: str | None = None, token: str | None = None
) -> Starlette:
    """The read-only inspector over an open ``store``, as an ASGI application.

    Args:
        store: an open store; the caller keeps it open while the app serves and closes it.
        tenant: confine every page, search and attachment to this tenant; another tenant's
            conversation is a 404, exactly like a missing one.
        token: require this token on every request (``Authorization: Bearer``, or
            ``?token=`` once in a browser, which keeps it as a cookie). Give one whenever
            the app is reachable from anywhere but this machine.
    """
    if token is not None and not token:
        raise ValueError("token must not be empty (None: no token)")
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
        # Before the page route: its ``{cid}`` would otherwise take "x.json" as an id.
        Route("/conversations/{cid}.json", pages.document, methods=["GET"], name="document"),
        Route("/conversations/{cid}/render", pages.render, methods=["GET"], name="render"),
        Route("/conversations/{cid}", pages.conversation, methods=["GET"], name="conversation"),
        Route("/attachments/{sha256}", attachments.get, methods=["GET"], name="attachment"),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token)],
        exception_handlers=pages.exception_handlers(),
    )
