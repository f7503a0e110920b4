"""``convstore search``: find messages and conversation titles (`ConversationStore.search`).

Each hit is printed as one line (conversation, seq, role, snippet), matches in bold on a
terminal and in ``⟦…⟧`` otherwise; ``--json`` prints the hits as one JSON document instead,
with the next page's cursor. It opens only an existing database and never writes to it. A
query may begin with ``-`` (the parser reads it as the query, not an option); a query of only
exclusions says why it finds nothing.

Two paths print the same bytes:

- `quick_search` (tried first, blocking): an SQLite file at the current revision whose search
  index has nothing pending is read through `convstore.db.sqlite.read_only`: the standard
  library's ``sqlite3``, read-only, the store's own SQL (`convstore.db.statements.search_sql`),
  the store's own parameters and hits (`convstore.store.search.plan`, ``page_of``). No
  SQLAlchemy, pydantic, asyncio or store is loaded. Anything else returns ``None``, having
  printed nothing: another database, a revision to check or migrate, index work to catch up (a
  write), a driver error.
- `search`: the store's search (`ConversationStore.search`), which catches the index up first.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from convstore.cli.stores import location_notice
from convstore.db.sqlite.read_only import ReadOnlySqlite, plain_sqlite_path
from convstore.errors import DatabaseNotFoundError
from convstore.store import _settings
from convstore.store.search import (
    MARK_END,
    MARK_START,
    SearchHit,
    SearchPage,
    finds_nothing,
    page_of,
    parse_query,
    plan,
    prepare,
)

__all__ = ["QUICK_PATH_OFF", "hit_document", "hit_line", "quick_search", "search"]

QUICK_PATH_OFF = "CONVSTORE_SEARCH_STORE_ONLY"
"""Set to ``1``, `quick_search` always declines: every search goes through the store (tests
compare both paths' output with it)."""


def hit_document(hit: SearchHit) -> dict[str, Any]:
    """A hit as JSON (the role as its value)."""
    document = asdict(hit)
    document["role"] = None if hit.role is None else hit.role.value
    return document


def hit_line(hit: SearchHit, *, bold: bool) -> str:
    """``conversation  seq  role  snippet`` (a title hit: ``title`` in place of seq and role)."""
    snippet = hit.snippet
    if bold:
        snippet = snippet.replace(MARK_START, "\x1b[1m").replace(MARK_END, "\x1b[0m")
    where = "title" if hit.seq is None else f"{hit.seq:>5}  {hit.role}"
    branch = "" if hit.on_active_path else "  (off the active path)"
    return f"{hit.conversation_id}  {where:<16}  {snippet}{branch}"


def _why_nothing(query: str) -> str:
    """Why ``query`` cannot match anything, when its words say so (else empty)."""
    terms = parse_query(query)
    if terms.included:
        return ""
    if terms.excluded:
        return (
            ": a query of only -excluded terms matches nothing (it says what to leave out, "
            'not what to find); add a word to find, e.g. "report -draft"'
        )
    return ": the query has no words to find"


def _print_page(page: SearchPage, args: argparse.Namespace) -> int:
    if args.json:
        document = {"hits": [hit_document(h) for h in page], "next_cursor": page.next_cursor}
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    bold = sys.stdout.isatty()
    for hit in page:
        print(hit_line(hit, bold=bold))
    if not page:
        print(f"no hits{_why_nothing(args.query)}")
    if page.next_cursor is not None:
        print(f"more: add --cursor {page.next_cursor}")
    return 0


async def search(args: argparse.Namespace) -> int:
    """Print one page of hits, best first."""
    from convstore.cli.stores import existing_store  # the store: not for the quick path

    async with existing_store(args) as store:
        page = await store.search(
            args.query,
            tenant=args.tenant,
            conversation_id=args.conversation,
            include_thinking=args.thinking,
            limit=args.limit,
            cursor=args.cursor,
        )
    return _print_page(page, args)


def quick_search(args: argparse.Namespace) -> int | None:
    """`search`'s output read without the store, or ``None``: `search` answers instead."""
    path = plain_sqlite_path(args.url)
    if path is None or os.environ.get(QUICK_PATH_OFF) == "1":
        return None
    if not path.exists():
        raise DatabaseNotFoundError(str(path))  # as `search` says it (existing_store)
    try:
        page = _quick_page(path, args)
    except sqlite3.Error:
        return None  # the store's path meets it too, and reports it translated
    if page is None:
        return None
    return _print_page(page, args)


def _quick_page(path: Path, args: argparse.Namespace) -> SearchPage | None:
    with ReadOnlySqlite(path) as db:
        if not db.at_head():
            return None
        if args.blobs is not None:
            recorded = db.setting(_settings.BLOBS_KEY)
            resolved = None if recorded is None else _settings.resolve(recorded, path)
            if location_notice(resolved, args) is not None:
                return None  # the store's path says where the blobs went
        request, fingerprint = prepare(
            args.query,
            tenant=args.tenant,
            conversation_id=args.conversation,
            roles=None,
            include_thinking=args.thinking,
            limit=args.limit,
            cursor=args.cursor,
        )
        if finds_nothing(request):
            return SearchPage()
        if db.search_pending():
            return None  # the store catches the index up (a write) before it reads
        slots = db.tenant_slots(request.tenant)
        if not slots:  # a tenant that never had a conversation indexed
            return SearchPage()
        shape, params = plan("sqlite", request, slots)
        return page_of(db.search_rows(shape, params), request, fingerprint, db.path_seqs)
