"""Full-text search over messages and conversation titles (`ConversationStore.search`).

The index is the database's own, built off the write path and caught up before a query reads
it (`convstore.db.search_index`, `convstore.store._search_index`), so a search never returns a
deleted message and never misses one committed before it began, whichever code path wrote
them. This module parses the query, picks the statement for its shape
(`convstore.db.statements.search`) and turns rows into hits.

Query syntax, the same on both databases: words, ``"phrases"`` and ``-excluded`` words or
phrases. A document matches when it contains every included term and no excluded one as a
case-folded substring (so CJK text without spaces, parts of code identifiers and of German
compounds are found). Nothing in a query is syntax to the database: FTS5 operators, ``%``,
``_``, backslashes and unbalanced quotes are searched for as text. A query with no included
term finds nothing.

Documents: a message's body (text, tool calls' names and arguments, tool results' text, file
names; see `convstore.db.search_ddl`), its thinking only with ``include_thinking=True``, and a
conversation's title. A title hit has no ``seq``, ``role`` or ``message_id``; titles are weighted
up, so a conversation named after the query comes before the messages that mention it.

Invariants:

- Tenant, conversation and role filters are part of the statement: a page is never filtered
  after its limit, and another tenant's rows are never read into it.
- Pages are positions in one ranking (an opaque cursor holds the next position and which query
  it belongs to); rows written between two pages can shift the ranking, as in any search.
- The snippet is made here, from the hit's stored parts, identically for both databases:
  matches are wrapped in `MARK_START` / `MARK_END`, which never occur otherwise in a snippet.
- Importing this module loads no SQLAlchemy and no pydantic: the query's parameters (`plan`)
  and the hits made of its rows (`page_of`) are shared by the store's search (`run_search`,
  in a `Tx`) and the command line's read-only search on an SQLite file
  (`convstore.cli.search`), which run the same SQL (`convstore.db.statements.search_sql`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from convstore.db.statements.search_sql import POSTGRES_WEIGHTS, Mode, Shape
from convstore.errors import InvalidInputError
from convstore.limits import check_count, check_text
from convstore.model.roles import Role

if TYPE_CHECKING:
    from convstore.db.tx import Tx

Row = tuple[Any, ...]
PathSeqs = Callable[[str, int, int], set[int]]
"""The seqs of a conversation's (first argument) path ending at its head (second), from the
head up to the first message at or below a floor (third): one run of ``PATH_SEQS``."""

__all__ = [
    "MARK_END",
    "MARK_START",
    "MAX_QUERY_LENGTH",
    "MAX_SEARCH_LIMIT",
    "ParsedQuery",
    "SearchHit",
    "SearchPage",
    "finds_nothing",
    "page_of",
    "parse_query",
    "plan",
    "prepare",
    "run_search",
    "searchable_text",
    "snippet_segments",
]

MARK_START: Final = "⟦"
MARK_END: Final = "⟧"
MAX_SEARCH_LIMIT: Final = 1_000
MAX_QUERY_LENGTH: Final = 100_000
"""Characters; a longer query is refused (`InvalidInputError`), a shorter one is always data."""
MIN_INDEXED: Final = 3
"""The trigram index finds terms of at least this many characters; shorter ones are checked."""
SNIPPET_CHARS: Final = 160
RANKED_CANDIDATES: Final = 1_000
"""A query with long terms ranks at most this many messages, the newest that match in its
scope, and at most this many titles (docs/search.md)."""

_CJK: Final = re.compile("([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af])")
"""The characters PostgreSQL's ranking vector splits into words of their own (search_ddl)."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message (or one conversation title) that matches a search."""

    conversation_id: str
    conversation_title: str | None
    seq: int | None
    """The message's ``seq``; ``None`` for a title hit."""
    message_id: str | None
    """The application's own id of the message, if it has one."""
    role: Role | None
    """The message's role; ``None`` for a title hit."""
    snippet: str
    """Text around the first match, each match wrapped in ``⟦`` and ``⟧``."""
    rank: float
    """Relevance, higher first (BM25 on SQLite, ``ts_rank_cd`` on PostgreSQL: comparable
    within one result list only)."""
    on_active_path: bool
    """Whether the message is on its conversation's active path (a title hit: ``True``)."""


class SearchPage(list[SearchHit]):
    """Hits, best first, and where the next page starts."""

    next_cursor: str | None = None
    """Pass as ``cursor=`` for the next page; ``None`` on the last page."""

    @property
    def has_more(self) -> bool:
        """Whether another page follows."""
        return self.next_cursor is not None


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query's terms, lower-cased, each searched for as a substring."""

    included: tuple[str, ...]
    excluded: tuple[str, ...]

    @property
    def long_included(self) -> list[str]:
        """Included terms the trigram index finds, longest first."""
        return sorted((t for t in self.included if len(t) >= MIN_INDEXED), key=len, reverse=True)

    @property
    def short_included(self) -> list[str]:
        """Included terms shorter than three characters."""
        return [t for t in self.included if len(t) < MIN_INDEXED]


