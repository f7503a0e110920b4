"""The search query, one statement set per database (`convstore.store.search` runs them).

Every statement answers the same question the same way on both databases: the documents (a
message's body, and its thinking when asked; a conversation's title) containing every included
term and no excluded one as a case-folded substring, best first, then newest, then by
conversation id and ``seq``, ``:limit`` rows from ``:offset``. Tenant, conversation and role
filters are conditions of the statement, so they apply before the limit.

How each database finds the documents:

- SQLite: terms of three characters or more are one FTS5 ``MATCH`` over ``search_fts``
  (trigram phrases; quoted by the caller, so query text is never FTS5 syntax); shorter terms
  (which the trigram tokenizer cannot find) are checked against the candidates' text with
  ``instr`` over each term's case variants. A query of short terms only scans the messages,
  skipping rows whose stored JSON cannot contain the first term. Rank: ``-bm25`` (title 2,
  body 1, thinking 0.5).
- PostgreSQL: ``LIKE`` on the lower-cased generated columns; the first (longest) term is the
  one the ``pg_trgm`` index serves, the rest are checked on its candidates. Rank:
  ``ts_rank_cd`` over the ``simple``-configuration vectors with ``websearch_to_tsquery`` of the
  long terms (weights: title 0.8, body 0.4, thinking 0.2), normalised by document length.

A query of short terms only ranks every hit 0 on both databases (newest first).

Statements are built once per shape (dialect and which filters are present) and kept: a query's
text is always a parameter, never part of the SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Final

from sqlalchemy import TextClause, text

from convstore.db.search_ddl import SQLITE_BODY, SQLITE_THINKING

__all__ = ["Mode", "Shape", "search_statement"]


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


SQLITE_WEIGHTS: Final = "2.0, 1.0, 0.5"
POSTGRES_WEIGHTS: Final = (0.2, 0.0, 0.4, 0.8)
"""``ts_rank_cd`` weights for D, C, B, A: thinking, (unused), body, title."""

_ORDER: Final = (
    "ORDER BY rank DESC, created DESC, cid, coalesce(seq, 0) LIMIT :limit OFFSET :offset"
)


@cache
def search_statement(shape: Shape) -> TextClause:
    """The statement for ``shape`` (the same object for the same shape)."""
    if shape.dialect == "sqlite":
        return text(_sqlite(shape))
    return text(_postgres(shape))


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


_SQLITE_ROLES: Final = "m.role IN (SELECT value FROM json_each(:roles))"
_POSTGRES_ROLES: Final = "m.role = ANY(CAST(:roles AS text[]))"


def _sqlite(shape: Shape) -> str:
    body = SQLITE_BODY("m.parts")
    if shape.thinking:
        body = f"(coalesce({body}, '') || char(10) || coalesce({SQLITE_THINKING('m.parts')}, ''))"
    short = shape.mode is not Mode.LONG or shape.short_excluded
    message_cols = (
        "m.conversation_id AS cid, c.title AS title, m.seq AS seq, m.role AS role,"
        " m.message_id AS message_id, m.parts AS parts, c.head_seq AS head_seq,"
        " c.branched AS branched"
    )
    title_cols = (
        "c.id AS cid, c.title AS title, NULL AS seq, NULL AS role, NULL AS message_id,"
        " NULL AS parts, c.head_seq AS head_seq, c.branched AS branched"
    )
    message_where = _filters(shape, _SQLITE_ROLES)
    title_where = _filters(shape, None)
    if shape.mode is Mode.SHORT:
        # No term the index can find: scan, skipping rows whose JSON lacks the first term.
        message_where.append(
            "EXISTS (SELECT 1 FROM json_each(:prefilter) AS v WHERE instr(m.parts, v.value) > 0)"
        )
        inner_messages = (
            f"SELECT {message_cols}, 0.0 AS rank, m.created_at AS created, {body} AS doc_text"
            " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id"
            + (" WHERE " + " AND ".join(message_where))
        )
        title_where.append("c.title IS NOT NULL")
        inner_titles = (
            f"SELECT {title_cols}, 0.0 AS rank, c.created_at AS created, c.title AS doc_text"
            " FROM conversations AS c WHERE " + " AND ".join(title_where)
        )
        prefix = ""
    else:
        prefix = (
            "WITH hits AS MATERIALIZED (SELECT rowid AS doc,"
            f" -bm25(search_fts, {SQLITE_WEIGHTS}) AS rank"
            " FROM search_fts WHERE search_fts MATCH :match)"
        )
        doc_text = f", {body} AS doc_text" if short else ""
        inner_messages = (
            f"SELECT {message_cols}, h.rank AS rank, m.created_at AS created{doc_text}"
            " FROM hits AS h JOIN messages AS m ON m.rowid = h.doc"
            " JOIN conversations AS c ON c.id = m.conversation_id"
            " WHERE " + " AND ".join(["h.doc > 0", *message_where])
        )
        title_text = ", c.title AS doc_text" if short else ""
        inner_titles = (
            f"SELECT {title_cols}, h.rank AS rank, c.created_at AS created{title_text}"
            " FROM hits AS h JOIN conversations AS c ON c.rowid = -h.doc"
            " WHERE " + " AND ".join(["h.doc < 0", *title_where])
        )
    arms = [inner_messages] if shape.roles else [inner_messages, inner_titles]
    columns = "cid, title, seq, role, message_id, parts, head_seq, branched, rank, created"
    if short:
        # Each candidate's text is made once (a materialized arm), not once per case variant
        # the filter tries.
        condition = _sqlite_short_filter(shape, "doc_text")
        names = [f"arm{i}" for i in range(len(arms))]
        ctes = ", ".join(f"{n} AS MATERIALIZED ({a})" for n, a in zip(names, arms, strict=True))
        prefix = f"{prefix}, {ctes}" if prefix else f"WITH {ctes}"
        arms = [f"SELECT * FROM {n} WHERE {condition}" for n in names]
    union = " UNION ALL ".join(f"SELECT {columns} FROM ({arm})" for arm in arms)
    return f"{prefix} SELECT {columns} FROM ({union}) {_ORDER}"


# -- PostgreSQL ---------------------------------------------------------------------------------


def _postgres_match(lead: list[str], whole: str) -> list[str]:
    """Conditions: ``lead`` (indexed columns) has the first term; ``whole`` has them all."""
    first = " OR ".join(f"{column} LIKE :lead" for column in lead)
    return [
        f"({first})",
        f"{whole} LIKE ALL(CAST(:rest AS text[]))",
        f"NOT ({whole} LIKE ANY(CAST(:excluded AS text[])))",
    ]


def _postgres(shape: Shape) -> str:
    query = "websearch_to_tsquery('simple'::regconfig, :ranked)"
    weights = "CAST(:weights AS float4[])"
    if shape.thinking:
        lead = ["m.search_text", "m.search_thinking"]
        whole = "(coalesce(m.search_text, '') || E'\\n' || coalesce(m.search_thinking, ''))"
    else:
        lead, whole = ["m.search_text"], "m.search_text"
    ranked = shape.mode is not Mode.SHORT
    message_rank = f"ts_rank_cd({weights}, m.search_vector, {query}, 1)" if ranked else "0.0"
    title_vector = "setweight(convstore_search_words(c.title), 'A')"
    title_rank = f"ts_rank_cd({weights}, {title_vector}, {query}, 1)" if ranked else "0.0"
    messages = (
        "SELECT m.conversation_id AS cid, c.title AS title, m.seq AS seq, m.role AS role,"
        " m.message_id AS message_id, CAST(m.parts AS text) AS parts, c.head_seq AS head_seq,"
        f" c.branched AS branched, CAST({message_rank} AS float8) AS rank,"
        " m.created_at AS created"
        " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id WHERE "
        + " AND ".join([*_postgres_match(lead, whole), *_filters(shape, _POSTGRES_ROLES)])
    )
    titles = (
        "SELECT c.id, c.title, NULL, NULL, NULL, NULL, c.head_seq, c.branched,"
        f" CAST({title_rank} AS float8), c.created_at FROM conversations AS c WHERE "
        + " AND ".join(
            [
                *_postgres_match(["c.search_title"], "c.search_title"),
                *_filters(shape, None),
            ]
        )
    )
    union = messages if shape.roles else f"{messages} UNION ALL {titles}"
    return f"SELECT * FROM ({union}) AS hits {_ORDER}"
