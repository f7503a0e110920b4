"""The deferred search index (revision 0011): built off the write path, exact at every search.

An append writes rows and nothing derived. What the index lacks is found cheaply and applied by
a catch-up (`catch_up`) in one short write transaction, run at search time when work is pending
(`PENDING`, checked on a reader first) and in the background when the writer is idle
(`convstore.store.search_index`). A search then reads an index that covers every row its
snapshot holds: a message committed before ``search()`` starts is found, and a popped,
truncated, deleted or erased one is not.

SQLite (this module; PostgreSQL's objects and statements are in
`convstore.db.postgres.search_index`):

- ``search_fts`` is an FTS5 table (``trigram``, ``case_sensitive 0``: case-folded substrings)
  holding its documents' text: a message's ``body`` and ``thinking``, a conversation's
  ``title``. A document's id carries its tenant: ``slot << 40 | rowid`` for a message, minus
  that for a title, where ``slot`` is the tenant's number in ``search_tenants`` (0: no tenant).
  So a tenant's documents are one id range, and a search restricts the index lookup itself to
  that range (`tenant_range`): other tenants' documents are never visited.
- ``search_state.mark`` is the highest message rowid indexed; ``search_map`` maps each indexed
  message rowid to its document id. Triggers on ``messages`` (``DELETE``, ``UPDATE OF parts``
  only; nothing on ``INSERT``) log the rowids of rows at or below the mark in ``search_log``;
  after every deleted row the mark is lowered to ``max(rowid)`` if it is above it (revision
  0014's `DELETE_TRIGGER`), because SQLite reuses the rowid of the newest row once it is
  deleted: a new row must land above the mark.
- A catch-up removes the logged documents, indexes logged rows that still exist (updates) and
  the rows above the mark, clears the log and moves the mark, in one transaction: index, map,
  log and mark commit or roll back together (so it may commit with ``synchronous=NORMAL``).
  Given a ``budget``, one catch-up indexes at most about that many characters of new rows (at
  least one row): a backlog is indexed in short transactions, each holding the write lock and
  growing the WAL by a bounded amount, with appends and checkpoints between them.
- Titles are few and written by conversation writes only: triggers on ``conversations`` keep
  them in the index at once.
- A ``VACUUM`` or a table-rebuilding migration may renumber rowids. ``search_state`` keeps the
  identity of the newest indexed message and conversation; when either is found under another
  rowid, the catch-up rebuilds the whole index.
- FTS5's ``automerge`` is off: merging segments (which can cost as much as indexing a thousand
  turns) runs in the background (`MERGE`), never inside an append or a search's catch-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, TextClause, text

from convstore.db import search_ddl
from convstore.db.postgres import search_index as search_index_postgres
from convstore.db.postgres.search_index import pg_attach, pg_catch_up, pg_detach
from convstore.db.search_ddl import SQLITE_BODY, SQLITE_THINKING
from convstore.db.statements import search as search_statements
from convstore.db.statements.search_sql import (
    ALL_DOCUMENTS,
    DOC_MASK,
    SLOT_BITS,
    slot_range,
    tenant_slot,
    title_doc,
)
from convstore.db.tx import Row, Tx

__all__ = [
    "CATCH_UP_BUDGET",
    "DOC_MASK",
    "MERGE",
    "PENDING",
    "SLOT_BITS",
    "SQLITE_CREATE",
    "SQLITE_DROP",
    "CaughtUp",
    "catch_up",
    "downgrade",
    "downgrade_delete_trigger",
    "pending",
    "pg_attach",
    "pg_catch_up",
    "pg_detach",
    "tenant_range",
    "title_doc",
    "upgrade",
    "upgrade_delete_trigger",
]


_TITLE_INSERT: Final = (
    "INSERT INTO search_fts (rowid, title) SELECT {doc}, new.title WHERE new.title IS NOT NULL;"
).format(doc=title_doc("new.tenant", "new.rowid"))
_TITLE_DELETE: Final = "DELETE FROM search_fts WHERE rowid = {doc};".format(
    doc=title_doc("old.tenant", "old.rowid")
)
_LOG: Final = (
    "INSERT INTO search_log (msg) SELECT old.rowid"
    " WHERE NOT EXISTS (SELECT 1 FROM search_log WHERE msg = old.rowid);"
)
_AT_OR_BELOW_MARK: Final = "WHEN old.rowid <= (SELECT mark FROM search_state)"
_DELETE_TRIGGER_0011: Final = (  # as revision 0011 created it, to the character
    f"""CREATE TRIGGER search_messages_delete AFTER DELETE ON messages {_AT_OR_BELOW_MARK} BEGIN
      {_LOG}
      UPDATE search_state SET mark = coalesce((SELECT max(rowid) FROM messages), 0)
      WHERE mark > coalesce((SELECT max(rowid) FROM messages), 0);
    END"""
)

SQLITE_CREATE: Final = (
    # AUTOINCREMENT: an erased tenant's slot is never given to another tenant.
    "CREATE TABLE search_tenants"
    " (slot INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL UNIQUE)",
    "CREATE TABLE search_state (id INTEGER PRIMARY KEY CHECK (id = 1), mark INTEGER NOT NULL,"
    " msg_rowid INTEGER, msg_cid TEXT, msg_seq INTEGER, conv_rowid INTEGER, conv_id TEXT)",
    "INSERT INTO search_state (id, mark) VALUES (1, 0)",
    "CREATE TABLE search_log (msg INTEGER PRIMARY KEY)",
    "CREATE TABLE search_map (msg INTEGER PRIMARY KEY, doc INTEGER NOT NULL)",
    """CREATE VIRTUAL TABLE search_fts USING fts5(
      title, body, thinking, tokenize='trigram case_sensitive 0', columnsize=0)""",
    "INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', 0)",
    _DELETE_TRIGGER_0011,
    f"""CREATE TRIGGER search_messages_update AFTER UPDATE OF parts ON messages
    {_AT_OR_BELOW_MARK} BEGIN
      {_LOG}
    END""",
    f"""CREATE TRIGGER search_titles_insert AFTER INSERT ON conversations BEGIN
      INSERT INTO search_tenants (tenant) SELECT new.tenant WHERE new.tenant IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM search_tenants WHERE tenant = new.tenant);
      {_TITLE_INSERT}
    END""",
    f"""CREATE TRIGGER search_titles_delete AFTER DELETE ON conversations
    WHEN old.title IS NOT NULL BEGIN
      {_TITLE_DELETE}
    END""",
    f"""CREATE TRIGGER search_titles_update AFTER UPDATE OF title ON conversations
    WHEN new.title IS NOT old.title BEGIN
      {_TITLE_DELETE}
      {_TITLE_INSERT}
    END""",
)
"""Revision 0011's objects (after 0006's triggers, view and table and 0008's index are gone);
`catch_up` then fills them. Revision 0014 replaces the delete trigger (`DELETE_TRIGGER`)."""

_LOWER_MARK: Final = (
    "UPDATE search_state SET mark = coalesce((SELECT max(rowid) FROM messages), 0)"
    " WHERE mark > coalesce((SELECT max(rowid) FROM messages), 0)"
)

DELETE_TRIGGER: Final = f"""CREATE TRIGGER search_messages_delete AFTER DELETE ON messages BEGIN
      INSERT INTO search_log (msg) SELECT old.rowid
      WHERE old.rowid <= (SELECT mark FROM search_state)
      AND NOT EXISTS (SELECT 1 FROM search_log WHERE msg = old.rowid);
      {_LOWER_MARK};
    END"""
"""Revision 0014's delete trigger: log the row if it is indexed, and after *every* deleted row
keep the mark at or below the newest row.

