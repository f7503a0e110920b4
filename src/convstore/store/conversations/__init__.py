"""Conversations as a whole: their headers, metadata tags, tools and listings.

- ``conversation_methods``: `ConversationStore`'s methods on conversations as a whole (create,
  get, list, search, update, delete).
- ``headers``: conversation headers: create, get-or-create, title, metadata, state patches.
- ``metadata_tags``: one tag row per metadata entry, so metadata filters are index ranges.
- ``listing``: conversation summaries, pages and cursors (``list_conversations``).
- ``tools``: tool definitions kept with a conversation, in its metadata.
"""
