"""The deferred search index (revision 0011): built off the write path, exact at every search.

An append writes rows and nothing derived. What the index lacks is found cheaply and applied by
a catch-up (`catch_up`) in one short write transaction, run at search time when work is pending
(`PENDING`, checked on a reader first) and in the background when the writer is idle
(`convstore.store.search_index`). A search then reads an index that covers every row its
snapshot holds: a message committed before ``search()`` starts is found, and a popped,
truncated, deleted or erased one is not.

SQLite (this module; PostgreSQL's objects and statements are in
`convstore.db.postgres.search_index`):

- Each tenant's documents are an FTS5 table of their own, ``search_fts_<slot>``
  (`fts_table`; ``trigram``, ``case_sensitive 0``: case-folded substrings; revision 0016),
  where ``slot`` is the tenant's number in ``search_tenants`` (0: no tenant), so a tenant's
  search reads an index whose contents, segments, doclists and statistics no other tenant's
  writes touch (issue 32, finding 7: with one table for all, a term's doclist was every
  tenant's). A table holds its documents' text: a message's ``body`` and ``thinking``, a
  conversation's ``title``; a document's id is ``slot << 40 | rowid`` for a message, minus
  that for a title. ``search_tables`` lists the tables that exist (and which were written
  since merging left them whole); the catch-up makes a tenant's table, in its transaction,
  when it first indexes one of its documents. A table's name is made of the slot, an integer,
  never of a tenant's text.
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
- Titles are written by conversation writes only: triggers on ``conversations`` log the
  document id of each title written, renamed or deleted in ``search_title_log`` (a trigger
  cannot name a table chosen at run time), and every catch-up indexes all logged titles
  again from their rows (they are few). A search sees the log empty (a pending check comes
  first) or skips the titles logged since it caught up.
- A ``VACUUM`` or a table-rebuilding migration may renumber rowids. ``search_state`` keeps the
  identity of the newest indexed message and conversation; when either is found under another
  rowid, the catch-up rebuilds the whole index (every tenant table dropped and made again).
- FTS5's ``automerge`` is off: merging segments (which can cost as much as indexing a thousand
  turns) runs in the background (`merge_step`: one bounded step on one table written since
  merging left it whole), never inside an append or a search's catch-up.
- An erased tenant's table is dropped (`forget_tenant`): no other table ever held its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from sqlalchemy import Connection, TextClause, text

from convstore.db import search_ddl
from convstore.db.postgres import search_index as search_index_postgres
from convstore.db.postgres.search_index import pg_attach, pg_catch_up, pg_detach
from convstore.db.search_ddl import SQLITE_BODY, SQLITE_THINKING
from convstore.db.statements import search as search_statements
from convstore.db.statements.search_sql import (
    DOC_MASK,
    SLOT_BITS,
    fts_table,
    slot_range,
    tenant_slot,
    title_doc,
)
from convstore.db.tx import Row, Tx

__all__ = [
    "CATCH_UP_BUDGET",
    "DOC_MASK",
    "FORGET_TENANT",
    "PENDING",
    "SLOT_BITS",
    "SQLITE_CREATE",
    "SQLITE_DROP",
    "SQLITE_REBUILT",
    "TENANT_TABLES_CREATE",
    "CaughtUp",
    "catch_up",
    "downgrade",
    "downgrade_delete_trigger",
    "downgrade_tenant_tables",
    "forget_tenant",
    "fts_table",
    "indexed",
    "integrity",
    "merge_step",
    "optimize",
    "pending",
    "pg_attach",
    "pg_catch_up",
    "pg_detach",
    "tables",
    "tenant_slots",
    "title_doc",
    "upgrade",
    "upgrade_delete_trigger",
    "upgrade_tenant_tables",
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


_RESET_0011: Final = (
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
_FILL_0011: Final = (
    *_RESET_0011,
    "INSERT INTO search_map (msg, doc) SELECT m.rowid, "
    f"({tenant_slot('c.tenant')} << {SLOT_BITS}) | m.rowid"
    " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id",
    "INSERT INTO search_fts (rowid, body, thinking)"
    f" SELECT s.doc, {SQLITE_BODY('m.parts')}, {SQLITE_THINKING('m.parts')}"
    " FROM search_map AS s CROSS JOIN messages AS m ON m.rowid = s.msg",
    """UPDATE search_state SET mark = coalesce((SELECT max(rowid) FROM messages), 0),
      msg_rowid = (SELECT max(rowid) FROM messages),
      msg_cid = (SELECT conversation_id FROM messages
                 WHERE rowid = (SELECT max(rowid) FROM messages)),
      msg_seq = (SELECT seq FROM messages WHERE rowid = (SELECT max(rowid) FROM messages)),
      conv_rowid = (SELECT max(rowid) FROM conversations),
      conv_id = (SELECT id FROM conversations
                 WHERE rowid = (SELECT max(rowid) FROM conversations))""",
)
"""Revisions 0011 to 0015's shared index built from the rows: every title and message in it,
the map full and the mark at the newest message, as those revisions' catch-up leaves it."""

