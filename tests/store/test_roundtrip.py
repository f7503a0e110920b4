"""Property: whatever is stored loads back equal — from a fresh store, and in a new process."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import ConversationStore, Message, dump_messages
from tests.strategies import histories

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


async def _store_history(
    url: str, blobs: str, history: list[Message], cuts: list[int]
) -> tuple[str, list[Message]]:
    """Append ``history`` in batches split at ``cuts``; the conversation id and stored copies."""
    async with ConversationStore(url, blobs=blobs, auto_migrate=True) as store:
        conv = await store.create_conversation(title="generated")
        stored: list[Message] = []
        bounds = [0, *sorted(set(cuts)), len(history)]
        for start, end in itertools.pairwise(bounds):
            if start < end:
                stored += await store.append(conv.id, history[start:end])
        return conv.id, stored


def _signature(history: list[Message]) -> list[tuple[str, list[str]]]:
    return [(m.role.value, [p.kind for p in m.parts]) for m in history]


@SETTINGS
@given(history=histories(), data=st.data())
def test_stored_conversations_reload_equal(
    db_url: str, history: list[Message], data: st.DataObject
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(history)), max_size=3))
    blobs = f"memory://roundtrip-{uuid.uuid4().hex}"

    async def scenario() -> None:
        cid, stored = await _store_history(db_url, blobs, history, cuts)
        assert _signature(stored) == _signature(history)
        async with ConversationStore(db_url, blobs=blobs) as reopened:
            loaded = await reopened.load(cid)
        assert loaded.messages == stored
        assert [m.seq for m in loaded.messages] == list(range(1, len(history) + 1))
        calls = [p.id for m in history for p in m.tool_calls]
        assert [c.id for c in loaded.tool_calls] == calls

    asyncio.run(scenario())


_LOADER = """
import asyncio, json, sys
from convstore import ConversationStore, dump_messages

async def main(url, blobs, ids):
    out = {}
    async with ConversationStore(url, blobs=blobs) as store:
        for cid in ids:
            conv = await store.load(cid)
            out[cid] = {
                "messages": dump_messages(conv.messages),
                "calls": [c.model_dump(mode="json") for c in conv.tool_calls],
            }
    print(json.dumps(out))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
"""


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(histories(max_turns=4), min_size=8, max_size=8))
def test_conversations_reopened_in_a_new_process_load_equal(
    tmp_path_factory: pytest.TempPathFactory, batch: list[list[Message]]
) -> None:
    # Under pytest's base directory (removed with it), not a bare mkdtemp that outlived the run.
    directory = tmp_path_factory.mktemp("roundtrip")
    url = f"sqlite+aiosqlite:///{directory / 'convstore.db'}"
    blobs = str(directory / "blobs")

    async def store_all() -> dict[str, dict[str, object]]:
        expected: dict[str, dict[str, object]] = {}
        for history in batch:
            cid, stored = await _store_history(url, blobs, history, [len(history) // 2])
            async with ConversationStore(url, blobs=blobs) as store:
                calls = (await store.load(cid)).tool_calls
            expected[cid] = {
                "messages": dump_messages(stored),
                "calls": [c.model_dump(mode="json") for c in calls],
            }
        return expected

    expected = asyncio.run(store_all())
    result = subprocess.run(
        [sys.executable, "-c", _LOADER, url, blobs, *expected],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout) == json.loads(json.dumps(expected))
