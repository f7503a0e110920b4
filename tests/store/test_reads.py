"""Reads without side effects: another branch by ``head_seq``, and the header alone.

``load(cid, head_seq=N)`` reads the path root → N of any branch with that path's own tool-call
lifecycles, and leaves the stored head where it was; ``get_conversation`` reads the header
without messages. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from convstore import (
    ConversationNotFoundError,
    ConversationStore,
    ConversationSummary,
    InvalidInputError,
    JsonOutput,
    Message,
    MessageNotFoundError,
    TextPart,
    ToolCallPart,
)
from convstore.cli.main import main as cli_main


async def _two_branches(store: ConversationStore) -> tuple[str, int, int]:
    """A call made on a shared prefix, answered on branch A, left open on branch B (where a
    user turn follows it). The head is A's tip. Returns (id, A's tip, B's tip)."""
    conv = await store.create_conversation(title="branches")
    stored = await store.append(
        conv.id,
        [
            Message.system("be brief"),
            Message.user("weather in Paris?"),
            Message.assistant(
                TextPart(text="checking"),
                ToolCallPart(id="call-1", name="weather", arguments={"city": "Paris"}),
            ),
        ],
    )
    call_seq = stored[-1].seq
    assert call_seq is not None
    branch_b = await store.append(
        conv.id, [Message.user("never mind, what about Rome?")], parent_seq=call_seq
    )
    branch_a = await store.append(
        conv.id,
        [Message.tool_result("call-1", {"celsius": 21}), Message.assistant("21 °C in Paris")],
        parent_seq=call_seq,
    )
    tip_a, tip_b = branch_a[-1].seq, branch_b[-1].seq
    assert tip_a is not None and tip_b is not None
    return conv.id, tip_a, tip_b


async def test_head_seq_reads_another_branch_with_its_own_lifecycles(
    store: ConversationStore,
) -> None:
    cid, tip_a, tip_b = await _two_branches(store)
    before = await store.get_conversation(cid)

    on_a = await store.load(cid)
    assert on_a.head_seq == tip_a
    assert on_a.get_tool_call("call-1").status == "complete"
    assert on_a.get_tool_call("call-1").output == JsonOutput(value={"celsius": 21})

    on_b = await store.load(cid, head_seq=tip_b)
    assert [m.seq for m in on_b.messages] == [1, 2, 3, tip_b]
    assert on_b.messages[-1].text == "never mind, what about Rome?"
    assert on_b.head_seq == tip_b
    call = on_b.get_tool_call("call-1")
    assert (call.status, call.output, call.result_kind, call.result_seq) == (
        "interrupted", None, None, None,
    )  # fmt: skip
    assert call.completed_at == on_b.messages[-1].created_at  # the interrupting user turn

    # Up to the call itself: nothing after it, so the call is pending there.
    at_call = await store.load(cid, head_seq=3)
    assert [m.seq for m in at_call.messages] == [1, 2, 3]
    assert at_call.get_tool_call("call-1").status == "pending"

    # The active path read by head_seq is the active path.
    assert await store.load(cid, head_seq=tip_a) == on_a
    # Nothing moved: same head, same revision, and load() still reads branch A.
    after = await store.get_conversation(cid)
    assert (after.revision, after.updated_at) == (before.revision, before.updated_at)
    assert await store.load(cid) == on_a
    assert [b.head_seq for b in await store.branches(cid) if b.active] == [tip_a]


async def test_head_seq_windows_and_render(store: ConversationStore) -> None:
    cid, tip_a, tip_b = await _two_branches(store)
    window = await store.load(cid, head_seq=tip_a, last=2)
    assert [m.seq for m in window.messages] == [tip_a - 1, tip_a]
    # The window answers a call made before it: the call comes with it.
    assert [c.id for c in window.tool_calls] == ["call-1"]
    assert window.tool_calls[0].status == "complete"
    longer = await store.load(cid, head_seq=tip_b, last=10)  # more than the path holds
    assert [m.seq for m in longer.messages] == [1, 2, 3, tip_b]
    on_b = await store.load(cid, head_seq=tip_b, last=1)
    assert [m.seq for m in on_b.messages] == [tip_b]
    assert on_b.tool_calls == []
    paged = await store.load(cid, head_seq=tip_b, before_seq=tip_b, last=1)
    assert [m.seq for m in paged.messages] == [3]
    assert paged.get_tool_call("call-1").status == "interrupted"

    rendered = await store.render(cid, "anthropic", model="claude-sonnet-4-5", head_seq=tip_b)
    texts = json.dumps(rendered.payload)
    assert "Rome" in texts and "celsius" not in texts
    on_a = await store.render(cid, "anthropic", model="claude-sonnet-4-5")
    assert "celsius" in json.dumps(on_a.payload)