def parse_query(query: str) -> ParsedQuery:
    """Words, ``"phrases"`` (an unclosed quote runs to the end) and ``-`` exclusions."""
    included: dict[str, None] = {}
    excluded: dict[str, None] = {}
    text = query.replace("\x00", "")
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negate = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        if negate:
            i += 1
        if text[i] == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end
            term = " ".join(text[i + 1 : end].split())
            i = end + 1
        else:
            end = i
            while end < n and not text[end].isspace():
                end += 1
            term = text[i:end]
            i = end
        if term:
            (excluded if negate else included)[term.lower()] = None
    return ParsedQuery(tuple(included), tuple(t for t in excluded if t not in included))


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _case_variants(term: str) -> list[str]:
    """Every spelling of ``term`` by case, one character at a time (short terms only)."""
    variants = [""]
    for char in term:
        forms = dict.fromkeys(f for f in (char.lower(), char.upper(), char) if len(f) == 1)
        variants = [v + f for v in variants for f in forms]
    return variants


def _rank_spellings(term: str) -> list[str]:
    """``term`` as SQLite's ``lower`` leaves each of its spellings by case (ASCII folded).

    Only letters outside ASCII keep their case there, so their case variants are counted;
    past three such letters, the all-lower and all-upper forms only.
    """
    cased = [i for i, c in enumerate(term) if not c.isascii() and c.lower() != c.upper()]
    if len(cased) > 3:
        forms = {term.lower(), term.upper()}
    else:
        forms = {term.lower()}
        for i in cased:
            forms |= {f[:i] + term[i].upper() + f[i + 1 :] for f in forms}
    folded = {"".join(c.lower() if c.isascii() else c for c in f) for f in forms}
    return sorted(f for f in folded if f)


def _websearch(terms: Iterable[str]) -> str:
    """A ``websearch_to_tsquery`` text of quoted phrases, CJK split as the vectors are."""
    phrases = []
    for term in terms:
        words = _CJK.sub(r" \1 ", term.replace('"', " ")).split()
        if words:
            phrases.append('"' + " ".join(words) + '"')
    return " ".join(phrases)


@dataclass(frozen=True, slots=True)
class _Request:
    query: ParsedQuery
    tenant: str | None
    conversation_id: str | None
    roles: tuple[str, ...] | None
    include_thinking: bool
    limit: int
    offset: int


def _fingerprint(raw: str, request: _Request) -> str:
    key = json.dumps(
        [raw, request.tenant, request.conversation_id, request.roles, request.include_thinking]
    )
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _encode_cursor(offset: int, fingerprint: str) -> str:
    raw = json.dumps([offset, fingerprint]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str, fingerprint: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        offset, owner = json.loads(base64.urlsafe_b64decode(padded.encode()))
        valid = isinstance(offset, int) and offset >= 0 and owner == fingerprint
    except (ValueError, TypeError) as exc:
        raise InvalidInputError(f"not a search cursor: {cursor!r}") from exc
    if not valid:
        raise InvalidInputError("this cursor belongs to another search (query or filters differ)")
    return int(offset)


def _roles(roles: Iterable[Role | str] | None) -> tuple[str, ...] | None:
    if roles is None:
        return None
    if isinstance(roles, str):
        roles = [roles]
    out = []
    for role in roles:
        try:
            out.append(Role(role).value)
        except ValueError as exc:
            known = ", ".join(r.value for r in Role)
            raise InvalidInputError(f"unknown role {role!r} (one of {known})") from exc
    return tuple(dict.fromkeys(out))


def prepare(
    query: str,
    *,
    tenant: str | None,
    conversation_id: str | None,
    roles: Iterable[Role | str] | None,
    include_thinking: bool,
    limit: int,
    cursor: str | None,
) -> tuple[_Request, str]:
    """Check the arguments (no I/O); the request and the fingerprint its cursors carry."""
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, not {type(query).__name__}")
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidInputError(f"query is longer than {MAX_QUERY_LENGTH:,} characters")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"query holds a lone surrogate at character {exc.start} (not valid Unicode text)"
        ) from exc
    check_text(tenant, "tenant")
    check_text(conversation_id, "conversation id")
    check_count(limit, "limit", maximum=MAX_SEARCH_LIMIT)
    request = _Request(
        query=parse_query(query),
        tenant=tenant,
        conversation_id=conversation_id,
        roles=_roles(roles),
        include_thinking=bool(include_thinking),
        limit=limit,
        offset=0,
    )
    fingerprint = _fingerprint(query, request)
    if cursor is not None:
        offset = _decode_cursor(cursor, fingerprint)
        request = replace(request, offset=offset)
    return request, fingerprint


