"""Query parameters and path ids, parsed strictly: anything malformed is a 400, never a guess.

Invariants:

- A number is ASCII digits only (``"²"`` and Arabic-Indic digits pass `str.isdigit` and no
  database takes them) and at most `MAX_SEQ`; it is checked by length before it is
  converted, so a 5,000-digit value costs nothing.
- Metadata filters are bounded in number and size before the store sees them.
- A conversation id in a path is one percent-encoded segment of the *raw* path (``/`` in an id
  arrives as ``%2F``), so every id is reachable and no suffix of one is mistaken for a route.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final
from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.types import Scope

from convstore.errors import InvalidInputError
from convstore.limits import MAX_SEQ

__all__ = [
    "MAX_META_FILTERS",
    "MAX_PARAM_CHARS",
    "conversation_path",
    "int_param",
    "metadata_filter",
    "quote_id",
    "raw_route_path",
    "text_param",
]

_DIGITS: Final = re.compile(r"[0-9]{1,19}")
MAX_META_FILTERS: Final = 16
"""More ``meta=`` filters than this in one request is a 400 (a listing filters in Python)."""
MAX_PARAM_CHARS: Final = 1_000
"""The longest query value a page reads (a search, a filter, a model name, a cursor)."""


def int_param(request: Request, name: str, *, minimum: int = 0) -> int | None:
    """``?name=N`` as an int in ``minimum..MAX_SEQ``; absent or empty: ``None``; else a 400."""
    values = request.query_params.getlist(name)
    if not values or values == [""]:
        return None
    raw = values[0]
    if len(values) > 1 or not _DIGITS.fullmatch(raw) or not minimum <= int(raw) <= MAX_SEQ:
        raise InvalidInputError(
            f"{name} must be one whole number from {minimum} to {MAX_SEQ}, in ASCII digits"
        )
    return int(raw)


def text_param(request: Request, name: str) -> str | None:
    """``?name=`` as text (empty: ``None``), at most `MAX_PARAM_CHARS` characters."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if len(raw) > MAX_PARAM_CHARS:
        raise InvalidInputError(f"{name} is at most {MAX_PARAM_CHARS:,} characters")
    return raw


def metadata_filter(request: Request) -> dict[str, Any] | None:
    """``?meta=key=value`` (repeatable): equality on metadata; the value is JSON if it parses."""
    # The listing's form sends an empty ``meta=`` when its box is left empty.
    items = [item for item in request.query_params.getlist("meta") if item]
    if len(items) > MAX_META_FILTERS:
        raise InvalidInputError(f"at most {MAX_META_FILTERS} meta filters, got {len(items)}")
    wanted: dict[str, Any] = {}
    for item in items:
        if len(item) > MAX_PARAM_CHARS:
            raise InvalidInputError(f"a meta filter is at most {MAX_PARAM_CHARS:,} characters")
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise InvalidInputError("meta filters are written key=value")
        try:
            wanted[key] = json.loads(raw)
        except ValueError:
            wanted[key] = raw
    return wanted or None


def quote_id(conversation_id: str) -> str:
    """A conversation id as one path segment: everything but letters, digits, ``-_~`` encoded.

    ``.`` is encoded too, so a link never ends in a literal ``.json`` that is part of the id.
    """
    return quote(conversation_id, safe="").replace(".", "%2E")


def raw_route_path(scope: Scope) -> str:
    """The request's path as sent (still percent-encoded), below the app's root path."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"])
    root = scope.get("root_path", "") or ""
    for prefix in (root, quote(root)):
        if prefix and path.startswith(prefix):
            return path[len(prefix) :]
    return path


def conversation_path(scope: Scope) -> tuple[str, str] | None:
    """``(id, view)`` for ``/conversations/<id>[/render | .json]``; ``None``: no such route.

    ``view`` is ``"page"``, ``"render"`` or ``"json"``. The id is the raw path's one segment
    after ``/conversations/``, decoded; ``.json`` counts only when not encoded (our links encode
    every ``.`` of an id), so an id ending in ``.json`` is never another's document.
    """
    path = raw_route_path(scope)
    prefix = "/conversations/"
    if not path.startswith(prefix):
        return None
    segment, slash, rest = path[len(prefix) :].partition("/")
    view = "page"
    if slash:
        if rest != "render":
            return None
        view = "render"
    elif segment.endswith(".json"):
        segment, view = segment[: -len(".json")], "json"
    if not segment:
        return None
    try:
        decoded = unquote(segment, errors="strict")
    except UnicodeDecodeError:
        return None
    return decoded, view