# -- Revision 0016: one FTS5 table per tenant ----------------------------------------------------

_LOG_TITLE: Final = (
    "INSERT INTO search_title_log (doc) SELECT {doc}"
    " WHERE NOT EXISTS (SELECT 1 FROM search_title_log WHERE doc = {doc});"
)
_TITLE_TRIGGERS: Final = (
    f"""CREATE TRIGGER search_titles_insert AFTER INSERT ON conversations BEGIN
      INSERT INTO search_tenants (tenant) SELECT new.tenant WHERE new.tenant IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM search_tenants WHERE tenant = new.tenant);
      {_LOG_TITLE.format(doc=title_doc("new.tenant", "new.rowid"))}
    END""",
    f"""CREATE TRIGGER search_titles_delete AFTER DELETE ON conversations
    WHEN old.title IS NOT NULL BEGIN
      {_LOG_TITLE.format(doc=title_doc("old.tenant", "old.rowid"))}
    END""",
    f"""CREATE TRIGGER search_titles_update AFTER UPDATE OF title ON conversations
    WHEN new.title IS NOT old.title BEGIN
      {_LOG_TITLE.format(doc=title_doc("new.tenant", "new.rowid"))}
    END""",
)
_DROP_TITLE_TRIGGERS: Final = (
    "DROP TRIGGER search_titles_update",
    "DROP TRIGGER search_titles_delete",
    "DROP TRIGGER search_titles_insert",
)
_LOG_EVERY_TITLE: Final = (
    "INSERT INTO search_title_log (doc) SELECT "
    + title_doc("c.tenant", "c.rowid")
    + " FROM conversations AS c WHERE c.title IS NOT NULL"
)
_EMPTY: Final = (
    "DELETE FROM search_map",
    "DELETE FROM search_log",
    "DELETE FROM search_title_log",
    "UPDATE search_state SET mark = 0",
    "INSERT INTO search_tenants (tenant) SELECT DISTINCT c.tenant FROM conversations AS c"
    " WHERE c.tenant IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM search_tenants AS t WHERE t.tenant = c.tenant)",
    _LOG_EVERY_TITLE,
)
"""With every tenant table dropped: nothing indexed, every title logged, the mark at 0."""

TENANT_TABLES_CREATE: Final = (
    "DROP TABLE search_fts",
    *_DROP_TITLE_TRIGGERS,
    "CREATE TABLE search_tables (slot INTEGER PRIMARY KEY, dirty INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE search_title_log (doc INTEGER PRIMARY KEY)",
    *_TITLE_TRIGGERS,
    _LOG_EVERY_TITLE,
)
"""Revision 0016 on SQLite: the shared ``search_fts`` gives way to a table per tenant, made by
the catch-up when it first indexes a tenant's document (`upgrade_tenant_tables` then moves
the index into them)."""


def upgrade_tenant_tables(conn: Connection) -> None:
    """Revision 0016 (SQLite): one FTS5 table per tenant slot, in place of ``search_fts``.

    The index moves in place: every document ``search_map`` lists goes to its tenant's table,
    indexed from its row, and every title with it; the mark, map and log stay as they were,
    so what was pending is pending still. FTS5 cannot hand segments from one table to another:
    moving costs what indexing again does, here in the migration's transaction (as revision
    0011 built its index), which leaves nothing for the first search after the upgrade.
    """
    for sql in TENANT_TABLES_CREATE:
        conn.exec_driver_sql(sql)
    tx: Any = _ConnectionTx(conn)  # the two methods the statements need
    writes = _Writes(tx)
    _index_mapped(tx, writes, 0, int(_one(tx, _MAPPED_TOP)[0]))
    _index_titles(tx, writes)


