"""The deferred search index on PostgreSQL (revision 0011; `convstore.db.search_index`).

- ``search_docs`` holds each indexed message's search columns (lower-cased body and thinking,
  the ranking ``tsvector``) with its tenant, role and time; multicolumn GIN indexes over
  ``(tenant, text gin_trgm_ops)`` (``btree_gin``) make a tenant's search one lookup of its own
  entries, and ``(tenant, created_at)`` serves newest-first scans. A foreign key to
  ``messages`` ``ON DELETE CASCADE`` removes a document in the statement that deletes its
  message: deletes are exact at commit, whoever deletes.
- ``search_queue`` holds ranges of message keys waiting to be indexed: ``(conversation_id,
  seq, last_seq)``, ``last_seq`` NULL for one message. Since revision 0017 the writes that
  insert messages queue them in the same transaction (`convstore.db.search_queue`; the
  one-statement append in its own statement, `convstore.db.postgres.append`): one row per
  append and no trigger, where 0011's statement-level trigger with a transition table cost
  each append about 3% more server instructions than no search at all. A row trigger still
  queues every message whose ``parts`` change. `CATCH_UP` empties the queue into
  ``search_docs`` in one statement.
- ``search_titles`` (lower-cased titles, GIN over tenant and title) is kept by row triggers on
  ``conversations`` that fire only when a title is set or changed: an append's update of the
  conversation row touches no search object.
- A search of every tenant reads newest first through ``(created_at)`` indexes; since revision
  0015 they are partial, on `UNSCOPED` (true of every row), which only that search's statements
  state: a tenant's search cannot use them and reads through the tenant-leading indexes alone.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from convstore.db import search_ddl
from convstore.db.statements.search_sql import UNSCOPED
from convstore.db.tx import Tx

__all__ = [
    "CATCH_UP",
    "CREATED_SCOPED",
    "CREATED_UNSCOPED",
    "INDEXED",
    "PENDING",
    "REBUILT",
    "TITLES_INDEXED",
    "TITLES_REBUILT",
    "downgrade",
    "partial_created",
    "pg_attach",
    "pg_catch_up",
    "pg_detach",
    "queue_keys",
    "queue_ranges",
    "upgrade",
]

_PG_VECTOR: Final = (
    "setweight(convstore_search_words(b.body), 'B')"
    " || setweight(convstore_search_words(b.thinking), 'D')"
)

_ENQUEUE_FUNCTION: Final = (
    "CREATE FUNCTION convstore_search_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$"
    """
    BEGIN
      INSERT INTO search_queue (conversation_id, seq) SELECT conversation_id, seq FROM queued;
      RETURN NULL;
    END $$"""
)
"""Revisions 0011 to 0016: the insert trigger's function."""

