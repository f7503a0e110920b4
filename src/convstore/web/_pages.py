"""The inspector's HTML pages: each handler reads through the public store API and renders.

Invariants:

- Read-only: no handler calls a store method that writes.
- Every store call passes the app's tenant, so a confined app sees nothing of another tenant's:
  their conversations are 404 exactly like missing ones.
- Handlers parse query parameters strictly (`convstore.web._params`): a malformed number is a
  400, never a guess.
- Sizes are bounded: a page shows `MESSAGES_PER_PAGE` messages, a title at most `TITLE_CHARS`
  characters, and the render preview a window of the newest `PREVIEW_LAST` messages unless
  the whole is asked for (``last=all``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.templating import Jinja2Templates

from convstore.capabilities import TARGETS
from convstore.db.migrations import head_revision
from convstore.errors import ConvstoreError, InvalidInputError, NotFoundError
from convstore.model import Message, ToolCallStatus
from convstore.store import ConversationStore, ConversationSummary, fsck
from convstore.store.search import SearchHit, snippet_segments
from convstore.store.transfer.documents import conversation_document
from convstore.web import _compat
from convstore.web._branches import (
    HitGroup,
    ListRow,
    hit_link,
    sibling_navs,
    split_points,
    tip_views,
)
from convstore.web._checkpoints import TIMELINE_LIMIT, timeline
from convstore.web._markdown import render_markdown
from convstore.web._params import (
    conversation_path,
    int_param,
    metadata_filter,
    quote_id,
    text_param,
)
from convstore.web._views import (
    author,
    calls_by_id,
    compaction_marks,
    duration,
    file_view,
    first_words,
    is_blank,
    json_string,
    output_json,
    pretty_json,
    preview_text,
    relative_time,
    shorten_media,
    usage_json,
    usage_totals,
)

__all__ = ["Pages"]

CONVERSATIONS_PER_PAGE: Final = 50
MESSAGES_PER_PAGE: Final = 100
"""A long conversation opens with its newest messages; older ones come a page at a time."""
FOLLOW_SECONDS: Final = 3
"""How often a followed conversation page reloads itself (``?follow=1``)."""
_TIP_PREVIEWS: Final = 50
_LIST_WINDOW: Final = 8
"""Newest messages read per listed conversation (the preview, and calls left waiting)."""
_TITLE_FROM: Final = 6
"""An untitled conversation is named by the first user words among its first messages."""
PREVIEW_LAST: Final = 50
"""The render preview's default window; ``?last=all`` renders the whole path."""
TITLE_CHARS: Final = 200
"""A title longer than this is shown cut (with its length), in lists and headings."""
_COUNT_PAGE: Final = 1_000
_COUNT_LIMIT: Final = 100_000
"""Health counts conversations up to this many, then says "at least"."""

Handler = Callable[[Request, Exception], Awaitable[Response]]


def _query(**params: Any) -> str:
    """A query string of the parameters that are set (``?a=1&b=x``, or ``""``)."""
    kept = [
        (k, str(item))
        for k, v in params.items()
        for item in (v if isinstance(v, list) else [v])
        if item is not None and item != ""
    ]
    return "?" + urlencode(kept) if kept else ""