def downgrade_tenant_tables(conn: Connection) -> None:
    """Back to revision 0015's shared table, the documents moved into it the same way."""
    for (slot,) in list(conn.exec_driver_sql("SELECT slot FROM search_tables")):
        conn.exec_driver_sql(f"DROP TABLE {fts_table(int(slot))}")
    conn.exec_driver_sql("DROP TABLE search_tables")
    conn.exec_driver_sql("DROP TABLE search_title_log")
    for sql in _DROP_TITLE_TRIGGERS:
        conn.exec_driver_sql(sql)
    for sql in SQLITE_CREATE:
        if sql.startswith(("CREATE VIRTUAL TABLE", "INSERT INTO search_fts")) or (
            "search_titles_" in sql
        ):
            conn.exec_driver_sql(sql)
    for sql in _MOVE_BACK:
        conn.exec_driver_sql(sql)


_MAPPED_TOP: Final = _q("SELECT coalesce(max(msg), 0) FROM search_map")
_MOVE_BACK: Final = (
    "INSERT INTO search_fts (rowid, title) SELECT "
    + title_doc("c.tenant", "c.rowid")
    + ", c.title FROM conversations AS c WHERE c.title IS NOT NULL",
    "INSERT INTO search_fts (rowid, body, thinking)"
    f" SELECT s.doc, {SQLITE_BODY('m.parts')}, {SQLITE_THINKING('m.parts')}"
    " FROM search_map AS s CROSS JOIN messages AS m ON m.rowid = s.msg",
)
"""Every title and every mapped message into revision 0015's shared table."""


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
_LOGGED: Final = "search_log AS l CROSS JOIN search_map AS s ON s.msg = l.msg"
_SLOTS_LOGGED: Final = _q(f"SELECT DISTINCT s.doc >> {SLOT_BITS} FROM {_LOGGED}")
_SLOTS_RELOGGED: Final = _q(
    f"SELECT DISTINCT s.doc >> {SLOT_BITS} FROM {_LOGGED} WHERE s.msg <= :mark"
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
_CHUNK_ROWS: Final = 512
"""New rows indexed per pass over their tenants (each tenant's pass reads the chunk's map)."""
_CHUNK_END: Final = _q(
    "SELECT coalesce(max(msg), :top) FROM (SELECT msg FROM search_map"
    f" WHERE msg > :lo AND msg <= :top ORDER BY msg LIMIT {_CHUNK_ROWS})"
)
_SLOTS_NEW: Final = _q(
    f"SELECT DISTINCT doc >> {SLOT_BITS} FROM search_map WHERE msg > :lo AND msg <= :hi"
)
_SLOTS_TITLES: Final = _q(f"SELECT DISTINCT (-doc) >> {SLOT_BITS} FROM search_title_log")
_LOGS: Final = _q(
    "SELECT EXISTS (SELECT 1 FROM search_log), EXISTS (SELECT 1 FROM search_title_log)"
)
_CLEAR_LOG: Final = _q("DELETE FROM search_log")
_CLEAR_TITLE_LOG: Final = _q("DELETE FROM search_title_log")
_MOVE_MARK: Final = _q(
    """UPDATE search_state SET mark = :top,
      msg_rowid = (SELECT rowid FROM messages WHERE rowid = :top),
      msg_cid = (SELECT conversation_id FROM messages WHERE rowid = :top),
      msg_seq = (SELECT seq FROM messages WHERE rowid = :top),
      conv_rowid = (SELECT max(rowid) FROM conversations),
      conv_id = (SELECT id FROM conversations
                 WHERE rowid = (SELECT max(rowid) FROM conversations))"""
)
_TABLES: Final = _q("SELECT slot FROM search_tables ORDER BY slot")
_ADD_TABLE: Final = _q("INSERT INTO search_tables (slot, dirty) VALUES (:slot, 1)")
_DIRTY: Final = _q("UPDATE search_tables SET dirty = 1 WHERE slot = :slot")
_NEXT_DIRTY: Final = _q("SELECT slot FROM search_tables WHERE dirty = 1 ORDER BY slot LIMIT 1")
_CLEAN: Final = _q("UPDATE search_tables SET dirty = 0 WHERE slot = :slot")
_CHANGES: Final = _q("SELECT total_changes()")
_FORGET_TABLE: Final = _q("DELETE FROM search_tables WHERE slot = :slot")
_ERASED_SLOT: Final = _q(
    "SELECT t.slot FROM search_tenants AS t JOIN search_tables AS x ON x.slot = t.slot"
    " WHERE t.tenant = :tenant AND NOT EXISTS (SELECT 1 FROM conversations WHERE tenant = :tenant)"
)
FORGET_TENANT: Final = _q(
    "DELETE FROM search_tenants WHERE tenant = :tenant"
    " AND NOT EXISTS (SELECT 1 FROM conversations WHERE tenant = :tenant)"
)
"""After an erase and a catch-up: the tenant's name leaves the index's tables too."""

SQLITE_REBUILT: Final = _q(
    f"SELECT ({tenant_slot('c.tenant')} << {SLOT_BITS}) | m.rowid AS doc, NULL,"
    f" {SQLITE_BODY('m.parts')}, {SQLITE_THINKING('m.parts')}"
    " FROM messages AS m JOIN conversations AS c ON c.id = m.conversation_id"
    f" UNION ALL SELECT {title_doc('c.tenant', 'c.rowid')}, c.title, NULL, NULL"
    " FROM conversations AS c WHERE c.title IS NOT NULL ORDER BY doc"
)
"""What a freshly rebuilt index would hold (`indexed` after a catch-up equals it)."""


@dataclass(frozen=True, slots=True)
class _Table:
    """The statements over one tenant's table (`fts_table`); ``:low``/``:high``: its ids."""

    create: tuple[TextClause, TextClause]
    drop: TextClause
    forget_docs: TextClause
    index_logged: TextClause
    index_new: TextClause
    forget_titles: TextClause
    index_titles: TextClause
    merge: TextClause
    optimize: TextClause
    integrity: TextClause
    indexed: TextClause


_TABLES_KEPT: Final = 256


@lru_cache(maxsize=_TABLES_KEPT)
def _table(slot: int) -> _Table:
    t = fts_table(slot)
    body, thinking = SQLITE_BODY("m.parts"), SQLITE_THINKING("m.parts")
    index = (
        f"INSERT INTO {t} (rowid, body, thinking) SELECT s.doc, {body}, {thinking}"
        " FROM {rows} CROSS JOIN messages AS m ON m.rowid = s.msg"
        " WHERE {where} AND s.doc BETWEEN :low AND :high"
    )
    return _Table(
        create=(
            _q(
                f"CREATE VIRTUAL TABLE {t} USING fts5(title, body, thinking,"
                " tokenize='trigram case_sensitive 0', columnsize=0)"
            ),
            _q(f"INSERT INTO {t} ({t}, rank) VALUES ('automerge', 0)"),
        ),
        drop=_q(f"DROP TABLE {t}"),
        forget_docs=_q(
            f"DELETE FROM {t} WHERE rowid IN"
            f" (SELECT s.doc FROM {_LOGGED} WHERE s.doc BETWEEN :low AND :high)"
        ),
        index_logged=_q(index.replace("{rows}", _LOGGED).replace("{where}", "s.msg <= :mark")),
        index_new=_q(
            index.replace("{rows}", "search_map AS s").replace(
                "{where}", "s.msg > :lo AND s.msg <= :hi"
            )
        ),
        forget_titles=_q(
            f"DELETE FROM {t} WHERE rowid IN"
            " (SELECT doc FROM search_title_log WHERE doc BETWEEN -:high AND -:low)"
        ),
        index_titles=_q(
            f"INSERT INTO {t} (rowid, title) SELECT l.doc, c.title FROM search_title_log AS l"
            f" CROSS JOIN conversations AS c ON c.rowid = (-l.doc & {DOC_MASK})"
            " WHERE l.doc BETWEEN -:high AND -:low AND c.title IS NOT NULL"
            f" AND {title_doc('c.tenant', 'c.rowid')} = l.doc"
        ),
        merge=_q(f"INSERT INTO {t} ({t}, rank) VALUES ('merge', :pages)"),
        optimize=_q(f"INSERT INTO {t} ({t}) VALUES ('optimize')"),
        integrity=_q(f"INSERT INTO {t} ({t}) VALUES ('integrity-check')"),
        indexed=_q(f"SELECT rowid, title, body, thinking FROM {t} ORDER BY rowid"),
    )


def _one(tx: Tx, stmt: TextClause, params: dict[str, Any] | None = None) -> Row:
    return tx.fetch(stmt, params)[0]


def _run(tx: Tx, stmt: TextClause, params: dict[str, Any] | None = None) -> None:
    tx.execute(stmt, params)


def _slots(tx: Tx, stmt: TextClause, params: dict[str, Any] | None = None) -> list[int]:
    return [int(slot) for (slot,) in tx.fetch(stmt, params)]


def _ids(slot: int) -> dict[str, int]:
    low, high = slot_range(slot)
    return {"low": low, "high": high}


def tables(tx: Tx) -> list[int]:
    """The slots whose tables exist, lowest first."""
    return _slots(tx, _TABLES)


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


class _Writes:
    """One catch-up's writes to tenant tables: each made on first need, marked for merging."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx
        self._ready: set[int] = set()

    def table(self, slot: int) -> _Table:
        """The statements of ``slot``'s table, created (in this transaction) if it is not."""
        if slot not in self._ready:
            if not self._tx.execute(_DIRTY, {"slot": slot}):  # no such table yet
                for stmt in _table(slot).create:
                    _run(self._tx, stmt)
                _run(self._tx, _ADD_TABLE, {"slot": slot})
            self._ready.add(slot)
        return _table(slot)


def _reset(tx: Tx) -> None:
    """Drop every tenant table and log everything again (a rebuild)."""
    for slot in tables(tx):
        _run(tx, _table(slot).drop)
        _run(tx, _FORGET_TABLE, {"slot": slot})
    for sql in _EMPTY:
        _run(tx, _q(sql))


def catch_up(
    tx: Tx, *, rebuild: bool = False, budget: int | None = None, until: int | None = None
) -> CaughtUp:
    """Bring the index up to what ``tx`` sees (in a write transaction), or part of the way.

    ``budget`` bounds the characters of new rows indexed in this transaction (at least one row
    is); ``until`` stops at that rowid (a caller's first catch-up reports the rowid to pass,
    so rows appended meanwhile cannot keep a caller looping). ``rebuild`` (or rowids found
    renumbered) empties the index first. Logged titles are all indexed (they are few: a
    conversation write logs one).
    """
    if rebuild or bool(_one(tx, _RENUMBERED)[0]):
        _reset(tx)
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
    writes = _Writes(tx)
    logged, titles_logged = (bool(v) for v in _one(tx, _LOGS))
    if logged:  # (most catch-ups follow appends only: nothing logged)
        for slot in _slots(tx, _SLOTS_LOGGED):
            _run(tx, writes.table(slot).forget_docs, _ids(slot))
        _run(tx, _FORGET_MAP)
        _run(tx, _MAP_LOGGED, params)
    _run(tx, _MAP_NEW, params)
    if logged:
        for slot in _slots(tx, _SLOTS_RELOGGED, params):
            _run(tx, writes.table(slot).index_logged, {"mark": mark, **_ids(slot)})
    _index_mapped(tx, writes, mark, top)
    if titles_logged:
        _index_titles(tx, writes)
    if logged:
        _run(tx, _CLEAR_LOG)
    _run(tx, _MOVE_MARK, params)
    return CaughtUp(indexed=max(0, top - mark), until=until, done=done)


def _index_mapped(tx: Tx, writes: _Writes, lo: int, top: int) -> None:
    """Index the mapped rows above ``lo`` up to ``top``, each in its tenant's table.

    Chunk by chunk of rows, one statement per tenant present in the chunk: a rebuild of many
    tenants' rows does not read every row once per tenant.
    """
    while lo < top:
        # Rowids are unique: a span of at most a chunk's length holds at most a chunk of rows.
        small = top - lo <= _CHUNK_ROWS
        hi = top if small else int(_one(tx, _CHUNK_END, {"lo": lo, "top": top})[0])
        for slot in _slots(tx, _SLOTS_NEW, {"lo": lo, "hi": hi}):
            _run(tx, writes.table(slot).index_new, {"lo": lo, "hi": hi, **_ids(slot)})
        lo = hi


def _index_titles(tx: Tx, writes: _Writes) -> None:
    """Every logged title document removed, indexed again if its conversation still has it.

    The title log is emptied.
    """
    for slot in _slots(tx, _SLOTS_TITLES):
        table = writes.table(slot)
        _run(tx, table.forget_titles, _ids(slot))
        _run(tx, table.index_titles, _ids(slot))
    _run(tx, _CLEAR_TITLE_LOG)


def merge_step(tx: Tx, pages: int) -> bool:
    """One bounded step of FTS5 segment merging; whether any table needed it.

    The step merges the lowest table written since merging last left it whole (background
    work; see the module docstring), or finds it whole and says so.
    """
    dirty = _slots(tx, _NEXT_DIRTY)
    if not dirty:
        return False
    slot = dirty[0]
    before = int(_one(tx, _CHANGES)[0])
    _run(tx, _table(slot).merge, {"pages": pages})
    if int(_one(tx, _CHANGES)[0]) - before <= 1:  # the command's own row: nothing merged
        _run(tx, _CLEAN, {"slot": slot})
    return True


def optimize(tx: Tx, tenant: str | None = None) -> None:
    """Merge every segment of ``tenant``'s table (every table's for ``None``) into one.

    Afterwards no segment holds a deleted document's entries.
    """
    slots = (
        tables(tx)
        if tenant is None
        else _slots(tx, search_statements.TENANT_SLOT, {"tenant": tenant})
    )
    for slot in slots:
        _run(tx, _table(slot).optimize)


def forget_tenant(tx: Tx, tenant: str) -> None:
    """After an erase and a catch-up: nothing of ``tenant`` is left in the index.

    Its table is dropped (its pages freed, and overwritten under ``secure_delete``) and its
    name leaves the index's tables, unless it has conversations again (an append raced the
    erase); then its table is merged into one segment instead.
    """
    for slot in _slots(tx, _ERASED_SLOT, {"tenant": tenant}):
        _run(tx, _table(slot).drop)
        _run(tx, _FORGET_TABLE, {"slot": slot})
    _run(tx, FORGET_TENANT, {"tenant": tenant})
    optimize(tx, tenant)


def integrity(tx: Tx) -> None:
    """Raises unless FTS5's index of every table agrees with the text it holds."""
    for slot in tables(tx):
        _run(tx, _table(slot).integrity)


def indexed(tx: Tx) -> list[Row]:
    """What the index holds, document by document, as `SQLITE_REBUILT` lists it.

    A document in another table than its id's tenant's comes with that table's name.
    """
    out: list[Row] = []
    for slot in tables(tx):
        for doc, *columns in tx.fetch(_table(slot).indexed):
            placed = abs(int(doc)) >> SLOT_BITS == slot
            out.append((doc, *columns) if placed else (doc, *columns, fts_table(slot)))
    return sorted(out, key=lambda row: int(row[0]))


def tenant_slots(tx: Tx, tenant: str | None) -> tuple[int, ...]:
    """The tables a search of ``tenant`` reads (every tenant's for ``None``), highest first.

    None for a tenant that never had a document indexed.
    """
    if tenant is None:
        return tuple(_slots(tx, search_statements.TENANT_SLOTS))
    return tuple(_slots(tx, search_statements.TENANT_SLOT, {"tenant": tenant}))


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
    for sql in search_ddl.SQLITE_DROP:
        conn.exec_driver_sql(sql)
    search_ddl.drop_recency(conn)
    for sql in SQLITE_CREATE:
        conn.exec_driver_sql(sql)
    for sql in _FILL_0011:
        conn.exec_driver_sql(sql)


def downgrade(conn: Connection) -> None:
    """Back to revision 0010's index, built again from the rows."""
    if conn.dialect.name != "sqlite":
        search_index_postgres.downgrade(conn)
        return
    for sql in SQLITE_DROP:
        conn.exec_driver_sql(sql)
    search_ddl.create(conn)
    search_ddl.create_recency(conn)
