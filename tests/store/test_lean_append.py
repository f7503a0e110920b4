"""The lean SQLite append and the general one write identical rows.

`convstore.store.append._lean_append` takes the common append (one unbranched conversation, no
files, no idempotency key) and leaves everything else to `convstore.store.append.writes`. Here the
same generated sequences of appends go to two stores: one as it ships, one with the lean path
switched off. Every append must end the same way (the same stored messages, or the same error),
and afterwards every table must hold the same rows and `load` must return the same
conversation. Revision tokens are random and each store stamps its own clock, so revisions are
left out and timestamps compared by order (which write stamped them), not by value.

SQLite only: the lean path is SQLite's.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from convstore import (
    ConversationStore,
    ConvstoreError,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    NativeRecord,
    RevisionConflictError,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from convstore.store.append import _lean_append
from tests.strategies import TEXT, json_values

OUTPUTS = [
    JsonOutput(value={"temp": 21, "unit": None}),
    JsonOutput(value="sunny"),
    ErrorOutput(message="timeout", details={"after_s": 30}),
    JsonOutput(value=None),
]
NATIVE = st.none() | st.builds(NativeRecord, format=st.just("openai-agents"), data=json_values)
ARGUMENTS = st.dictionaries(TEXT, json_values, max_size=3)
SIGNATURE = st.none() | TEXT
TABLES = ["conversations", "messages", "tool_calls", "blob_refs", "append_keys", "compactions"]


def _usage(draw: st.DrawFn) -> Usage | None:
    if not draw(st.booleans()):
        return None
    return Usage(input_tokens=draw(st.integers(0, 10**6)), output_tokens=draw(st.integers(0, 999)))


class _Calls:
    """The call ids a generated conversation has used so far (fresh ones, mostly)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def new_id(self, draw: st.DrawFn) -> str:
        if self.made and draw(st.integers(0, 15)) == 0:
            return draw(st.sampled_from(self.made))  # a call id used before: refused
        call_id = f"call_{len(self.made)}"
        self.made.append(call_id)
        return call_id

    def answered_id(self, draw: st.DrawFn) -> str:
        if not self.made or draw(st.integers(0, 9)) == 0:
            # No such call, or a call the batch makes only after this result.
            return draw(st.sampled_from(["never_called", f"call_{len(self.made)}"]))
        return draw(st.sampled_from(self.made[-4:]))


def _message(draw: st.DrawFn, calls: _Calls) -> Message:
    """One message of a turn, as applications write them: mostly new message ids and call
    ids, sometimes a repeated one; results for recent calls, sometimes again or contradicting."""
    message_id = draw(st.sampled_from([None] * 10 + ["m1", "m2"]))
    native = draw(NATIVE)
    kind = draw(st.sampled_from(["user", "text", "calls", "calls", "results", "results"]))
    kind = "file" if draw(st.integers(0, 15)) == 0 else kind
    if kind == "user":
        return Message.user(draw(TEXT), id=message_id, native=native)
    if kind == "text":
        parts: list[Any] = [TextPart(text=draw(TEXT))]
        if draw(st.booleans()):
            parts.insert(0, ThinkingPart(text=draw(TEXT), signature=draw(SIGNATURE)))
        return Message.assistant(
            *parts,
            id=message_id,
            provider=draw(st.sampled_from([None, "anthropic", "anthropic", "openai", "bad\x00"])),
            model=draw(st.sampled_from([None, "claude-sonnet-4-5"])),
            native=native,
            usage=_usage(draw),
        )
    if kind == "calls":
        made = [
            ToolCallPart(id=calls.new_id(draw), name="get_weather", arguments=draw(ARGUMENTS))
            for _ in range(draw(st.integers(1, 3)))
        ]
        return Message.assistant(
            TextPart(text="checking"), *made, id=message_id, native=native, usage=_usage(draw)
        )
    if kind == "file":
        return Message.user(
            "what is this?", FilePart.from_uri("https://example.com/photo.png"), id=message_id
        )
    results = [
        ToolResultPart(call_id=calls.answered_id(draw), output=draw(st.sampled_from(OUTPUTS)))
        for _ in range(draw(st.integers(1, 2)))
    ]
    return Message(role="tool", parts=results, id=message_id, native=native)