0011's trigger did both only for rows at or below the mark. A statement deleting rows on both
sides of the mark (a conversation whose newest turns were not indexed yet) lowered the mark
while the unindexed rows still held the top rowids, then deleted those without lowering it
again: the mark was left above the newest row, and the next rows, given the freed rowids, were
never indexed.
"""

_REPAIR: Final = (
    _LOWER_MARK,
    # Rows at or below the mark that the index lacks (what 0011's trigger lost): logged, so the
    # next catch-up indexes them as updated rows.
    "INSERT INTO search_log (msg) SELECT m.rowid FROM messages AS m"
    " WHERE m.rowid <= (SELECT mark FROM search_state)"
    " AND NOT EXISTS (SELECT 1 FROM search_map AS s WHERE s.msg = m.rowid)"
    " AND NOT EXISTS (SELECT 1 FROM search_log AS l WHERE l.msg = m.rowid)",
)


def upgrade_delete_trigger(conn: Connection) -> None:
    """Revision 0014 (SQLite): `DELETE_TRIGGER` in place of 0011's, and what it lost repaired."""
    conn.exec_driver_sql("DROP TRIGGER search_messages_delete")
    conn.exec_driver_sql(DELETE_TRIGGER)
    for sql in _REPAIR:
        conn.exec_driver_sql(sql)


