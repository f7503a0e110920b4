"""Appending: the one pipeline every write of new messages takes, from arguments to rows.

- ``appending``: the append pipeline, the one route of every append: the planned fast step
  (when the backend offers one), else the general step: files into the blob store, then rows.
- ``_planning``: an append's rows and lifecycles planned before any statement runs (for the
  fast steps).
- ``_lean_append``: SQLite's fast step: the planned rows written in one hop to the writer.
- ``_one_statement``: PostgreSQL's fast step: the planned rows written by one statement.
- ``_batch``: a batch as rows: its messages walked in order, every call's lifecycle decided.
- ``writes``: write operations, each a function of one transaction: a batch appended against
  its stored path (blob references, branches), cancel, compact, delete.
- ``header_lock``: a write's hold on its conversation: the header row locked, then advanced to a
  new revision (every write takes it, history moves too).
- ``tree_writes``: a whole tree of messages (restore, importers) through the same checks.
- ``_gc_retry``: files first, then rows, retried when garbage collection races the files.
"""