def _short(text: str | None, limit: int = TITLE_CHARS) -> str | None:
    """``text`` cut to ``limit`` characters, saying how long it was (``None`` stays)."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _clip(text: str | None, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis (no length note: a label)."""
    if not text:
        return ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Pages:
    """The page handlers, bound to one store and tenant."""

    def __init__(
        self, store: ConversationStore, *, tenant: str | None, templates: Jinja2Templates
    ) -> None:
        self._store = store
        self._tenant = tenant
        self._templates = templates

    def _page(
        self,
        request: Request,
        name: str,
        context: Mapping[str, Any],
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        root = request.scope.get("root_path", "") or ""
        shared = {
            "root": root,
            "tenant": self._tenant,
            "quote": quote_id,
            "short": _short,
            "clip": _clip,
            "preview_text": preview_text,
            "query": _query,
        }
        return self._templates.TemplateResponse(
            request,
            name,
            {**shared, **context},
            status_code=status,
            headers={"cache-control": "no-store", **(headers or {})},
        )

    # -- conversations ---------------------------------------------------------------------------

    async def conversations(self, request: Request) -> Response:
        """Conversations newest first, a page at a time; ``?q=`` searches.

        Each row: the title (or the first user words), the last message of the active path,
        a marker when it ends waiting on tool calls, and relative times. Search hits come
        grouped by conversation, newest activity first, each linked to its branch.
        """
        params = request.query_params
        cursor = text_param(request, "cursor")
        q = (text_param(request, "q") or "").strip()
        tenant = self._tenant if self._tenant is not None else text_param(request, "tenant")
        metadata = metadata_filter(request)
        context: dict[str, Any] = {
            "q": q,
            "filter_tenant": tenant,
            "meta": params.getlist("meta"),
            "rows": [],
            "groups": None,
            "next_cursor": None,
            "now": datetime.now(UTC),
            "relative_time": relative_time,
            "snippet": snippet_segments,
        }
        if q:
            hits = await self._store.search(
                q, tenant=tenant, limit=CONVERSATIONS_PER_PAGE, cursor=cursor
            )
            context["groups"] = await self._hit_groups(list(hits), tenant)
            context["next_cursor"] = hits.next_cursor
        else:
            page = await self._store.list_conversations(
                tenant=tenant, limit=CONVERSATIONS_PER_PAGE, cursor=cursor, metadata=metadata
            )
            rows = list(page)
            context["rows"] = await asyncio.gather(*(self._row(row, tenant) for row in rows))
            context["next_cursor"] = page.next_cursor
        return self._page(request, "conversations.html", context)

    async def _row(self, summary: ConversationSummary, tenant: str | None) -> ListRow:
        """A listing row: the newest message of the active path, and a name when untitled."""
        try:
            # A few messages: the calls of the last turn's assistant message come with them.
            newest = await self._store.load(summary.id, tenant=tenant, last=_LIST_WINDOW)
            first: list[Message] = []
            if summary.title is None and newest.messages:
                # The active path's first messages (seqs count from 1 along it).
                opening = await self._store.load(
                    summary.id, tenant=tenant, last=_TITLE_FROM, before_seq=_TITLE_FROM + 1
                )
                first = opening.messages
        except NotFoundError:  # deleted between the listing and this read
            return ListRow(summary, None, None, 0)
        waiting = sum(
            1
            for call in newest.tool_calls
            if call.status in (ToolCallStatus.PENDING, ToolCallStatus.INTERRUPTED)
        )
        last = newest.messages[-1] if newest.messages else None
        return ListRow(summary, first_words(first), last, waiting)

    async def _hit_groups(self, hits: list[SearchHit], tenant: str | None) -> list[HitGroup]:
        """Hits by conversation, newest activity first; each message hit linked to its branch."""
        order: dict[str, list[SearchHit]] = {}
        for hit in hits:
            order.setdefault(hit.conversation_id, []).append(hit)
        trees = await asyncio.gather(
            *(self._store.tree(cid, tenant=tenant) for cid in order), return_exceptions=True
        )
        groups = []
        for (cid, group), tree in zip(order.items(), trees, strict=True):
            if isinstance(tree, BaseException):
                if isinstance(tree, NotFoundError):
                    continue
                raise tree
            newest = max((n.created_at for n in tree.nodes), default=None)
            links = [hit_link(tree, hit, MESSAGES_PER_PAGE) for hit in group]
            groups.append(
                HitGroup(
                    cid, group[0].conversation_title, newest, list(zip(group, links, strict=True))
                )
            )
        groups.sort(key=lambda g: g.newest.timestamp() if g.newest else 0.0, reverse=True)
        return groups

    # -- one conversation -----------------------------------------------------------------------

    async def conversation_routes(self, request: Request) -> Response:
        """``/conversations/<id>``, ``/render`` and ``.json``, told apart on the raw path."""
        found = conversation_path(request.scope)
        if found is None:
            raise HTTPException(404)
        cid, view = found
        if view == "render":
            return await self.render(request, cid)
        if view == "json":
            return await self.document(request, cid)
        return await self.conversation(request, cid)

    async def conversation(self, request: Request, cid: str) -> Response:
        """The active path (or ``?head=SEQ``'s), newest `MESSAGES_PER_PAGE` first.

        Beside it: the branch tips (each with the first message where it leaves the shown
        path), sibling arrows at every message that has siblings, the run (provider, model,
        usage, time since the previous message) and a LangGraph thread's checkpoints.
        ``?follow=1`` reloads the page every few seconds (no script: a refresh header).
        """
        head = int_param(request, "head", minimum=1)
        before = int_param(request, "before", minimum=1)
        follow = request.query_params.get("follow") == "1"
        # Independent reads: side by side (the database serves several readers at once).
        tree, loaded, checkpoints = await asyncio.gather(
            self._store.tree(cid, tenant=self._tenant),
            _compat.load_path(
                self._store,
                cid,
                tenant=self._tenant,
                head_seq=head,
                last=MESSAGES_PER_PAGE,
                before_seq=before,
            ),
            self._store.checkpoints.list(cid, tenant=self._tenant, limit=TIMELINE_LIMIT),
        )
        stored_head = tree.head_seq
        shown_head = head if head is not None else stored_head
        path = tree.path(shown_head) if shown_head is not None else []
        tips = tip_views(tree, shown_head)
        wanted = [t.diverges_at for t in tips if t.diverges_at is not None][:_TIP_PREVIEWS]
        untitled = loaded.title is None and bool(path)
        if untitled:
            wanted.extend(path[:_TITLE_FROM])
        found = await self._store.get_messages(cid, wanted, tenant=self._tenant) if wanted else []
        by_seq = {m.seq: m for m in found}
        previews = {
            t.diverges_at: by_seq[t.diverges_at]
            for t in tips
            if t.diverges_at is not None and t.diverges_at in by_seq
        }
        title = loaded.title
        if untitled:
            title = first_words([by_seq[s] for s in path[:_TITLE_FROM] if s in by_seq])
        messages = loaded.messages
        shown = [m.seq for m in messages if m.seq is not None]
        older = messages[0].seq if messages and messages[0].parent_seq is not None else None
        since = {
            m.seq: duration(m.created_at - tree.node(m.parent_seq).created_at)
            for m in messages
            if m.seq is not None
            and m.parent_seq is not None
            and m.parent_seq in tree
            and m.created_at is not None
        }
        root = request.scope.get("root_path", "") or ""
        return self._page(
            request,
            "conversation.html",
            {
                "conv": loaded,
                "title": title,
                "untitled": loaded.title is None,
                "messages": messages,
                "calls": calls_by_id(loaded),
                "marks": compaction_marks(loaded),
                "tips": tips,
                "previews": previews,
                # Only for the messages shown: a page costs its window, not the whole path.
                "navs": sibling_navs(tree, shown),
                "splits": split_points(tree, shown),
                "since": since,
                "totals": usage_totals(messages),
                "timeline": timeline(checkpoints),
                "shown_head": shown_head,
                "stored_head": stored_head,
                "head_param": head,
                "older_before": older,
                "paged": before is not None,
                "follow": follow,
                "file_view": file_view,
                "output_json": output_json,
                "json_string": json_string,
                "is_blank": is_blank,
                "pretty_json": pretty_json,
                "usage_json": usage_json,
                "author": author,
                "md": lambda text: render_markdown(text, root=root),
                "targets": TARGETS,
            },
            headers={"refresh": f"{FOLLOW_SECONDS}"} if follow else None,
        )

    async def document(self, request: Request, cid: str) -> Response:
        """The ``convstore show --json`` document of the conversation (``?head=``: that path)."""
        head = int_param(request, "head", minimum=1)
        loaded = await self._store.load(cid, tenant=self._tenant, head_seq=head)
        return JSONResponse(conversation_document(loaded), headers={"cache-control": "no-store"})

    async def render(self, request: Request, cid: str) -> Response:
        """The request the conversation renders to for a target, beside its diagnostics.

        ``?head=SEQ`` renders that branch's path; without ``?last=``, a window of the newest
        `PREVIEW_LAST` messages (``last=all``: the whole path).
        """
        target = text_param(request, "target") or TARGETS[0]
        model = text_param(request, "model")
        head = int_param(request, "head", minimum=1)
        whole = request.query_params.get("last") == "all"
        last = None if whole else int_param(request, "last")
        if last is None and not whole:
            last = PREVIEW_LAST
        if target not in TARGETS:
            raise InvalidInputError(f"unknown render target; targets are: {', '.join(TARGETS)}")
        header = await self._store.load(cid, tenant=self._tenant, last=0, head_seq=head)
        rendered = await self._store.render(
            cid,
            target,
            model=model,
            tenant=self._tenant,
            last=last,
            head_seq=head,
            # A preview shows what it can: a missing blob becomes a note, listed in diagnostics.
            missing_attachments="placeholder",
        )
        diagnostics = rendered.diagnostics.to_dict()
        return self._page(
            request,
            "render.html",
            {
                "conv": header,
                "target": target,
                "model": model or "",
                "last": last,
                "whole": whole,
                "head_param": head,
                "targets": TARGETS,
                "payload_exact": json.dumps(
                    rendered.payload, ensure_ascii=False, separators=(",", ":")
                ),
                "payload_shown": pretty_json(shorten_media(rendered.payload)),
                "diagnostics": diagnostics,
                "diagnostics_shown": pretty_json(shorten_media(diagnostics)),
            },
        )

    # -- health ---------------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        """Schema revision and counts; ``?fsck=1`` verifies every referenced blob."""
        conversations = messages = 0
        cursor: str | None = None
        complete = True
        while True:
            page = await self._store.list_conversations(
                tenant=self._tenant, limit=_COUNT_PAGE, cursor=cursor
            )
            conversations += len(page)
            messages += sum(row.message_count for row in page)
            cursor = page.next_cursor
            if cursor is None:
                break
            if conversations >= _COUNT_LIMIT:
                complete = False
                break
        report: dict[str, Any] = {
            "status": "ok",
            "schema_revision": head_revision(),
            "conversations": conversations,
            "messages": messages,
            "counts_complete": complete,
            "tenant": self._tenant,
        }
        want_fsck = request.query_params.get("fsck") in ("1", "true", "yes")
        if want_fsck and self._tenant is not None:
            # The blob store is shared by every tenant: a confined inspector does not report it.
            raise InvalidInputError("fsck covers every tenant's blobs: serve without --tenant")
        if want_fsck:
            checked = await fsck(self._store)
            report["fsck"] = {
                "ok": checked.ok,
                "referenced": checked.referenced,
                "missing": checked.missing,
                "corrupted": checked.corrupted,
                "unreferenced": len(checked.unreferenced),
            }
        accept = request.headers.get("accept", "")
        if request.query_params.get("format") == "json" or "application/json" in accept:
            return JSONResponse(report, headers={"cache-control": "no-store"})
        return self._page(request, "health.html", {"report": report})

    # -- errors ---------------------------------------------------------------------------------

    def exception_handlers(self) -> dict[Any, Handler]:
        """Errors as pages: not found 404, bad input 400, anything else the store raised 500."""

        async def convstore_error(request: Request, exc: Exception) -> Response:
            if isinstance(exc, NotFoundError):
                status, text = 404, "Not found."
            elif isinstance(exc, InvalidInputError):
                status, text = 400, str(exc)
            else:
                status, text = 500, f"The store could not answer: {type(exc).__name__}."
            return self._page(request, "error.html", {"status": status, "text": text}, status)

        async def http_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, HTTPException)
            text = "Not found." if exc.status_code == 404 else str(exc.detail)
            return self._page(
                request, "error.html", {"status": exc.status_code, "text": text}, exc.status_code
            )

        return {ConvstoreError: convstore_error, HTTPException: http_error}
