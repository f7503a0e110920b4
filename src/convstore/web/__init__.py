"""``convstore serve``: a read-only web inspector over a `ConversationStore`.

``create_app(store, tenant=None, token=None)`` returns an ASGI application (Starlette) that an
application may serve on its own or mount inside its Starlette or FastAPI app. It needs the
``web`` extra: ``pip install 'convstore[web]'``.

Routes (all GET; any other method is 405; with a token, a request without it is 401; another
tenant's conversation is 404):

- ``/``: conversations, newest first (``?cursor=``, ``?meta=key=value``); ``?q=`` lists
  `ConversationStore.search` hits instead (matches marked)
- ``/conversations/{id}``: the active path (``?head=SEQ``: another branch, the stored head
  unchanged; ``?before=SEQ``: older messages)
- ``/conversations/{id}/render?target=T&model=M&last=N``: the request and its diagnostics
- ``/conversations/{id}.json``: the ``convstore show --json`` document
- ``/attachments/{sha256}``: the bytes, tenant-checked, with their sniffed media type
- ``/health``: schema revision and counts (``?fsck=1`` checks the blobs)

Invariants: it uses only the public store API (like an integration) and never writes; every
stored string reaches a page escaped; pages run no script.

Modules: ``_app`` assembles routes, templates and the outer wall (``_guard``, one ASGI
middleware); ``_pages`` holds the handlers (``_params`` parses their arguments strictly,
``_views`` computes what templates show, ``_branches`` sibling arrows and tips,
``_checkpoints`` a LangGraph thread's timeline, ``_markdown`` message text as safe HTML,
``_attachments`` bytes a browser can never run); ``_compat`` is the seam to store features;
``_server`` runs it on uvicorn for ``convstore serve``.
"""

from __future__ import annotations

from convstore.errors import MissingDependencyError

try:
    import jinja2  # noqa: F401
    import markdown_it  # noqa: F401
    import pygments  # noqa: F401
    import starlette  # noqa: F401
except ImportError as _missing:
    raise MissingDependencyError(__name__, _missing.name or "starlette", "web") from _missing

from convstore.web._app import create_app

__all__ = ["create_app"]
