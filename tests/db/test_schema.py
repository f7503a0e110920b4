"""Properties of the schema itself (`convstore.db.schema`), whatever the database."""

from __future__ import annotations

from sqlalchemy import Index

from convstore.db.schema import metadata


def _whole(index: Index) -> bool:
    """Not a partial index (one that holds every row can serve any lookup)."""
    return all(index.dialect_options[d]["where"] is None for d in ("sqlite", "postgresql"))


def test_every_foreign_key_leads_an_index() -> None:
    """Deleting a row looks up the rows referring to it by the foreign key's columns, on SQLite
    and PostgreSQL alike: without an index leading with them, each delete scans (a message
    delete once scanned its conversation's calls, and a conversation delete did that once per
    message)."""
    for table in metadata.sorted_tables:
        keys = [tuple(c.name for c in table.primary_key.columns)] + [
            tuple(c.name for c in index.columns) for index in table.indexes if _whole(index)
        ]
        for foreign in table.foreign_key_constraints:
            columns = tuple(foreign.column_keys)
            assert any(key[: len(columns)] == columns for key in keys), (table.name, columns)
