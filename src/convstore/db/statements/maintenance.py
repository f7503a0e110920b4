"""Statements over whole tables: settings, a tenant's erase, a conversation's rows moved whole.

Invariants:

- Settings are store-wide key/value rows (where the blobs live); a setting written "if absent"
  never replaces one another process wrote first.
- An erase names its tenant as ``:tenant`` and reaches every per-conversation table through
  the tenant's conversation ids (`erase_delete`), so a table added later is erased without
  touching this module; the conversations go last, by their own tenant column.
- An archive (export and restore, `convstore.store.transfer.archive_rows`) reads and writes each
  per-conversation table whole by conversation id, naming its columns.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from sqlalchemy import Delete, Insert, Select, Table, bindparam, delete, insert, select

from convstore.db.schema import blob_refs, conversations, settings
from convstore.db.statements._common import upsert_ignore
from convstore.db.statements.conversations import tenant_conversation_ids

__all__ = [
    "DELETE_SETTING",
    "ERASE_LOCK",
    "ERASE_REFERENCED",
    "SELECT_SETTING",
    "archive_insert",
    "archive_select",
    "erase_delete",
    "insert_setting_if_absent",
]

SELECT_SETTING: Final = select(settings.c.value).where(settings.c.key == bindparam("key"))


@cache
def insert_setting_if_absent(dialect_name: str) -> Insert:
    """A setting, unless one with its key exists."""
    return upsert_ignore(dialect_name, settings)


DELETE_SETTING: Final[Delete] = delete(settings).where(settings.c.key == bindparam("key"))

# ---------------------------------------------------------------------------------------------
# erasing a tenant (`convstore.store.maintenance._erase`)

_TENANT_IDS: Final = tenant_conversation_ids(True)


@cache
def erase_delete(table: Table) -> Delete:
    """Every row of ``table`` that belongs to tenant ``:tenant``."""
    if table is conversations:
        return delete(table).where(table.c.tenant == bindparam("tenant"))
    return delete(table).where(table.c.conversation_id.in_(_TENANT_IDS))


ERASE_LOCK: Final = _TENANT_IDS.with_for_update()
"""The tenant's conversation ids, locked (PostgreSQL: appends in flight commit first)."""

ERASE_REFERENCED: Final = (
    select(blob_refs.c.namespace, blob_refs.c.sha256)
    .where(blob_refs.c.conversation_id.in_(_TENANT_IDS))
    .distinct()
    .order_by(blob_refs.c.namespace, blob_refs.c.sha256)
)
"""(namespace, sha256) of every blob the tenant's messages reference."""

# ---------------------------------------------------------------------------------------------
# a conversation's rows, whole (`convstore.store.transfer.archive_rows`)


def _key(table: Table) -> Any:
    return table.c.id if table is conversations else table.c.conversation_id


@cache
def archive_select(table: Table) -> Select[Any]:
    """Every row (every column, in table order) ``table`` holds of conversation ``:cid``."""
    return select(*table.c).where(_key(table) == bindparam("cid"))


@cache
def archive_insert(table: Table, columns: tuple[str, ...]) -> Insert:
    """A row of ``table`` with ``columns`` bound by name (the others take their defaults)."""
    return insert(table).values({name: bindparam(name) for name in columns})
