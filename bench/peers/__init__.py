"""Conversation stores measured side by side by ``python -m bench.compare``.

One module per store adapts it to the small `bench.peers.runner.Store` protocol and hands it to
`bench.peers.runner.main`, which does all the measuring; so every store is timed by the same
code, in its own process, on fresh SQLite files. Each module also runs on its own::

    .venv/bin/python -m bench.peers.agents_sqlite --reps 3

Modules:

- ``convstore_store``: convstore's `ConversationStore` (the reference every ratio is taken to).
- ``agents_sqlite``, ``agents_sqlalchemy``: openai-agents ``SQLiteSession`` and
  ``SQLAlchemySession`` (items in the Responses-API shape of `bench.peers.shapes`).
- ``convstore_session``: convstore's own openai-agents session, ``ConvstoreSession``, on the
  same items and calls as those two.
- ``adk_database``: google-adk ``DatabaseSessionService`` (events with ``google.genai`` content).
- ``langchain_sql``: langchain-community ``SQLChatMessageHistory`` (LangChain messages).
- ``raw_sqlite3``: the floor: the standard library's sqlite3, one JSON row per item, one
  transaction per turn, ``journal_mode=WAL`` and ``synchronous=FULL``.
"""

from __future__ import annotations

from typing import Final

BASELINE: Final = "convstore_store"
"""The store every ratio is taken against."""

STORES: Final = (
    "convstore_store",
    "agents_sqlite",
    "agents_sqlalchemy",
    "convstore_session",
    "adk_database",
    "langchain_sql",
    "raw_sqlite3",
)
"""Every store, in the order of the first repetition (later repetitions rotate it)."""
