"""Revision 0009 (metadata pair tags) on a populated database of revision 0008: down, up.

A database written by this code and downgraded to 0008 holds what 0008's code wrote: one tag
per metadata entry. The downgrade removes exactly the pair and wide tags; the upgrade writes
for every conversation the tags this code writes (compared row for row with what it wrote
itself), so filters of several entries answer as before, and nothing else changes either way.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from convstore import ConversationStore
from convstore.db import migrate
from convstore.db.migrations import downgrade_connection
from convstore.store.conversations.metadata_tags import PAIRED_ENTRIES, tag
from tests.db.test_migrations import _drift, _run
from tests.db.test_upgrade_0005 import _rows

PREVIOUS = "0008"
WIDE_METADATA = {f"k{i}": [i, {"b": i / 2, "a": "ü"}] for i in range(PAIRED_ENTRIES + 1)}
SEEDED: list[tuple[str | None, dict[str, Any] | None]] = [
    (None, {"project": "p7", "user": "ann"}),
    ("acme", {"project": "p7", "user": "bob", "n": 1.0}),
    ("acme", {"project": "p8", "nested": {"b": 2, "a": [1, "x"]}, "flag": True}),
    (None, None),
    ("acme", {}),
    ("acme", {**WIDE_METADATA, "project": "p7", "user": "bob"}),
]
FILTERS: list[dict[str, Any]] = [
    {"project": "p7"},
    {"project": "p7", "user": "bob"},
    {"user": "bob", "n": 1},
    {"nested": {"a": [1, "x"], "b": 2}, "flag": True},
    {"k3": [3, {"a": "ü", "b": 1.5}], "user": "bob", "project": "p7"},
]


def _tags(conn: Connection) -> list[tuple[str, str]]:
    rows = conn.execute(sa.text("SELECT conversation_id, tag FROM conversation_tags"))
    return sorted((r[0], r[1]) for r in rows)


async def _answers(url: str, blobs: str) -> list[list[str]]:
    async with ConversationStore(url, blobs=blobs) as store:
        return [
            [c.id for c in await store.list_conversations(metadata=wanted, tenant=tenant)]
            for wanted in FILTERS
            for tenant in (None, "acme")
        ]


async def test_a_populated_0008_database_downgrades_and_upgrades_again(empty_url: str) -> None:
    blobs = f"memory://up9-{uuid.uuid4().hex}"
    await migrate(empty_url)
    async with ConversationStore(empty_url, blobs=blobs) as store:
        made = [
            await store.create_conversation(title=str(i), tenant=tenant, metadata=meta)
            for i, (tenant, meta) in enumerate(SEEDED)
        ]
    answers = await _answers(empty_url, blobs)
    assert all(answers[:4]) and answers[2] == [made[5].id, made[1].id]  # the filters match
    written = await _run(empty_url, _tags)
    others = {k: v for k, v in (await _run(empty_url, _rows)).items() if k != "conversation_tags"}  # type: ignore[attr-defined]

    await _run(empty_url, lambda conn: downgrade_connection(conn, PREVIOUS))
    entries = sorted(
        (c.id, tag(key, value)) for c in made for key, value in (c.metadata or {}).items()
    )
    assert await _run(empty_url, _tags) == entries

    await migrate(empty_url)
    assert await _run(empty_url, _tags) == written
    after = await _run(empty_url, _rows)
    assert {k: v for k, v in after.items() if k != "conversation_tags"} == others  # type: ignore[attr-defined]
    assert await _answers(empty_url, blobs) == answers
    assert await _run(empty_url, _drift) == []
