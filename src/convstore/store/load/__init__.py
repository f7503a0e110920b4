"""Loads: a conversation's path (or a window of it) read back as typed models.

- ``reads``: read operations of one read transaction: a path or a window, messages by seq or
  id, branches, blob lookups.
- ``one_statement``: PostgreSQL's loads and windows, each one statement (no transaction).
- ``_message_reads``: a load's message rows, decoded through the message cache.
- ``message_cache``: decoded messages kept per (conversation, seq): a reload decodes only news.
- ``native``: the native records of a path, without building messages (integrations).
- ``paths``: walking the message tree by parent pointers, only as far as a question needs.
"""