def downgrade_delete_trigger(conn: Connection) -> None:
    """Back to 0011's delete trigger."""
    conn.exec_driver_sql("DROP TRIGGER search_messages_delete")
    conn.exec_driver_sql(_DELETE_TRIGGER_0011)


SQLITE_DROP: Final = (
    "DROP TRIGGER search_titles_update",
    "DROP TRIGGER search_titles_delete",
    "DROP TRIGGER search_titles_insert",
    "DROP TRIGGER search_messages_update",
    "DROP TRIGGER search_messages_delete",
    "DROP TABLE search_fts",
    "DROP TABLE search_map",
    "DROP TABLE search_log",
    "DROP TABLE search_state",
    "DROP TABLE search_tenants",
    "DELETE FROM sqlite_sequence WHERE name = 'search_tenants'",
)


def _q(sql: str) -> TextClause:
    return text(sql)


PENDING: Final = search_statements.PENDING_SQLITE
"""One row: whether the index lacks anything this snapshot holds (SQLite)."""

_STATE: Final = _q(
    "SELECT mark, msg_rowid, msg_cid, msg_seq, conv_rowid, conv_id FROM search_state"
)
_RENUMBERED: Final = _q(
    """SELECT coalesce((SELECT m.rowid FROM messages AS m
                        WHERE m.conversation_id = s.msg_cid AND m.seq = s.msg_seq), s.msg_rowid)
              IS NOT s.msg_rowid
          OR coalesce((SELECT c.rowid FROM conversations AS c WHERE c.id = s.conv_id),
                      s.conv_rowid) IS NOT s.conv_rowid
    FROM search_state AS s"""
)
_TOP: Final = _q("SELECT coalesce(max(rowid), 0) FROM messages")
_NEXT: Final = _q(
    "SELECT rowid, length(parts) FROM messages WHERE rowid > :mark AND rowid <= :until"
    " ORDER BY rowid LIMIT :rows"
)
_FORGET_DOCS: Final = _q(
    "DELETE FROM search_fts WHERE rowid IN"
    " (SELECT s.doc FROM search_log AS l CROSS JOIN search_map AS s ON s.msg = l.msg)"
)
_FORGET_MAP: Final = _q("DELETE FROM search_map WHERE msg IN (SELECT msg FROM search_log)")
_MAP: Final = (
    "INSERT INTO search_map (msg, doc) SELECT m.rowid, ({slot} << {bits}) | m.rowid FROM {rows}"
    " JOIN conversations AS c ON c.id = m.conversation_id WHERE {where}"
)
_MAP_LOGGED: Final = _q(
    _MAP.format(
        slot=tenant_slot("c.tenant"),
        bits=SLOT_BITS,
        rows="search_log AS l CROSS JOIN messages AS m ON m.rowid = l.msg",
        where="m.rowid <= :mark",
    )
)
_MAP_NEW: Final = _q(
    _MAP.format(
        slot=tenant_slot("c.tenant"),
        bits=SLOT_BITS,
        rows="messages AS m",
        where="m.rowid > :mark AND m.rowid <= :top",
    )
)
_INDEX: Final = (
    "INSERT INTO search_fts (rowid, body, thinking)"
    f" SELECT s.doc, {SQLITE_BODY('m.parts')}, {SQLITE_THINKING('m.parts')}"
    " FROM {rows} CROSS JOIN messages AS m ON m.rowid = s.msg WHERE {where}"
)
_INDEX_LOGGED: Final = _q(
    _INDEX.replace("{rows}", "search_log AS l CROSS JOIN search_map AS s ON s.msg = l.msg").replace(
        "{where}", "s.msg <= :mark"
    )
)
_INDEX_NEW: Final = _q(
    _INDEX.replace("{rows}", "search_map AS s").replace("{where}", "s.msg > :mark")
)
_CLEAR_LOG: Final = _q("DELETE FROM search_log")
_MOVE_MARK: Final = _q(
    """UPDATE search_state SET mark = :top,
      msg_rowid = (SELECT rowid FROM messages WHERE rowid = :top),
      msg_cid = (SELECT conversation_id FROM messages WHERE rowid = :top),
      msg_seq = (SELECT seq FROM messages WHERE rowid = :top),
      conv_rowid = (SELECT max(rowid) FROM conversations),
      conv_id = (SELECT id FROM conversations
                 WHERE rowid = (SELECT max(rowid) FROM conversations))"""
)
_RESET: Final = tuple(
    _q(sql)
    for sql in (
        "DELETE FROM search_fts",
        "DELETE FROM search_map",
        "DELETE FROM search_log",
        "UPDATE search_state SET mark = 0",
        "INSERT INTO search_tenants (tenant) SELECT DISTINCT c.tenant FROM conversations AS c"
        " WHERE c.tenant IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM search_tenants AS t WHERE t.tenant = c.tenant)",
        "INSERT INTO search_fts (rowid, title) SELECT "
        + title_doc("c.tenant", "c.rowid")
        + ", c.title FROM conversations AS c WHERE c.title IS NOT NULL",
    )
)
"""Empty the index and index every title again (the messages follow in the catch-up)."""

