"""The full-text index's DDL of revisions 0006-0010, per database.

Revision 0011 replaced it with the deferred index of `convstore.db.search_index`; this is kept
for those revisions and their downgrades, and for the text functions both share.

Every write path (the lean and general appends, the one-statement PostgreSQL append,
completions, pop, truncate, fork, deletes, tenant erasure, pruning, and anything written later)
changes ``messages`` and ``conversations`` rows; the index follows those rows inside the same
statement, so no store code maintains it and no write can leave it behind.

- **SQLite**: ``search_fts`` is an FTS5 table with the ``trigram`` tokenizer (case-folded
  substrings: CJK without spaces, code identifiers, German compounds) over the external-content
  view ``search_documents``. A message is the document ``rowid`` of its row (columns ``body``
  and ``thinking``), a conversation's title the document ``-rowid`` of its row (column
  ``title``). Triggers on both tables insert and delete index entries from the same values; a
  foreign-key cascade fires them too. An explicit ``VACUUM`` may renumber rowids (SQLite
  documents this for tables without an ``INTEGER PRIMARY KEY``): rebuild the index afterwards
  (``delete-all``, then `SQLITE_FILL`).
- **PostgreSQL**: stored generated columns (``messages.search_text``, ``search_thinking``,
  ``search_vector``; ``conversations.search_title``), lower-cased text with ``pg_trgm`` GIN
  indexes for matching and a ``simple``-configuration ``tsvector`` for ranking. The generated
  columns are outside the models (`include_name` leaves them out of Alembic's comparison);
  `convstore.db.postgres._partitioning` restores them on the tables it rebuilds.

What a message's text is (the same on both databases, and `convstore.store.search` reads it
the same way for snippets): its parts in order, one line each: text; a tool call's name and
arguments (compact JSON); a tool result's JSON value (a string as itself), error message, or its
content's text and file names; a file's name. Thinking text is its own column, searched only
on request. Bytes are never indexed.

Revision 0006 creates these objects; changing them needs a new revision, not an edit here.
Revision 0010 replaces PostgreSQL's two text functions by PL/pgSQL ones of the same body and
result (`POSTGRES_PLPGSQL`): a ``LANGUAGE sql`` function that cannot be inlined is planned again
in every statement that calls it, and an append inserts its rows one statement each, so the
generated columns planned them again for every message; PL/pgSQL keeps its plans for the
session. No stored value changes.
Revision 0008 adds ``ix_search_messages_created`` (`RECENCY_CREATE`, both databases): the
newest messages first, so a query of terms shorter than three characters (every hit ranked
equal, newest first) reads messages newest first and stops when its page is full.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Connection

__all__ = [
    "POSTGRES_CREATE",
    "POSTGRES_DROP",
    "POSTGRES_PLPGSQL",
    "POSTGRES_SQL",
    "RECENCY_CREATE",
    "RECENCY_DROP",
    "SQLITE_CREATE",
    "SQLITE_DROP",
    "create",
    "create_recency",
    "drop",
    "drop_recency",
    "include_name",
    "restore_message_columns",
    "use_plpgsql",
    "use_sql",
]

SEARCH_PREFIXES: Final = ("search_", "ix_search_")


def include_name(name: str | None, type_: str, _parents: Any) -> bool:
    """Alembic's ``include_name``: the search objects are not the models' to compare.

    Left out by name (`SEARCH_PREFIXES`), so the tables made at run time are too: SQLite's
    ``search_fts_<slot>``, one per tenant, and FTS5's shadow tables of each
    (``search_fts_<slot>_data``, ``_idx``, ``_content``, ``_config``), which no model lists.
    """
    if name is None or type_ not in ("table", "column", "index"):
        return True
    return not name.startswith(SEARCH_PREFIXES)


# -- SQLite -------------------------------------------------------------------------------------


def _sqlite_body(parts: str) -> str:
    """The SQL text of a message's searchable body, from its ``parts`` JSON."""
    return f"""(SELECT group_concat(t, char(10)) FROM (
      SELECT CASE json_extract(e.value, '$.kind')
        WHEN 'text' THEN json_extract(e.value, '$.text')
        WHEN 'file' THEN json_extract(e.value, '$.filename')
        WHEN 'tool_call' THEN json_extract(e.value, '$.name') || ' '
          || coalesce(json_extract(e.value, '$.arguments'), '{{}}')
        WHEN 'tool_result' THEN CASE json_extract(e.value, '$.output.kind')
          WHEN 'json' THEN CASE json_type(e.value, '$.output.value')
            WHEN 'true' THEN 'true' WHEN 'false' THEN 'false'
            ELSE json_extract(e.value, '$.output.value') END
          WHEN 'error' THEN json_extract(e.value, '$.output.message')
          WHEN 'content' THEN (SELECT group_concat(
              coalesce(json_extract(c.value, '$.text'), json_extract(c.value, '$.filename')),
              char(10)) FROM json_each(e.value, '$.output.parts') AS c)
          END
        END AS t
      FROM json_each({parts}) AS e ORDER BY e.key))"""


