"""The search query as SQL text, one statement set per database, with no SQLAlchemy import.

`convstore.db.statements.search` wraps these texts as the store's statements; the command
line's read-only path (`convstore.db.sqlite.read_only`) runs the same texts through the
standard library's ``sqlite3``, so there is one source of each query. Beside the query: the
pending-work check and the tenant lookup a search runs first, and the layout of the index's
document ids they share with `convstore.db.search_index` (which builds and keeps the index).

Every statement answers the same question the same way on both databases: the documents (a
message's body, and its thinking when asked; a conversation's title) containing every included
term and no excluded one as a case-folded substring, best first, then newest, then by
conversation id and ``seq``, ``:limit`` rows from ``:offset``. Tenant, conversation and role
filters are conditions of the statement, so they apply before the limit.

Only the newest ``:cap`` matching messages in scope (and as many titles) are ranked: a query
matching more ranks those and never reads the rest. "Newest" is the highest rowid on SQLite
(the order rows were written in) and the latest ``created_at`` on PostgreSQL, the same order
unless messages were imported with their own times. Each arm (messages, titles) is limited,
ranked and joined to its page's columns last, so a page reads at most ``:cap`` rows per arm
and the text of its own hits only.

How each database finds the documents:

- SQLite: terms of three characters or more are one FTS5 ``MATCH`` over the tenant's own
  index table, ``search_fts_<slot>`` (`fts_table`; trigram phrases, quoted by the caller, so
  query text is never FTS5 syntax), read newest first; a search of every tenant reads each
  tenant's table the same way and keeps the highest document ids of them all; shorter terms
  (which the trigram tokenizer cannot find) are checked against each candidate's text with
  ``instr`` over each term's case variants. Rank: BM25's saturation and length norm from the
  document alone (`_sqlite_rank`; title 2, body 1, thinking 0.5).
- PostgreSQL: ``LIKE`` on the lower-cased generated columns; the first (longest) term is the
  one the ``pg_trgm`` index serves, the rest are checked on its candidates. Rank:
  ``ts_rank_cd`` over the ``simple``-configuration vectors with ``websearch_to_tsquery`` of the
  long terms (weights: title 0.8, body 0.4, thinking 0.2), normalised by document length.

A query of short terms only ranks every hit 0 on both databases, newest first: each arm reads
messages (titles) newest first through ``ix_search_messages_created``
(``ix_conversations_created_at_id``), skipping on SQLite rows whose stored JSON cannot contain
the first term, and stops once the page (``:window`` rows from the start) is full. It has no
cap, but a short term that few messages contain reads every message.

Statements are built once per shape (dialect, which filters are present and, on SQLite, which
tenant tables are read) and kept (the most recent `SHAPES_KEPT`): a query's text is always a
parameter, never part of the SQL; a table's name is made of its slot, an integer, never of a
tenant's name. Parameters are named (``:name``), which both
SQLAlchemy's ``text()`` and ``sqlite3`` bind from a mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Final

__all__ = [
    "DOC_MASK",
    "PATH_SEQS",
    "PENDING_SQLITE",
    "POSTGRES_WEIGHTS",
    "SHAPES_KEPT",
    "SLOT_BITS",
    "TENANT_PLANS",
    "TENANT_SLOT",
    "TENANT_SLOTS",
    "UNSCOPED",
    "Mode",
    "Shape",
    "fts_table",
    "search_sql",
    "slot_range",
    "tenant_slot",
    "title_doc",
]

# -- The index's tables and document ids (SQLite; `convstore.db.search_index` keeps them) -------

SLOT_BITS: Final = 40
"""A message document id is ``slot << SLOT_BITS | rowid`` (rowids below 2**40)."""
DOC_MASK: Final = (1 << SLOT_BITS) - 1


def fts_table(slot: int) -> str:
    """The name of the FTS5 table holding the documents of the tenant with ``slot``.

    Made of the integer alone (``int`` refuses anything else), so no tenant's text ever
    reaches SQL as a name.
    """
    return f"search_fts_{int(slot)}"


def slot_range(slot: int) -> tuple[int, int]:
    """The message document ids of the tenant with ``slot`` in ``search_tenants``."""
    low = slot << SLOT_BITS
    return low, low | DOC_MASK


def tenant_slot(tenant: str) -> str:
    """SQL: the slot of the tenant named by the SQL expression ``tenant`` (0: no tenant)."""
    return f"coalesce((SELECT t.slot FROM search_tenants AS t WHERE t.tenant = {tenant}), 0)"


def title_doc(tenant: str, rowid: str) -> str:
    """SQL: the document id of the title of the conversation with ``tenant`` and ``rowid``."""
    return f"-(({tenant_slot(tenant)} << {SLOT_BITS}) | {rowid})"


TENANT_SLOT: Final = (
    "SELECT t.slot FROM search_tenants AS t JOIN search_tables AS x ON x.slot = t.slot"
    " WHERE t.tenant = :tenant"
)
"""A tenant's slot, when its index table exists; no row for a tenant that never had a
conversation indexed (SQLite)."""
TENANT_SLOTS: Final = "SELECT slot FROM search_tables ORDER BY slot DESC"
"""Every slot whose index table exists, highest first: what a search of every tenant reads."""

PENDING_SQLITE: Final = """SELECT s.mark < coalesce((SELECT max(rowid) FROM messages), 0)
      OR EXISTS (SELECT 1 FROM search_log)
      OR EXISTS (SELECT 1 FROM search_title_log)
      OR coalesce((SELECT m.rowid FROM messages AS m
                   WHERE m.conversation_id = s.msg_cid AND m.seq = s.msg_seq), s.msg_rowid)
         IS NOT s.msg_rowid
      OR coalesce((SELECT c.rowid FROM conversations AS c WHERE c.id = s.conv_id), s.conv_rowid)
         IS NOT s.conv_rowid
    FROM search_state AS s"""
"""One row: whether the index lacks anything this snapshot holds (SQLite)."""


class Mode(Enum):
    """Which kinds of terms a query has (included terms; excluded ones follow the same split)."""

    LONG = "long"
    """Every included term has three characters or more (excluded short terms are allowed)."""
    MIXED = "mixed"
    """Long and short included terms."""
    SHORT = "short"
    """Only short included terms."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What a statement filters on; the values themselves are parameters."""

    dialect: str
    mode: Mode
    short_excluded: bool
    tenant: bool
    conversation: bool
    roles: bool
    thinking: bool
    long_excluded: bool = False
    """A short-terms-only query (SQLite) excludes terms the index finds (``:exclude``)."""
    spellings: tuple[int, ...] = ()
    """SQLite: how many case spellings each ranked term has (``:r{term}_{spelling}``)."""
    slots: tuple[int, ...] = ()
    """SQLite: the slots whose index tables the query reads (`fts_table`), highest first: the
    tenant's one, or every tenant's for a search of every tenant."""


