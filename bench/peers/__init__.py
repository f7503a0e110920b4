"""Conversation stores measured side by side by ``python -m bench.compare``.

One module per store adapts it to the small `bench.peers.runner.Store` protocol and hands it to
`bench.peers.runner.main`, which does all the measuring; so every store is timed by the same
code, in its own process, on fresh SQLite files. Each module also runs on its own::

    .venv/bin/python -m bench.peers.agents_sqlite --reps 3

Modules:

- ``convstore_store``: convstore's `ConversationStore` (the reference every ratio is taken to);
  ``convstore_nocache``: the same with its message cache off.
- ``agents_sqlite``, ``agents_sqlalchemy``: openai-agents ``SQLiteSession`` and
  ``SQLAlchemySession`` (items in the Responses-API shape of `bench.peers.shapes`).
- ``convstore_session``: convstore's own openai-agents session, ``ConvstoreSession``, on the
  same items and calls as those two; ``convstore_session_url``: the same sessions made with
  ``url=`` (as ``SQLiteSession(session_id, path)`` is), sharing the URL's one store.
- ``adk_database``: google-adk ``DatabaseSessionService`` (events with ``google.genai`` content).
- ``langchain_sql``: langchain-community ``SQLChatMessageHistory`` (LangChain messages).
- ``raw_sqlite3``: the floor: the standard library's sqlite3, one JSON row per item, one
  transaction per turn, ``journal_mode=WAL`` and ``synchronous=FULL``; ``raw_sqlite3_thread``:
  the same through ``asyncio.to_thread`` (the floor of any asyncio store).
- ``convstore_v1``: convstore before the schema-v2 layout change (commit d7b1e98).
- PostgreSQL: ``convstore_pg``, ``agents_sqlalchemy_pg`` (``SQLAlchemySession`` on asyncpg) and
  ``raw_asyncpg`` (the floor: convstore's rows in one statement per turn).
"""

from __future__ import annotations

from typing import Final

BASELINE: Final = "convstore_store"
"""The store every SQLite ratio is taken against."""

POSTGRES_BASELINE: Final = "convstore_pg"
"""The store every PostgreSQL ratio is taken against."""

SQLITE_STORES: Final = (
    "convstore_store",
    "convstore_nocache",
    "convstore_v1",
    "agents_sqlite",
    "agents_sqlalchemy",
    "convstore_session",
    "convstore_session_url",
    "adk_database",
    "langchain_sql",
    "raw_sqlite3",
    "raw_sqlite3_thread",
)
"""SQLite stores, in the order of the first repetition (later repetitions rotate it)."""

POSTGRES_STORES: Final = ("convstore_pg", "agents_sqlalchemy_pg", "raw_asyncpg")
"""PostgreSQL stores (a throwaway cluster started by `bench.compare`)."""

STORES: Final = (*SQLITE_STORES, *POSTGRES_STORES)
"""Every store."""