def _append(draw: st.DrawFn, calls: _Calls) -> dict[str, Any]:
    """One `append` call: its batch and options."""
    return {
        "batch": [_message(draw, calls) for _ in range(draw(st.integers(1, 4)))],
        "on_conflict": draw(st.sampled_from(["raise", "keep-first"])),
        "revision": draw(st.sampled_from(["none"] * 4 + ["current"] * 3 + ["stale"])),
        "tenant": draw(st.sampled_from([None] * 4 + ["acme"] * 3 + ["other"])),
        "parent": draw(st.sampled_from(["none", "none", "none", "head", "earlier"])),
    }


def _step(*batch: Message, parent: str = "none", on_conflict: str = "raise") -> dict[str, Any]:
    return {
        "batch": list(batch),
        "on_conflict": on_conflict,
        "revision": "current",
        "tenant": "acme",
        "parent": parent,
    }


EXPLICIT = [
    _step(Message.user("weather?"), Message.assistant(ToolCallPart(id="call_a", name="w"))),
    _step(Message.tool_result("call_a", OUTPUTS[1]), Message.assistant("sunny")),
    # A result before the call it names, in one batch: history only, the call stays pending.
    _step(
        Message.tool_result("call_c", OUTPUTS[1]),
        Message.assistant(ToolCallPart(id="call_c", name="w")),
    ),
    # A repeat, then a contradiction, of a stored result: decided by the general path.
    _step(Message.tool_result("call_a", OUTPUTS[1])),
    _step(Message.tool_result("call_a", OUTPUTS[0]), on_conflict="keep-first"),
    _step(Message.tool_result("call_a", OUTPUTS[0])),
    # A branch: the general path. On a branched conversation, the next turn is lean again,
    # but a result for an earlier call (on which branch?) is the general path's.
    _step(Message.user("edit"), parent="earlier"),
    _step(Message.assistant(ToolCallPart(id="call_b", name="w"))),
    _step(Message.tool_result("call_b", OUTPUTS[2]), Message.assistant("sorry")),
]
"""Each way the lean path hands a planned batch to the general path, at least once."""


