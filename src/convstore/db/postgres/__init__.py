"""The PostgreSQL backend (asyncpg) and what only PostgreSQL runs.

- ``backend``: `PostgresBackend`: the general SQLAlchemy backend, used for PostgreSQL.
- ``append``: the common append as one statement (one round trip on the asyncpg connection).
- ``load``: a load or window as one statement (one round trip on the asyncpg connection).
- ``search_index``: the deferred search index on PostgreSQL (`convstore.db.search_index`).
- ``_partitioning``: hash partitioning of the per-conversation tables (``convstore partition``).
"""