SQLITE_WEIGHTS: Final = "2.0, 1.0, 0.5"
POSTGRES_WEIGHTS: Final = (0.2, 0.0, 0.4, 0.8)
"""``ts_rank_cd`` weights for D, C, B, A: thinking, (unused), body, title."""

PATH_SEQS: Final = (
    "WITH RECURSIVE up(seq, parent_seq) AS (SELECT m.seq, m.parent_seq FROM messages AS m"
    " WHERE m.conversation_id = :cid AND m.seq = :head UNION ALL SELECT m.seq, m.parent_seq"
    " FROM up JOIN messages AS m ON m.conversation_id = :cid AND m.seq = up.parent_seq"
    " WHERE up.seq > :floor) SELECT seq FROM up"
)
"""Both databases: the seqs of the path ending at ``:head``, walked up its parent pointers
from ``:head`` to the first message at or below ``:floor`` (or the root): which hits of a
branched conversation are on its active path. It costs the distance walked."""

TENANT_PLANS: Final = "SELECT set_config('enable_seqscan', 'off', true)"
"""PostgreSQL, before a tenant's search, in its read transaction: plan the search without
sequential scans, so each arm reads through the tenant-leading indexes (the ``(tenant, text)``
GINs, ``(tenant, created_at)``) and only that tenant's rows. A table of a few pages (every
tenant's titles, or messages, on a young database) is cheaper to scan whole than through an
index, and the planner would read other tenants' rows to answer one tenant: the work, and
time, of a tenant's search would then follow other tenants' data (issue 32, finding 7). Local
to the transaction. The one other index over every tenant's rows, ``(created_at)``, is partial
on `UNSCOPED`, which only a search of every tenant states (revision 0015)."""

