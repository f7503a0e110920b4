"""``convstore search``: find messages and conversation titles (`ConversationStore.search`).

Each hit is printed as one line (conversation, seq, role, snippet), matches in bold on a
terminal and in ``⟦…⟧`` otherwise; ``--json`` prints the hits as one JSON document instead,
with the next page's cursor. It opens only an existing database and never writes to it. A
query may begin with ``-`` (the parser reads it as the query, not an option); a query of only
exclusions says why it finds nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from convstore.cli.stores import existing_store
from convstore.store.search import MARK_END, MARK_START, SearchHit, parse_query

__all__ = ["hit_document", "hit_line", "search"]


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


async def search(args: argparse.Namespace) -> int:
    """Print one page of hits, best first."""
    async with existing_store(args) as store:
        page = await store.search(
            args.query,
            tenant=args.tenant,
            conversation_id=args.conversation,
            include_thinking=args.thinking,
            limit=args.limit,
            cursor=args.cursor,
        )
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