POSTGRES_CREATE: Final = (
    # Multicolumn GIN over (tenant, text): a tenant's search looks up that tenant's entries only.
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    """CREATE TABLE search_docs (
      conversation_id varchar(64) NOT NULL, seq integer NOT NULL, tenant varchar(255),
      role varchar(16) NOT NULL, created_at timestamptz NOT NULL, body text, thinking text,
      vector tsvector NOT NULL,
      CONSTRAINT pk_search_docs PRIMARY KEY (conversation_id, seq))""",
    "CREATE INDEX ix_search_docs_body ON search_docs USING gin (tenant, body gin_trgm_ops)",
    "CREATE INDEX ix_search_docs_thinking ON search_docs USING gin (tenant, thinking gin_trgm_ops)"
    " WHERE thinking IS NOT NULL",
    "CREATE INDEX ix_search_docs_created ON search_docs (created_at)",
    "CREATE INDEX ix_search_docs_tenant_created ON search_docs (tenant, created_at)",
    """CREATE TABLE search_titles (
      conversation_id varchar(64) NOT NULL, tenant varchar(255), created_at timestamptz NOT NULL,
      title text NOT NULL,
      CONSTRAINT pk_search_titles PRIMARY KEY (conversation_id),
      CONSTRAINT fk_search_titles_conversations FOREIGN KEY (conversation_id)
        REFERENCES conversations (id) ON DELETE CASCADE)""",
    "CREATE INDEX ix_search_titles_title ON search_titles USING gin (tenant, title gin_trgm_ops)",
    "CREATE INDEX ix_search_titles_created ON search_titles (created_at)",
    "CREATE TABLE search_queue (conversation_id varchar(64) NOT NULL, seq integer NOT NULL)",
    _ENQUEUE_FUNCTION,
    """CREATE FUNCTION convstore_search_requeue() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO search_queue (conversation_id, seq) VALUES (new.conversation_id, new.seq);
      RETURN NULL;
    END $$""",
    """CREATE FUNCTION convstore_search_title() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF new.title IS NULL THEN
        DELETE FROM search_titles WHERE conversation_id = new.id;
      ELSE
        INSERT INTO search_titles (conversation_id, tenant, created_at, title)
        VALUES (new.id, new.tenant, new.created_at, lower(new.title))
        ON CONFLICT (conversation_id) DO UPDATE SET title = excluded.title;
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER search_titles_insert AFTER INSERT ON conversations FOR EACH ROW"
    " WHEN (new.title IS NOT NULL) EXECUTE FUNCTION convstore_search_title()",
    "CREATE TRIGGER search_titles_update AFTER UPDATE OF title ON conversations FOR EACH ROW"
    " WHEN (old.title IS DISTINCT FROM new.title) EXECUTE FUNCTION convstore_search_title()",
    "INSERT INTO search_titles (conversation_id, tenant, created_at, title)"
    " SELECT id, tenant, created_at, lower(title) FROM conversations WHERE title IS NOT NULL",
)
"""Revision 0011's objects on PostgreSQL (after 0006's generated columns, their indexes and
0008's index are gone); `POSTGRES_ATTACH` ties them to ``messages``."""

_FOREIGN_KEY: Final = (
    # A deleted message's document goes in the same statement: deletes are exact at commit.
    "ALTER TABLE search_docs ADD CONSTRAINT fk_search_docs_messages FOREIGN KEY"
    " (conversation_id, seq) REFERENCES messages (conversation_id, seq) ON DELETE CASCADE"
)
_REQUEUE_TRIGGER: Final = (
    "CREATE TRIGGER search_messages_requeue AFTER UPDATE OF parts ON messages FOR EACH ROW"
    " EXECUTE FUNCTION convstore_search_requeue()"
)
_INSERT_TRIGGER: Final = (
    # Revisions 0011 to 0016: one statement-level trigger per INSERT statement queued the new
    # keys from a transition table.
    "CREATE TRIGGER search_messages_queue AFTER INSERT ON messages REFERENCING NEW TABLE AS queued"
    " FOR EACH STATEMENT EXECUTE FUNCTION convstore_search_enqueue()"
)
POSTGRES_ATTACH_0011: Final = (_FOREIGN_KEY, _INSERT_TRIGGER, _REQUEUE_TRIGGER)
"""What tied the index to ``messages`` from revision 0011 to 0016."""

POSTGRES_ATTACH: Final = (_FOREIGN_KEY, _REQUEUE_TRIGGER)
"""What ties the index to ``messages`` (`convstore.db.postgres._partitioning` detaches it before
rebuilding the table and attaches it to the new one)."""

POSTGRES_DETACH: Final = (
    "DROP TRIGGER IF EXISTS search_messages_requeue ON messages",
    "DROP TRIGGER IF EXISTS search_messages_queue ON messages",
    "ALTER TABLE search_docs DROP CONSTRAINT IF EXISTS fk_search_docs_messages",
)

CREATED_UNSCOPED: Final = (
    "DROP INDEX ix_search_docs_created",
    f"CREATE INDEX ix_search_docs_created ON search_docs (created_at) WHERE {UNSCOPED}",
    "DROP INDEX ix_search_titles_created",
    f"CREATE INDEX ix_search_titles_created ON search_titles (created_at) WHERE {UNSCOPED}",
)
"""Revision 0015: the newest-first indexes of a search of every tenant, partial on `UNSCOPED`.

A tenant's search, which never states it, cannot use them. Before, with a tenant's candidates
over the ranking cap and another tenant's many documents of the term, the planner walked
``ix_search_docs_created`` newest first, filtering the tenant: a tenant with 2,000 messages
read 8,020 rows beside another's 6,000 (12,020 beside 10,000), 2,020 alone."""
CREATED_SCOPED: Final = (
    "DROP INDEX ix_search_docs_created",
    "CREATE INDEX ix_search_docs_created ON search_docs (created_at)",
    "DROP INDEX ix_search_titles_created",
    "CREATE INDEX ix_search_titles_created ON search_titles (created_at)",
)
"""Revision 0015's downgrade: 0011's indexes again."""

POSTGRES_DROP: Final = (
    *POSTGRES_DETACH,
    "DROP TRIGGER search_titles_update ON conversations",
    "DROP TRIGGER search_titles_insert ON conversations",
    "DROP FUNCTION convstore_search_title()",
    "DROP FUNCTION convstore_search_requeue()",
    "DROP FUNCTION convstore_search_enqueue()",
    "DROP TABLE search_queue",
    "DROP TABLE search_titles",
    "DROP TABLE search_docs",
    # btree_gin stays, as pg_trgm does: other objects may use it.
)

PENDING: Final = text("SELECT EXISTS (SELECT 1 FROM search_queue)")
"""Whether any committed message waits to be indexed (PostgreSQL)."""

_INDEX_QUEUED: Final = f"""
    INSERT INTO search_docs (conversation_id, seq, tenant, role, created_at, body, thinking,
                             vector)
    SELECT m.conversation_id, m.seq, c.tenant, m.role, m.created_at, lower(b.body),
           lower(b.thinking), {_PG_VECTOR}
    FROM d JOIN messages AS m ON m.conversation_id = d.conversation_id AND m.seq = d.seq
    JOIN conversations AS c ON c.id = m.conversation_id
    CROSS JOIN LATERAL (SELECT convstore_search_body(m.parts) AS body,
                               convstore_search_thinking(m.parts) AS thinking) AS b
    FOR KEY SHARE OF m
    ON CONFLICT (conversation_id, seq) DO UPDATE
    SET body = excluded.body, thinking = excluded.thinking, vector = excluded.vector"""
"""Index the messages of ``d`` (``conversation_id``, ``seq``), each once (a message deleted
meanwhile is skipped: its row lock fails)."""

CATCH_UP: Final = text(
    """WITH q AS (DELETE FROM search_queue RETURNING conversation_id, seq, last_seq),
    d AS (SELECT DISTINCT q.conversation_id, s.seq
          FROM q CROSS JOIN LATERAL generate_series(q.seq, coalesce(q.last_seq, q.seq)) AS s(seq))
    """
    + _INDEX_QUEUED
)
"""Index every queued message."""

_CATCH_UP_0011: Final = text(
    """WITH q AS (DELETE FROM search_queue RETURNING conversation_id, seq),
    d AS (SELECT DISTINCT conversation_id, seq FROM q)
    """
    + _INDEX_QUEUED
)
"""`CATCH_UP` from revision 0011 to 0016 (one key a row)."""


_NO_SYNC: Final = text("SET LOCAL synchronous_commit = off")
"""The catch-up's commit need not wait for the WAL flush: queue and index roll back together."""

INDEXED: Final = text(
    "SELECT conversation_id, seq, tenant, role, created_at, body, thinking, vector::text"
    " FROM search_docs ORDER BY conversation_id, seq"
)
REBUILT: Final = text(
    "SELECT m.conversation_id, m.seq, c.tenant, m.role, m.created_at, lower(b.body),"
    f" lower(b.thinking), ({_PG_VECTOR})::text"
    " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id"
    " CROSS JOIN LATERAL (SELECT convstore_search_body(m.parts) AS body,"
    " convstore_search_thinking(m.parts) AS thinking) AS b ORDER BY m.conversation_id, m.seq"
)
TITLES_INDEXED: Final = text(
    "SELECT conversation_id, tenant, created_at, title FROM search_titles ORDER BY 1"
)
TITLES_REBUILT: Final = text(
    "SELECT id, tenant, created_at, lower(title) FROM conversations WHERE title IS NOT NULL"
    " ORDER BY 1"
)


def pg_catch_up(tx: Tx) -> int:
    """Index every queued message (PostgreSQL, in a write transaction); rows indexed."""
    tx.execute(_NO_SYNC)
    return tx.execute(CATCH_UP)


def pg_attach(conn: Connection) -> None:
    """Tie the index to (a rebuilt) ``messages``."""
    for sql in POSTGRES_ATTACH:
        conn.exec_driver_sql(sql)


def pg_detach(conn: Connection) -> None:
    """Untie the index from ``messages`` (before the table is rebuilt)."""
    for sql in POSTGRES_DETACH:
        conn.exec_driver_sql(sql)


def partial_created(conn: Connection, *, partial: bool) -> None:
    """Revision 0015 (``partial``) or its downgrade: the ``(created_at)`` indexes' predicate."""
    for sql in CREATED_UNSCOPED if partial else CREATED_SCOPED:
        conn.exec_driver_sql(sql)


def upgrade(conn: Connection) -> None:
    """Revision 0011 on PostgreSQL: the deferred index in place of 0006's generated columns."""
    # 0006's generated columns and indexes go; its text functions stay (the catch-up uses them).
    for sql in search_ddl.POSTGRES_DROP[:5]:
        conn.exec_driver_sql(sql)
    search_ddl.drop_recency(conn)
    for sql in POSTGRES_CREATE:
        conn.exec_driver_sql(sql)
    for sql in POSTGRES_ATTACH_0011:
        conn.exec_driver_sql(sql)
    conn.exec_driver_sql("INSERT INTO search_queue SELECT conversation_id, seq FROM messages")
    conn.execute(_CATCH_UP_0011)


def downgrade(conn: Connection) -> None:
    """Back to revision 0010's generated columns, computed from the rows."""
    for sql in POSTGRES_DROP:
        conn.exec_driver_sql(sql)
    search_ddl.restore_message_columns(conn)
    for sql in search_ddl.POSTGRES_CREATE[-2:]:
        conn.exec_driver_sql(sql)


def queue_ranges(conn: Connection) -> None:
    """Revision 0017 on PostgreSQL: the writes queue ranges; the insert trigger goes."""
    conn.exec_driver_sql("ALTER TABLE search_queue ADD COLUMN last_seq integer")
    conn.exec_driver_sql("DROP TRIGGER search_messages_queue ON messages")
    conn.exec_driver_sql("DROP FUNCTION convstore_search_enqueue()")


def queue_keys(conn: Connection) -> None:
    """Revision 0017's downgrade: 0011's trigger again, and queued ranges as one key a row."""
    conn.exec_driver_sql(_ENQUEUE_FUNCTION)
    conn.exec_driver_sql(_INSERT_TRIGGER)
    conn.exec_driver_sql(
        "INSERT INTO search_queue (conversation_id, seq)"
        " SELECT conversation_id, generate_series(seq + 1, last_seq) FROM search_queue"
        " WHERE last_seq > seq"
    )
    conn.exec_driver_sql("ALTER TABLE search_queue DROP COLUMN last_seq")