UNSCOPED: Final = "conversation_id <> ''"
"""True of every row of ``search_docs`` and ``search_titles`` (conversation ids are 1 to 64
characters): the predicate of their partial ``(created_at)`` indexes (revision 0015), stated by
a search of every tenant only, so a tenant's search cannot walk every tenant's rows."""

_ORDER: Final = (
    "ORDER BY rank DESC, created DESC, cid, coalesce(seq, 0) LIMIT :limit OFFSET :offset"
)


SHAPES_KEPT: Final = 1024
"""Statements kept at most (a tenant's search has its own: its table's name)."""


@lru_cache(maxsize=SHAPES_KEPT)
def search_sql(shape: Shape) -> str:
    """The query for ``shape`` (the same string for the same shape)."""
    if shape.dialect == "sqlite":
        return _sqlite(shape)
    return _postgres(shape)


# -- Both ---------------------------------------------------------------------------------------

_KEYS: Final = "doc, rank, created, cid, seq"
"""What ranking needs of a document; a page's other columns are read for its rows only."""


def _page(dialect: str, keys: str) -> str:
    """The page of ``keys`` (a ranked, limited CTE) joined to what its hits show."""
    if dialect == "sqlite":
        message = f"m.rowid = (k.doc & {DOC_MASK}) AND k.doc > 0"
        parts = "m.parts"
    else:
        message = "m.conversation_id = k.cid AND m.seq = k.seq"
        parts = "CAST(m.parts AS text)"
    return (
        f"{keys} SELECT k.cid, c.title, k.seq, m.role, m.message_id, {parts}, c.head_seq,"
        " c.branched, k.rank, k.created FROM keys AS k JOIN conversations AS c ON c.id = k.cid"
        f" LEFT JOIN messages AS m ON {message} ORDER BY k.rank DESC, k.created DESC, k.cid,"
        " coalesce(k.seq, 0)"
    )


_NEWEST: Final = "ORDER BY created DESC, cid, seq LIMIT :window"
"""Within one arm of a short-terms-only query (every rank 0): the newest ``:window`` rows are
all that can reach the page, so the scan stops there (``ix_search_messages_created``)."""


_CANDIDATES: Final = "ORDER BY created DESC, cid DESC, seq DESC LIMIT :cap"
"""PostgreSQL's candidates for ranking: the newest matches (SQLite: the highest rowids)."""


# -- SQLite -------------------------------------------------------------------------------------


def _sqlite_short_filter(shape: Shape, doc_text: str) -> str:
    """Conditions on ``doc_text`` for the short terms (each a JSON list of case variants)."""
    out = []
    if shape.mode is not Mode.LONG:
        out.append(
            "NOT EXISTS (SELECT 1 FROM json_each(:short) AS s WHERE NOT EXISTS ("
            f"SELECT 1 FROM json_each(s.value) AS v WHERE instr({doc_text}, v.value) > 0))"
        )
    if shape.short_excluded:
        out.append(
            "NOT EXISTS (SELECT 1 FROM json_each(:short_excluded) AS s, json_each(s.value) AS v"
            f" WHERE instr({doc_text}, v.value) > 0)"
        )
    return " AND ".join(out)


def _filters(shape: Shape, roles: str | None) -> list[str]:
    """The scope of a query; ``roles`` is the dialect's role test (``None`` for titles)."""
    where = []
    if shape.tenant:
        where.append("c.tenant = :tenant")
    if shape.conversation:
        where.append("c.id = :conversation_id")
    if roles is not None and shape.roles:
        where.append(roles)
    return where


def _scoped(shape: Shape) -> bool:
    return shape.tenant or shape.conversation