def finds_nothing(request: _Request) -> bool:
    """Whether ``request`` can match nothing, whatever is stored (no query runs)."""
    return (
        not request.query.included
        or request.limit == 0
        or (request.roles is not None and not request.roles)
    )


def plan(
    dialect: str, request: _Request, slots: tuple[int, ...] = ()
) -> tuple[Shape, dict[str, Any]]:
    """The statement shape and the parameters of ``request`` on ``dialect``.

    ``slots``: on SQLite, the index tables to read (`convstore.db.search_index.tenant_slots`).
    """
    query = request.query
    longs, shorts = query.long_included, query.short_included
    long_excluded = [t for t in query.excluded if len(t) >= MIN_INDEXED]
    short_excluded = [t for t in query.excluded if len(t) < MIN_INDEXED]
    mode = Mode.SHORT if not longs else Mode.MIXED if shorts else Mode.LONG
    ranked_spellings = [_rank_spellings(t) for t in longs] if dialect == "sqlite" else []
    shape = Shape(
        spellings=tuple(len(forms) for forms in ranked_spellings),
        dialect="sqlite" if dialect == "sqlite" else "postgresql",
        mode=mode,
        short_excluded=bool(short_excluded) and dialect == "sqlite",
        tenant=request.tenant is not None,
        conversation=request.conversation_id is not None,
        roles=request.roles is not None,
        thinking=request.include_thinking,
        long_excluded=mode is Mode.SHORT and bool(long_excluded) and dialect == "sqlite",
        slots=slots if dialect == "sqlite" else (),
    )
    params: dict[str, Any] = {
        "tenant": request.tenant,
        "conversation_id": request.conversation_id,
        "limit": request.limit + 1,
        "offset": request.offset,
        "window": request.offset + request.limit + 1,
        "cap": RANKED_CANDIDATES,
    }
    if shape.dialect == "sqlite":
        params.update(_sqlite_params(request, longs, shorts, long_excluded, short_excluded))
        for t, spellings in enumerate(ranked_spellings):
            params.update({f"r{t}_{v}": form for v, form in enumerate(spellings)})
    else:
        ordered = [*longs, *shorts]
        params.update(
            lead=_like(ordered[0]),
            rest=[_like(t) for t in ordered[1:]],
            excluded=[_like(t) for t in query.excluded],
            ranked=_websearch(longs),
            weights=[
                w if i or request.include_thinking else 0.0 for i, w in enumerate(POSTGRES_WEIGHTS)
            ],
            roles=list(request.roles) if request.roles is not None else None,
        )
    return shape, params


def page_of(
    rows: Sequence[Row], request: _Request, fingerprint: str, path_seqs: PathSeqs
) -> SearchPage:
    """The page the query's ``rows`` make (one more row than the limit: another page follows).

    A message of an unbranched conversation is on the active path when its ``seq`` is at or
    below the head's; a branched conversation's path is walked once (``path_seqs``), from its
    head down to its lowest hit on the page.
    """
    shown = rows[: request.limit]
    heads: dict[str, int] = {}
    floors: dict[str, int] = {}
    for cid, _, seq, _, _, _, head_seq, branched, _, _ in shown:
        if seq is not None and branched and head_seq is not None:
            heads[cid] = int(head_seq)
            floors[cid] = min(int(seq), floors.get(cid, int(seq)))
    paths = {cid: path_seqs(cid, heads[cid], floor) for cid, floor in floors.items()}
    page = SearchPage()
    for row in shown:
        page.append(_hit(row, request.query, request.include_thinking, paths))
    if len(rows) > request.limit:
        page.next_cursor = _encode_cursor(request.offset + request.limit, fingerprint)
    return page


def run_search(
    tx: Tx, dialect: str, request: _Request, fingerprint: str, *, check_pending: bool = True
) -> SearchPage | None:
    """One page of hits for ``request``, read in ``tx``.

    ``None`` when the deferred index lacks rows this snapshot holds and ``check_pending``:
    the caller catches up and asks again (`convstore.store._search_index`).
    """
    # The statements and the path walk load SQLAlchemy: imported here, so this module's
    # other users (the command line's read-only search) do not load it.
    from convstore.db import search_index
    from convstore.db.statements import search as search_statements

    if finds_nothing(request):
        return SearchPage()
    slots: tuple[int, ...] = ()
    if check_pending and search_index.pending(tx, dialect):
        return None
    if dialect == "sqlite":
        slots = search_index.tenant_slots(tx, request.tenant)
        if not slots:  # a tenant that never had a conversation indexed
            return SearchPage()
    shape, params = plan(dialect, request, slots)
    if shape.dialect == "postgresql" and shape.tenant:
        tx.fetch(search_statements.TENANT_PLANS)
    rows = tx.fetch(search_statements.search_statement(shape), params)

    def path_seqs(cid: str, head: int, floor: int) -> set[int]:
        walked = tx.fetch(search_statements.PATH_SEQS, {"cid": cid, "head": head, "floor": floor})
        return {int(seq) for (seq,) in walked}

    return page_of(rows, request, fingerprint, path_seqs)