MERGE: Final = _q("INSERT INTO search_fts (search_fts, rank) VALUES ('merge', :pages)")
"""One bounded step of FTS5 segment merging (background work; see the module docstring)."""
FORGET_TENANT: Final = _q(
    "DELETE FROM search_tenants WHERE tenant = :tenant"
    " AND NOT EXISTS (SELECT 1 FROM conversations WHERE tenant = :tenant)"
)
"""After an erase and a catch-up: the tenant's name leaves the index's tables too."""
OPTIMIZE: Final = _q("INSERT INTO search_fts (search_fts) VALUES ('optimize')")
"""Merge every segment into one: afterwards no segment holds a deleted document's entries."""


SQLITE_INDEXED: Final = _q("SELECT rowid, title, body, thinking FROM search_fts ORDER BY rowid")
"""What the index holds, document by document."""
SQLITE_REBUILT: Final = _q(
    f"SELECT ({tenant_slot('c.tenant')} << {SLOT_BITS}) | m.rowid AS doc, NULL,"
    f" {SQLITE_BODY('m.parts')}, {SQLITE_THINKING('m.parts')}"
    " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id"
    f" UNION ALL SELECT {title_doc('c.tenant', 'c.rowid')}, c.title, NULL, NULL"
    " FROM conversations AS c WHERE c.title IS NOT NULL ORDER BY doc"
)
"""What a freshly rebuilt index would hold (`SQLITE_INDEXED` after a catch-up equals it)."""
INTEGRITY: Final = _q("INSERT INTO search_fts (search_fts) VALUES ('integrity-check')")
"""Raises unless FTS5's index agrees with the text it holds."""


def _one(tx: Tx, stmt: TextClause, params: dict[str, Any] | None = None) -> Row:
    return tx.fetch(stmt, params)[0]


def _run(tx: Tx, stmt: TextClause, params: dict[str, Any] | None = None) -> None:
    tx.execute(stmt, params)


def pending(tx: Tx, dialect: str = "sqlite") -> bool:
    """Whether the index lacks anything ``tx``'s snapshot holds."""
    return bool(_one(tx, PENDING if dialect == "sqlite" else search_index_postgres.PENDING)[0])


CATCH_UP_BUDGET: Final = 64 * 1024
"""Characters of new messages (their stored parts) one bounded catch-up indexes at most."""
_BUDGET_ROWS: Final = 512
"""Rows one bounded catch-up indexes at most, whatever their size."""