@pytest.mark.parametrize("unknown", [0, 99, "popped"])
async def test_head_seq_of_no_message_is_refused(
    store: ConversationStore, unknown: int | str
) -> None:
    cid, _tip_a, tip_b = await _two_branches(store)
    if unknown == "popped":
        await store.switch_branch(cid, head_seq=tip_b)
        await store.pop(cid)  # a leaf: deleted
        unknown = tip_b
    assert isinstance(unknown, int)
    with pytest.raises(MessageNotFoundError, match="head_seq"):
        await store.load(cid, head_seq=unknown)
    with pytest.raises(InvalidInputError):
        await store.load(cid, head_seq=-1)
    with pytest.raises(ConversationNotFoundError):
        await store.load("no-such-conversation", head_seq=1)


async def test_head_seq_on_an_unbranched_conversation(store: ConversationStore) -> None:
    conv = await store.create_conversation()
    await store.append(
        conv.id,
        [
            Message.user("q"),
            Message.assistant(ToolCallPart(id="c", name="f", arguments={})),
            Message.tool_result("c", {"ok": True}),
            Message.user("next"),
        ],
    )
    earlier = await store.load(conv.id, head_seq=2)
    assert [m.seq for m in earlier.messages] == [1, 2]
    assert earlier.get_tool_call("c").status == "pending"
    assert (await store.load(conv.id)).get_tool_call("c").status == "complete"
    empty = await store.create_conversation()
    with pytest.raises(MessageNotFoundError):
        await store.load(empty.id, head_seq=1)


async def test_get_conversation_reads_the_header_alone(store: ConversationStore) -> None:
    tenant = f"acme-{uuid.uuid4().hex}"  # the PostgreSQL database is shared by the session
    conv = await store.create_conversation(title="t", tenant=tenant, metadata={"k": [1, "x"]})
    stored = await store.append(conv.id, [Message.user("a"), Message.assistant("b")])
    await store.append(conv.id, [Message.user("edit")], parent_seq=stored[0].seq)
    summary = await store.get_conversation(conv.id)
    assert isinstance(summary, ConversationSummary)
    loaded = await store.load(conv.id)
    assert (summary.id, summary.title, summary.tenant, summary.metadata) == (
        conv.id, "t", tenant, {"k": [1, "x"]},
    )  # fmt: skip
    assert summary.message_count == 3  # every branch
    assert (summary.revision, summary.updated_at, summary.created_at) == (
        loaded.revision, loaded.updated_at, loaded.created_at,
    )  # fmt: skip
    assert await store.get_conversation(conv.id, tenant=tenant) == summary
    listed = await store.list_conversations(tenant=tenant)
    assert listed == [summary]
    for tenant in ("other", None):
        if tenant is None:
            with pytest.raises(ConversationNotFoundError):
                await store.get_conversation("missing")
        else:
            with pytest.raises(ConversationNotFoundError):
                await store.get_conversation(conv.id, tenant=tenant)
    await store.delete_conversation(conv.id)
    with pytest.raises(ConversationNotFoundError):
        await store.get_conversation(conv.id)


def test_show_head_reads_another_branch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    blobs = f"{tmp_path}/blobs"

    async def build() -> tuple[str, int, int]:
        async with ConversationStore(url, blobs=blobs) as store:
            return await _two_branches(store)

    cid, _tip_a, tip_b = asyncio.run(build())
    args = ["show", cid, "--url", url, "--blobs", blobs, "--json"]
    assert cli_main([*args, "--head", str(tip_b)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "Rome" in json.dumps(document) and "celsius" not in json.dumps(document)
    assert cli_main(args) == 0
    assert "celsius" in capsys.readouterr().out
    assert cli_main(["show", cid, "--url", url, "--blobs", blobs, "--head", "99"]) != 0
    assert "head_seq" in capsys.readouterr().err