_SQLITE_ROLES: Final = "m.role IN (SELECT value FROM json_each(:roles))"
_MESSAGE_KEYS: Final = "m.created_at AS created, m.conversation_id AS cid, m.seq AS seq"
_TITLE_KEYS: Final = "c.created_at AS created, c.id AS cid, CAST(NULL AS integer) AS seq"


def _sqlite_text(shape: Shape) -> str:
    """A message document's searched text, as the index stores it."""
    if shape.thinking:
        return "(coalesce(f.body, '') || char(10) || coalesce(f.thinking, ''))"
    return "f.body"


def _sqlite_join(shape: Shape) -> str:
    return " JOIN conversations AS c ON c.id = m.conversation_id" if _scoped(shape) else ""


def _sqlite_rank(shape: Shape, column: str, weight: float) -> str:
    """BM25's term saturation and length norm for ``column``, from the document alone.

    No statistic of other documents enters a rank (FTS5's ``bm25()`` reads every document of
    every tenant that has a term): each long term's count in the lower-cased column, saturated
    (k1 = 1.2) and normalised by the column's length against a fixed 500 characters
    (b = 0.75). SQLite's ``lower`` folds ASCII only, so each term comes as its spellings by the
    case of its other letters (``convstore.store.search``), counted together. Written out per
    term (no table-valued function per candidate: a third of the cost).
    """
    saturated = " + ".join(
        f"(({c}) * 2.2 / (({c}) + 1.2 * (0.25 + 0.75 * length(d.value) / 500.0)))"
        for c in (
            " + ".join(
                f"(length(d.value) - length(replace(d.value, :r{t}_{v}, ''))) / length(:r{t}_{v})"
                for v in range(spellings)
            )
            for t, spellings in enumerate(shape.spellings)
        )
    )
    return (
        f"{weight} * coalesce((SELECT {saturated or '0.0'}"
        f" FROM json_each(json_array(lower({column}))) AS d), 0.0)"
    )


_DOC: Final = f"(f.rowid & {DOC_MASK})"
_NOT_LOGGED: Final = f"{_DOC} NOT IN (SELECT msg FROM search_log)"
"""A message whose row was deleted or changed since it was indexed is not a hit (a search that
caught up first sees an empty log; one racing later writes does not see their rows)."""
_TITLE_NOT_LOGGED: Final = "f.rowid NOT IN (SELECT doc FROM search_title_log)"
"""The same for a title changed, or a conversation deleted, since its title was indexed."""
_COMPOUND: Final = 400
"""Arms per ``UNION ALL`` at most (SQLite refuses a compound of more than 500)."""