def _sqlite_thinking(parts: str) -> str:
    return f"""(SELECT group_concat(json_extract(e.value, '$.text'), char(10))
      FROM json_each({parts}) AS e WHERE json_extract(e.value, '$.kind') = 'thinking')"""


SQLITE_BODY: Final = _sqlite_body
SQLITE_THINKING: Final = _sqlite_thinking

_SQLITE_VALUES_NEW: Final = f"new.rowid, NULL, {_sqlite_body('new.parts')}, " + _sqlite_thinking(
    "new.parts"
)
_SQLITE_VALUES_OLD: Final = f"old.rowid, NULL, {_sqlite_body('old.parts')}, " + _sqlite_thinking(
    "old.parts"
)

SQLITE_FILL: Final = (
    "INSERT INTO search_fts (rowid, title, body, thinking)"
    " SELECT doc, title, body, thinking FROM search_documents"
)
"""Index every stored row (after ``INSERT INTO search_fts (search_fts) VALUES ('delete-all')``,
this rebuilds the index)."""

SQLITE_CREATE: Final = (
    f"""CREATE VIEW search_documents (doc, title, body, thinking) AS
      SELECT m.rowid, NULL, {_sqlite_body("m.parts")}, {_sqlite_thinking("m.parts")}
      FROM messages AS m
      UNION ALL
      SELECT -c.rowid, c.title, NULL, NULL FROM conversations AS c WHERE c.title IS NOT NULL""",
    """CREATE VIRTUAL TABLE search_fts USING fts5(
      title, body, thinking,
      content='search_documents', content_rowid='doc',
      tokenize='trigram case_sensitive 0')""",
    f"""CREATE TRIGGER search_messages_insert AFTER INSERT ON messages BEGIN
      INSERT INTO search_fts (rowid, title, body, thinking) VALUES ({_SQLITE_VALUES_NEW});
    END""",
    f"""CREATE TRIGGER search_messages_delete AFTER DELETE ON messages BEGIN
      INSERT INTO search_fts (search_fts, rowid, title, body, thinking)
      VALUES ('delete', {_SQLITE_VALUES_OLD});
    END""",
    f"""CREATE TRIGGER search_messages_update AFTER UPDATE OF parts ON messages BEGIN
      INSERT INTO search_fts (search_fts, rowid, title, body, thinking)
      VALUES ('delete', {_SQLITE_VALUES_OLD});
      INSERT INTO search_fts (rowid, title, body, thinking) VALUES ({_SQLITE_VALUES_NEW});
    END""",
    """CREATE TRIGGER search_titles_insert AFTER INSERT ON conversations
    WHEN new.title IS NOT NULL BEGIN
      INSERT INTO search_fts (rowid, title) VALUES (-new.rowid, new.title);
    END""",
    """CREATE TRIGGER search_titles_delete AFTER DELETE ON conversations
    WHEN old.title IS NOT NULL BEGIN
      INSERT INTO search_fts (search_fts, rowid, title) VALUES ('delete', -old.rowid, old.title);
    END""",
    """CREATE TRIGGER search_titles_update AFTER UPDATE OF title ON conversations
    WHEN new.title IS NOT old.title BEGIN
      INSERT INTO search_fts (search_fts, rowid, title)
      SELECT 'delete', -old.rowid, old.title WHERE old.title IS NOT NULL;
      INSERT INTO search_fts (rowid, title) SELECT -new.rowid, new.title
      WHERE new.title IS NOT NULL;
    END""",
    # Builds the index for every row already there (FTS5's own 'rebuild' cannot read a view that
    # calls json_each: SQLite refuses a table-valued function inside the index's update).
    SQLITE_FILL,
)

