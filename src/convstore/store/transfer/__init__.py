"""Data in and out whole: export archives, restores, and a conversation as one document.

- ``export``: conversations and their blobs written to one zip archive.
- ``restore``: an export archive restored, every conversation exactly as it was.
- ``archive_rows``: a conversation's rows as portable JSON and back (export and restore).
- ``_archive_checks``: an archive's rows checked as ``append`` checks what it writes.
- ``documents``: a whole conversation as one JSON document (``show --json``, export).
"""