@dataclass(frozen=True, slots=True)
class CaughtUp:
    """What one catch-up did: rows indexed, and how far a caller must go to be done."""

    indexed: int
    until: int
    """The highest rowid the catch-up set out to reach (pass it to the next catch-up)."""
    done: bool
    """Every row up to `until` is indexed."""


def catch_up(
    tx: Tx, *, rebuild: bool = False, budget: int | None = None, until: int | None = None
) -> CaughtUp:
    """Bring the index up to what ``tx`` sees (in a write transaction), or part of the way.

    ``budget`` bounds the characters of new rows indexed in this transaction (at least one row
    is); ``until`` stops at that rowid (a caller's first catch-up reports the rowid to pass,
    so rows appended meanwhile cannot keep a caller looping). ``rebuild`` (or rowids found
    renumbered) empties the index first.
    """
    if rebuild or bool(_one(tx, _RENUMBERED)[0]):
        for stmt in _RESET:
            _run(tx, stmt)
        until = None  # a rowid read before the renumbering means nothing now
    mark = int(_one(tx, _STATE)[0])
    newest = int(_one(tx, _TOP)[0])
    until = newest if until is None else until
    # The mark never passes the newest row: SQLite gives a deleted newest row's rowid to the
    # next row, which must land above the mark to be indexed.
    top, done = max(mark, min(until, newest)), True
    if budget is not None:
        top, spent = mark, 0
        rows = tx.fetch(_NEXT, {"mark": mark, "until": until, "rows": _BUDGET_ROWS})
        for rowid, size in rows:
            if spent >= budget:
                done = False
                break
            top, spent = int(rowid), spent + int(size or 0)
        else:
            done = len(rows) < _BUDGET_ROWS
    params = {"mark": mark, "top": top}
    _run(tx, _FORGET_DOCS)
    _run(tx, _FORGET_MAP)
    _run(tx, _MAP_LOGGED, params)
    _run(tx, _MAP_NEW, params)
    _run(tx, _INDEX_LOGGED, params)
    _run(tx, _INDEX_NEW, params)
    _run(tx, _CLEAR_LOG)
    _run(tx, _MOVE_MARK, params)
    return CaughtUp(indexed=max(0, top - mark), until=until, done=done)


def tenant_range(tx: Tx, tenant: str | None) -> tuple[int, int] | None:
    """The message document ids of ``tenant`` (every tenant's for ``None``); ``None``: none.

    Title documents are the same range negated.
    """
    if tenant is None:
        return ALL_DOCUMENTS
    rows = tx.fetch(search_statements.TENANT_SLOT, {"tenant": tenant})
    if not rows:
        return None
    return slot_range(int(rows[0][0]))


class _ConnectionTx:
    """Just enough of `Tx` over a SQLAlchemy connection, for migrations."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def fetch(self, stmt: TextClause, params: dict[str, Any] | None = None) -> list[Row]:
        return [tuple(r) for r in self._conn.execute(stmt, params or {})]

    def execute(self, stmt: TextClause, params: dict[str, Any] | None = None) -> int:
        return int(self._conn.execute(stmt, params or {}).rowcount)


def upgrade(conn: Connection) -> None:
    """Revision 0011: the deferred index in place of 0006's triggers or generated columns."""
    if conn.dialect.name != "sqlite":
        search_index_postgres.upgrade(conn)
        return
    tx: Any = _ConnectionTx(conn)
    for sql in search_ddl.SQLITE_DROP:
        conn.exec_driver_sql(sql)
    search_ddl.drop_recency(conn)
    for sql in SQLITE_CREATE:
        conn.exec_driver_sql(sql)
    catch_up(tx, rebuild=True)


def downgrade(conn: Connection) -> None:
    """Back to revision 0010's index, built again from the rows."""
    if conn.dialect.name != "sqlite":
        search_index_postgres.downgrade(conn)
        return
    for sql in SQLITE_DROP:
        conn.exec_driver_sql(sql)
    search_ddl.create(conn)
    search_ddl.create_recency(conn)