def _rows(path: Path, cid: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the conversation, revisions out, timestamps as their order of appearance."""
    with sqlite3.connect(path) as db:
        tables = {}
        for table in TABLES:
            columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
            key = "id" if table == "conversations" else "conversation_id"
            rows = db.execute(f"SELECT * FROM {table} WHERE {key} = ? ORDER BY 2, 3", (cid,))
            tables[table] = [dict(zip(columns, row, strict=True)) for row in rows]
    stamps = sorted(
        {v for rows in tables.values() for row in rows for k, v in row.items() if k.endswith("_at")}
        - {None}
    )
    order = {stamp: n for n, stamp in enumerate(stamps)}
    return {
        table: [
            tuple(
                order.get(v, v) if k.endswith("_at") else v
                for k, v in row.items()
                if k != "revision"
            )
            for row in rows
        ]
        for table, rows in tables.items()
    }


_CLOCKED = frozenset({"created_at", "updated_at", "completed_at", "revision"})


def _timeless(value: Any) -> Any:
    """A loaded value as JSON, without the per-store clock and revision at any depth."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in _CLOCKED}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(value.model_dump(mode="json"))


class _Pair:
    """The same conversation in a lean store and a general-only store, appended in step."""

    def __init__(self, lean: ConversationStore, general: ConversationStore) -> None:
        self.stores = (lean, general)
        self.cid = f"c-{uuid.uuid4().hex}"
        self.revisions: list[str] = ["", ""]

    async def create(self) -> None:
        for n, store in enumerate(self.stores):
            # Both conversations have one id, so that error messages can be compared whole.
            conv = await store.get_or_create_conversation(self.cid, tenant="acme", title="w")
            self.revisions[n] = conv.revision

    async def append(self, step: dict[str, Any]) -> None:
        outcomes = []
        loaded = await self.stores[0].load(self.cid)
        head = loaded.head_seq
        parent = {
            "none": None,
            "head": head,
            "earlier": loaded.messages[0].seq if loaded.messages else None,
        }[step["parent"]]
        for n, store in enumerate(self.stores):
            expected = {"none": None, "current": self.revisions[n], "stale": "0" * 16}
            # The general-only store: the pipeline finds nothing planned, takes its general step.
            planning = mock.patch.object(_lean_append, "plan", return_value=None)
            try:
                with planning if n else nullcontext():
                    stored = await store.append(
                        self.cid,
                        step["batch"],
                        tenant=step["tenant"],
                        on_conflict=step["on_conflict"],
                        expected_revision=expected[step["revision"]],
                        parent_seq=parent,
                    )
            except ConvstoreError as exc:
                same = "" if isinstance(exc, RevisionConflictError) else str(exc)
                outcomes.append((type(exc).__name__, same))
            else:
                self.revisions[n] = stored.revision
                assert stored.revision == (await store.load(self.cid)).revision
                outcomes.append(("stored", [_timeless(m) for m in stored]))
        assert outcomes[0] == outcomes[1]

    async def compare(self, paths: tuple[Path, Path]) -> None:
        assert _rows(paths[0], self.cid) == _rows(paths[1], self.cid)
        lean, general = [await store.load(self.cid) for store in self.stores]
        assert _timeless(lean) == _timeless(general)
        assert [_timeless(c) for c in lean.tool_calls] == [_timeless(c) for c in general.tool_calls]


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[asyncio.Runner, _Pair, tuple[Path, Path]]]:
    paths = (tmp_path / "lean.db", tmp_path / "general.db")
    with asyncio.Runner() as runner:
        lean, general = (
            ConversationStore(f"sqlite+aiosqlite:///{p}", blobs=f"memory://{uuid.uuid4().hex}")
            for p in paths
        )
        runner.run(lean.open())
        runner.run(general.open())
        try:
            yield runner, _Pair(lean, general), paths
        finally:
            runner.run(lean.close())
            runner.run(general.close())


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many appends the lean path planned, and how many of those it handed over."""
    counts = {"planned": 0, "handed over": 0}
    run, general = _lean_append.LeanAppend.run, _lean_append.LeanAppend._general

    def counting_run(self: _lean_append.LeanAppend, tx: Any) -> Any:
        counts["planned"] += 1
        return run(self, tx)

    def counting_general(self: _lean_append.LeanAppend, tx: Any) -> Any:
        counts["handed over"] += 1
        return general(self, tx)

    monkeypatch.setattr(_lean_append.LeanAppend, "run", counting_run)
    monkeypatch.setattr(_lean_append.LeanAppend, "_general", counting_general)
    return counts


@pytest.mark.timeout(900)  # a failure is shrunk to a short sequence, which takes a while
def test_lean_and_general_appends_write_identical_rows(
    stores: tuple[asyncio.Runner, _Pair, tuple[Path, Path]], taken: dict[str, int]
) -> None:
    runner, first, paths = stores
    lean, general = first.stores

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        # No "explain" phase: its line tracer makes a failing run take minutes on Python 3.11.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        pair = _Pair(lean, general)
        runner.run(pair.create())
        calls = _Calls()
        for _ in range(data.draw(st.integers(2, 8), label="appends")):
            runner.run(pair.append(_append(data.draw, calls)))
        runner.run(pair.compare(paths))

    check()
    # The comparison means something only if the lean path wrote many of these appends.
    assert taken["planned"] - taken["handed over"] > 40, taken


def test_what_the_lean_path_hands_over_is_written_alike(
    stores: tuple[asyncio.Runner, _Pair, tuple[Path, Path]], taken: dict[str, int]
) -> None:
    runner, pair, paths = stores
    runner.run(pair.create())
    for step in EXPLICIT:
        runner.run(pair.append(step))
    runner.run(pair.compare(paths))
    assert taken["handed over"] == 5, taken