SQLITE_DROP: Final = (
    "DROP TRIGGER search_titles_update",
    "DROP TRIGGER search_titles_delete",
    "DROP TRIGGER search_titles_insert",
    "DROP TRIGGER search_messages_update",
    "DROP TRIGGER search_messages_delete",
    "DROP TRIGGER search_messages_insert",
    "DROP TABLE search_fts",
    "DROP VIEW search_documents",
)

# -- PostgreSQL ---------------------------------------------------------------------------------

# Stored JSON may hold NUL as the escape \u0000, which PostgreSQL refuses to turn into text: it is
# dropped first (an escaped backslash before "u0000" is left alone).
_PG_PARTS: Final = r"""(CASE WHEN strpos(parts::text, '\u0000') > 0
    THEN regexp_replace(parts::text, '(?<!\\)((?:\\\\)*)\\u0000', '\1', 'g')::json
    ELSE parts END)"""

_PG_FUNCTIONS: Final = (
    r"""CREATE FUNCTION convstore_search_body(parts json) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg(t, E'\n' ORDER BY n) FROM (
      SELECT n, CASE e->>'kind'
        WHEN 'text' THEN e->>'text'
        WHEN 'file' THEN e->>'filename'
        WHEN 'tool_call' THEN (e->>'name') || ' ' || coalesce((e->'arguments')::text, '{}')
        WHEN 'tool_result' THEN CASE e->'output'->>'kind'
          WHEN 'json' THEN e->'output'->>'value'
          WHEN 'error' THEN e->'output'->>'message'
          WHEN 'content' THEN (SELECT string_agg(coalesce(c->>'text', c->>'filename'), E'\n'
              ORDER BY k) FROM json_array_elements(e->'output'->'parts') WITH ORDINALITY AS x(c, k))
          END
        END AS t
      FROM json_array_elements("""
    + _PG_PARTS
    + r""") WITH ORDINALITY AS p(e, n)) AS s
    $$""",
    r"""CREATE FUNCTION convstore_search_thinking(parts json) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg(e->>'text', E'\n' ORDER BY n)
    FROM json_array_elements("""
    + _PG_PARTS
    + r""") WITH ORDINALITY AS p(e, n) WHERE e->>'kind' = 'thinking'
    $$""",
    # Ranking words: every CJK character its own word (the `simple` parser would make a run of
    # them one word), the same split `convstore.store.search` gives the query's terms.
    r"""CREATE FUNCTION convstore_search_words(body text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple'::regconfig, regexp_replace(coalesce(body, ''),
      '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af])', ' \1 ', 'g'))
    $$""",
)

_PG_MESSAGE_COLUMNS: Final = (
    "ALTER TABLE messages"
    " ADD COLUMN search_text text GENERATED ALWAYS AS (lower(convstore_search_body(parts))) STORED,"
    " ADD COLUMN search_thinking text"
    " GENERATED ALWAYS AS (lower(convstore_search_thinking(parts))) STORED,"
    " ADD COLUMN search_vector tsvector"
    " GENERATED ALWAYS AS (setweight(convstore_search_words(convstore_search_body(parts)), 'B')"
    " || setweight(convstore_search_words(convstore_search_thinking(parts)), 'D')) STORED",
    "CREATE INDEX ix_search_messages_text ON messages USING gin (search_text gin_trgm_ops)",
    "CREATE INDEX ix_search_messages_thinking ON messages USING gin"
    " (search_thinking gin_trgm_ops) WHERE search_thinking IS NOT NULL",
)

