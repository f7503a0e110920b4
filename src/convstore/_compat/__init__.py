"""Every use of another library's internals, in one place, each with a test of its assumption.

convstore leans on a few things its dependencies do not promise, each for a measured reason
(``bench/callgrind_bench.py``). They live here so an upgrade that breaks one fails one named
test (``tests/test_compat.py``) instead of a load or an append somewhere else:

- `convstore._compat.pydantic_internals`: building trusted models through ``BaseModel``'s
  slot descriptors, and the marker that keeps a translating ``__init__`` out of nested
  validation.
- `convstore._compat.sqlite_driver`: aiosqlite's private call queue (one thread hop for a whole
  operation) and the ``sqlite3`` adapter for ``None``.
- `convstore._compat.collector`: the cyclic garbage collector held off while a load decodes.

The private modules of google-adk the ADK integration imports are bounded in
``pyproject.toml`` (``google-adk<2.14``) and exercised by its own suite.

Invariant: importing convstore changes nothing outside convstore. Process-wide effects (the
``sqlite3`` adapter) happen when a store first needs them, never at import.
"""