def _union(selects: list[str]) -> str:
    """One query of the rows of all ``selects`` (nested past `_COMPOUND` of them)."""
    if len(selects) == 1:
        return selects[0]
    if len(selects) > _COMPOUND:
        step = -(-len(selects) // _COMPOUND)
        selects = [_union(selects[i : i + step]) for i in range(0, len(selects), step)]
    return " UNION ALL ".join(f"SELECT * FROM ({s})" for s in selects)


def _each_table(shape: Shape, arm: str, order: str) -> str:
    """``arm`` (``{fts}`` standing for a table's name) over each of the shape's tables.

    Their union is limited again as one table's arm is (``order``): a search of every tenant
    keeps exactly what one table holding every tenant's documents would give.
    """
    arms = [arm.replace("{fts}", fts_table(slot)) for slot in shape.slots]
    if len(arms) == 1:
        return arms[0]
    return f"SELECT * FROM ({_union(arms)}) {order}"


def _sqlite(shape: Shape) -> str:
    if shape.mode is Mode.SHORT:
        return _page("sqlite", _sqlite_short(shape))
    short = shape.mode is Mode.MIXED or shape.short_excluded
    body_rank = _sqlite_rank(shape, "f.body", 1.0)
    if shape.thinking:
        body_rank += " + " + _sqlite_rank(shape, "f.thinking", 0.5)
    # The tenant's own index is the outer loop, newest document first; each hit is joined to
    # its row and checked against the scope (and the short terms) as it comes, so only the
    # newest `:cap` documents in scope are ranked and the rest are never read. Message
    # documents have positive ids, titles negative ones.
    message_where = [
        "{fts} MATCH :match",
        "f.rowid > 0",
        _NOT_LOGGED,
        *_filters(shape, _SQLITE_ROLES),
    ]
    title_where = ["{fts} MATCH :match", "f.rowid < 0", _TITLE_NOT_LOGGED,
                   *_filters(shape, None)]  # fmt: skip
    message_text = title_text = ""
    if short:
        condition = _sqlite_short_filter(shape, "d.value")
        message_text = f", json_each(json_array({_sqlite_text(shape)})) AS d"
        title_text = ", json_each(json_array(c.title)) AS d"
        message_where.append(condition)
        title_where.append(condition)
    messages = _each_table(
        shape,
        f"SELECT f.rowid AS doc, {body_rank} AS rank, {_MESSAGE_KEYS}"
        f" FROM {{fts}} AS f JOIN messages AS m ON m.rowid = {_DOC}"
        f"{_sqlite_join(shape)}{message_text}"
        f" WHERE {' AND '.join(message_where)} ORDER BY f.rowid DESC LIMIT :cap",
        "ORDER BY doc DESC LIMIT :cap",
    )
    titles = _each_table(
        shape,
        f"SELECT f.rowid AS doc, {_sqlite_rank(shape, 'f.title', 2.0)} AS rank, {_TITLE_KEYS}"
        f" FROM {{fts}} AS f JOIN conversations AS c ON c.rowid = (-f.rowid & {DOC_MASK})"
        f"{title_text} WHERE {' AND '.join(title_where)} ORDER BY f.rowid LIMIT :cap",
        "ORDER BY doc LIMIT :cap",
    )
    arms = [messages] if shape.roles else [messages, titles]
    names = [f"arm{i}" for i in range(len(arms))]
    ctes = ", ".join(f"{n} AS MATERIALIZED ({a})" for n, a in zip(names, arms, strict=True))
    union = " UNION ALL ".join(f"SELECT {_KEYS} FROM {n}" for n in names)
    return _page(
        "sqlite", f"WITH {ctes}, keys AS MATERIALIZED (SELECT {_KEYS} FROM ({union}) {_ORDER})"
    )


def _sqlite_short(shape: Shape) -> str:
    """Short terms only: the tenant's newest documents first, until the window is full.

    The stored text of each document is checked (no JSON is read); the scan is the tenant's
    own index table, newest first.
    """
    condition = _sqlite_short_filter(shape, "d.value")
    message_where = [
        "f.rowid > 0",
        _NOT_LOGGED,
        *_filters(shape, _SQLITE_ROLES),
        condition,
    ]
    title_where = ["c.title IS NOT NULL", *_filters(shape, None), condition]
    if shape.long_excluded:
        message_where.append("f.rowid NOT IN (SELECT rowid FROM {fts} WHERE {fts} MATCH :exclude)")
        excluded = _union(
            [
                f"SELECT rowid FROM {fts_table(slot)} WHERE {fts_table(slot)} MATCH :exclude"
                for slot in shape.slots
            ]
        )
        title_where.append(f"{title_doc('c.tenant', 'c.rowid')} NOT IN ({excluded})")
    messages = _each_table(
        shape,
        f"SELECT f.rowid AS doc, 0.0 AS rank, {_MESSAGE_KEYS}"
        f" FROM {{fts}} AS f JOIN messages AS m ON m.rowid = {_DOC}{_sqlite_join(shape)},"
        f" json_each(json_array({_sqlite_text(shape)})) AS d"
        f" WHERE {' AND '.join(message_where)} ORDER BY f.rowid DESC LIMIT :window",
        "ORDER BY doc DESC LIMIT :window",
    )
    titles = (
        f"SELECT -c.rowid AS doc, 0.0 AS rank, {_TITLE_KEYS}"
        " FROM conversations AS c, json_each(json_array(c.title)) AS d"
        f" WHERE {' AND '.join(title_where)} {_NEWEST}"
    )
    arms = [messages] if shape.roles else [messages, titles]
    union = " UNION ALL ".join(f"SELECT {_KEYS} FROM ({arm})" for arm in arms)
    return f"WITH keys AS MATERIALIZED (SELECT {_KEYS} FROM ({union}) {_ORDER})"


# -- PostgreSQL ---------------------------------------------------------------------------------


def _postgres_match(lead: list[str], whole: str) -> list[str]:
    """Conditions: ``lead`` (indexed columns) has the first term; ``whole`` has them all."""
    first = " OR ".join(f"{column} LIKE :lead" for column in lead)
    return [
        f"({first})",
        f"{whole} LIKE ALL(CAST(:rest AS text[]))",
        f"NOT ({whole} LIKE ANY(CAST(:excluded AS text[])))",
    ]


def _postgres_filters(shape: Shape, alias: str, roles: bool) -> list[str]:
    """The scope of a query on the index's own columns (``search_docs``, ``search_titles``)."""
    where = []
    if shape.tenant:
        # With the text condition, one lookup of the (tenant, text) GIN index.
        where.append(f"{alias}.tenant = :tenant")
    else:
        # Always true; it lets a search of every tenant (only) read newest first through the
        # partial (created_at) indexes.
        where.append(f"{alias}.{UNSCOPED}")
    if shape.conversation:
        where.append(f"{alias}.conversation_id = :conversation_id")
    if roles and shape.roles:
        where.append(f"{alias}.role = ANY(CAST(:roles AS text[]))")
    return where


_PG_MESSAGE_KEYS: Final = "d.created_at AS created, d.conversation_id AS cid, d.seq AS seq"
_PG_TITLE_KEYS: Final = (
    "t.created_at AS created, t.conversation_id AS cid, CAST(NULL AS integer) AS seq"
)


def _postgres(shape: Shape) -> str:
    query = "websearch_to_tsquery('simple'::regconfig, :ranked)"
    weights = "CAST(:weights AS float4[])"
    if shape.thinking:
        lead = ["d.body", "d.thinking"]
        whole = "(coalesce(d.body, '') || E'\\n' || coalesce(d.thinking, ''))"
    else:
        lead, whole = ["d.body"], "d.body"
    ranked = shape.mode is not Mode.SHORT
    message_where = " AND ".join(
        [*_postgres_match(lead, whole), *_postgres_filters(shape, "d", roles=True)]
    )
    title_where = " AND ".join(
        [*_postgres_match(["t.title"], "t.title"), *_postgres_filters(shape, "t", roles=False)]
    )
    if not ranked:
        messages = (
            f"SELECT CAST(NULL AS bigint) AS doc, CAST(0.0 AS float8) AS rank, {_PG_MESSAGE_KEYS}"
            f" FROM search_docs AS d WHERE {message_where} {_NEWEST}"
        )
        titles = (
            f"SELECT CAST(NULL AS bigint) AS doc, CAST(0.0 AS float8) AS rank, {_PG_TITLE_KEYS}"
            f" FROM search_titles AS t WHERE {title_where} {_NEWEST}"
        )
    else:
        # The newest `:cap` matches in scope are the candidates; only they are ranked.
        messages = (
            f"SELECT CAST(NULL AS bigint) AS doc,"
            f" CAST(ts_rank_cd({weights}, vector, {query}, 1) AS float8) AS rank, created, cid, seq"
            f" FROM (SELECT {_PG_MESSAGE_KEYS}, d.vector AS vector FROM search_docs AS d"
            f" WHERE {message_where} {_CANDIDATES}) AS candidates"
        )
        title_vector = "setweight(convstore_search_words(c.title), 'A')"
        titles = (
            f"SELECT CAST(NULL AS bigint) AS doc,"
            f" CAST(ts_rank_cd({weights}, {title_vector}, {query}, 1) AS float8) AS rank,"
            " candidates.created, candidates.cid, candidates.seq"
            f" FROM (SELECT {_PG_TITLE_KEYS} FROM search_titles AS t"
            f" WHERE {title_where} {_CANDIDATES}) AS candidates"
            " JOIN conversations AS c ON c.id = candidates.cid"
        )
    arms = [messages] if shape.roles else [messages, titles]
    union = " UNION ALL ".join(f"({arm})" for arm in arms)
    return _page("postgresql", f"WITH keys AS (SELECT {_KEYS} FROM ({union}) AS hits {_ORDER})")