def _sqlite_params(
    request: _Request,
    longs: list[str],
    shorts: list[str],
    long_excluded: list[str],
    short_excluded: list[str],
) -> dict[str, Any]:
    columns = "{title body thinking}" if request.include_thinking else "{title body}"
    params: dict[str, Any] = {
        "short": json.dumps([_case_variants(t) for t in shorts]),
        "short_excluded": json.dumps([_case_variants(t) for t in short_excluded]),
        "roles": json.dumps(list(request.roles)) if request.roles is not None else None,
    }
    if longs:
        match = f"{columns} : ({' AND '.join(_fts_phrase(t) for t in longs)})"
        if long_excluded:
            match += f" NOT {columns} : ({' OR '.join(_fts_phrase(t) for t in long_excluded)})"
        params["match"] = match
    elif long_excluded:
        params["exclude"] = f"{columns} : ({' OR '.join(_fts_phrase(t) for t in long_excluded)})"
    return params


def _hit(row: Row, query: ParsedQuery, thinking: bool, paths: Mapping[str, set[int]]) -> SearchHit:
    cid, title, seq, role, message_id, parts, head_seq, branched, rank, _created = row
    if seq is None:
        return SearchHit(
            conversation_id=cid,
            conversation_title=title,
            seq=None,
            message_id=None,
            role=None,
            snippet=make_snippet(title or "", query.included),
            rank=float(rank),
            on_active_path=True,
        )
    decoded = json.loads(parts) if isinstance(parts, (str, bytes)) else parts
    body, thoughts = searchable_text(decoded)
    text = f"{body}\n{thoughts}" if thinking and thoughts else body
    if not branched:
        on_active = head_seq is not None and seq <= head_seq
    else:  # walked in `page_of` (no path when the head is empty)
        on_active = seq in paths.get(cid, ())
    return SearchHit(
        conversation_id=cid,
        conversation_title=title,
        seq=int(seq),
        message_id=message_id,
        role=Role(role),
        snippet=make_snippet(text, query.included),
        rank=float(rank),
        on_active_path=on_active,
    )


def searchable_text(parts: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """A message's body and thinking text from its stored parts, as the index reads them."""
    body: list[str] = []
    thinking: list[str] = []
    for part in parts:
        kind = part.get("kind")
        if kind == "thinking":
            if part.get("text") is not None:
                thinking.append(part["text"])
            continue
        value = _part_text(part)
        if value is not None:
            body.append(value)
    return "\n".join(body), "\n".join(thinking)


def _part_text(part: Mapping[str, Any]) -> str | None:
    kind = part.get("kind")
    if kind == "text":
        return part.get("text")
    if kind == "file":
        return part.get("filename")
    if kind == "tool_call":
        arguments = json.dumps(part.get("arguments", {}), separators=(",", ":"), ensure_ascii=False)
        return f"{part.get('name')} {arguments}"
    if kind != "tool_result":
        return None
    output = part.get("output") or {}
    match output.get("kind"):
        case "json":
            value = output.get("value")
            if value is None or isinstance(value, str):
                return value
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        case "error":
            return output.get("message")
        case "content":
            texts = [p.get("text") or p.get("filename") for p in output.get("parts", [])]
            return "\n".join(t for t in texts if t) or None
    return None


def make_snippet(text: str, terms: Sequence[str]) -> str:
    """About `SNIPPET_CHARS` characters around the first match, every match marked."""
    flat = " ".join(text.replace(MARK_START, "[").replace(MARK_END, "]").split())
    if not terms:
        return flat[:SNIPPET_CHARS]
    pattern = re.compile(
        "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)), re.IGNORECASE
    )
    first = pattern.search(flat)
    start = 0 if first is None else max(0, first.start() - SNIPPET_CHARS // 3)
    end = min(len(flat), start + SNIPPET_CHARS)
    start = max(0, min(start, end - SNIPPET_CHARS))
    window = flat[start:end]
    marked = pattern.sub(lambda m: f"{MARK_START}{m.group(0)}{MARK_END}", window)
    return ("…" if start else "") + marked + ("…" if end < len(flat) else "")


def snippet_segments(snippet: str) -> list[tuple[str, bool]]:
    """A snippet cut at its marks: ``(text, matched)`` pairs, for markup of one's own."""
    segments = []
    for i, piece in enumerate(re.split(f"[{MARK_START}{MARK_END}]", snippet)):
        if piece:
            segments.append((piece, i % 2 == 1))
    return segments
