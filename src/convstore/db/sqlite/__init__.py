"""The SQLite backend: raw driver statements, one thread hop per operation.

- ``backend``: `SqliteBackend`: a writer connection and readers, each operation one hop to
  its connection's driver thread.
- ``tx``: SQLite transactions as they run in the driver thread, and the WAL bound.
- ``connections``: opening, configuring and closing the backend's aiosqlite connections.
- ``_schema``: schema checks and migrations of an SQLite database, on the writer connection.
- ``read_only``: a read-only snapshot through the standard library's ``sqlite3`` (no
  SQLAlchemy, no thread), where ``convstore search`` runs the store's search SQL.
"""