POSTGRES_CREATE: Final = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    *_PG_FUNCTIONS,
    *_PG_MESSAGE_COLUMNS,
    "ALTER TABLE conversations"
    " ADD COLUMN search_title text GENERATED ALWAYS AS (lower(title)) STORED",
    "CREATE INDEX ix_search_conversations_title ON conversations USING gin"
    " (search_title gin_trgm_ops)",
)

POSTGRES_DROP: Final = (
    "DROP INDEX ix_search_conversations_title",
    "ALTER TABLE conversations DROP COLUMN search_title",
    "DROP INDEX ix_search_messages_thinking",
    "DROP INDEX ix_search_messages_text",
    "ALTER TABLE messages DROP COLUMN search_vector, DROP COLUMN search_thinking,"
    " DROP COLUMN search_text",
    "DROP FUNCTION convstore_search_words(text)",
    "DROP FUNCTION convstore_search_thinking(json)",
    "DROP FUNCTION convstore_search_body(json)",
    # pg_trgm stays: other objects may use it, and dropping it needs more rights than keeping it.
)


RECENCY_CREATE: Final = "CREATE INDEX ix_search_messages_created ON messages (created_at)"
"""Revision 0008, both databases (not a model index: the search objects are the database's)."""
RECENCY_DROP: Final = "DROP INDEX ix_search_messages_created"


def _replace(function: str, language: str) -> str:
    """``function`` (one of 0006's text functions) as ``CREATE OR REPLACE`` in ``language``."""
    head, body, _ = function.split("$$")
    head = head.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    if language == "sql":
        return f"{head}$${body}$$"
    head = head.replace("LANGUAGE sql", "LANGUAGE plpgsql")
    return f"{head}$$ BEGIN RETURN ({body.strip()}); END $$"


POSTGRES_PLPGSQL: Final = tuple(_replace(f, "plpgsql") for f in _PG_FUNCTIONS[:2])
"""Revision 0010: the body and thinking functions in PL/pgSQL (same results, plans kept)."""
POSTGRES_SQL: Final = tuple(_replace(f, "sql") for f in _PG_FUNCTIONS[:2])
"""Revision 0010's downgrade: 0006's SQL functions again."""


def create(conn: Connection) -> None:
    """Create the index for ``conn``'s database and fill it from the rows already there."""
    for statement in SQLITE_CREATE if conn.dialect.name == "sqlite" else POSTGRES_CREATE:
        conn.exec_driver_sql(statement)


def drop(conn: Connection) -> None:
    """Drop every search object `create` made."""
    for statement in SQLITE_DROP if conn.dialect.name == "sqlite" else POSTGRES_DROP:
        conn.exec_driver_sql(statement)


def use_plpgsql(conn: Connection) -> None:
    """Revision 0010 (PostgreSQL; nothing on SQLite)."""
    if conn.dialect.name == "postgresql":
        for statement in POSTGRES_PLPGSQL:
            conn.exec_driver_sql(statement)


def use_sql(conn: Connection) -> None:
    """Revision 0010's downgrade (PostgreSQL; nothing on SQLite)."""
    if conn.dialect.name == "postgresql":
        for statement in POSTGRES_SQL:
            conn.exec_driver_sql(statement)


def create_recency(conn: Connection) -> None:
    """Revision 0008's index."""
    conn.exec_driver_sql(RECENCY_CREATE)


def drop_recency(conn: Connection) -> None:
    """Drop revision 0008's index."""
    conn.exec_driver_sql(RECENCY_DROP)


def restore_message_columns(conn: Connection) -> None:
    """Add the search columns and indexes of every revision to a rebuilt ``messages``."""
    for statement in (*_PG_MESSAGE_COLUMNS, RECENCY_CREATE):
        conn.exec_driver_sql(statement)
