"""openai-agents session reads from the native records, on every database.

``read_items`` and ``pop_newest`` (what `ConvstoreSession.get_items` and ``pop_item`` run) read
the stored items themselves and take the typed path only from the first message whose record
is missing or had bytes cut out to blobs. Whatever they read, they must give exactly what the
typed path gives (``to_items`` over ``store.load``) and what was added: for every item kind the
SDK stores, realistic-size images in both base64 alphabets, windows, pops and branches. The
two modules import no ``agents``, so these run in the main environment on SQLite and
PostgreSQL (their package's ``__init__``, the session, does import it: `_without_the_session`);
the session itself is tested in ``test_openai_agents.py`` (``make pytest-agents``).
"""

from __future__ import annotations

import base64
import copy
import importlib
import os
import sys
import types
import zlib
from pathlib import Path
from typing import Any

import convstore.integrations
from convstore import (
    ContentOutput,
    ConversationStore,
    FilePart,
    Message,
    MissingDependencyError,
    NativeRecord,
    TextPart,
)

PACKAGE = "convstore.integrations.openai_agents"


def _without_the_session(*names: str) -> list[types.ModuleType]:
    """``PACKAGE``'s modules ``names``, imported where ``agents`` is not installed.

    Importing a submodule runs its package's ``__init__`` first, and that one (the session)
    imports ``agents``. Where it is missing, the package is stood in for while ``names`` import
    and is taken out of ``sys.modules`` again, so nothing else in this process sees the stand-in.
    """
    try:
        importlib.import_module(PACKAGE)
    except MissingDependencyError:
        pass
    else:
        return [importlib.import_module(f"{PACKAGE}.{name}") for name in names]
    stand_in = types.ModuleType(PACKAGE)
    stand_in.__path__ = [str(Path(convstore.integrations.__file__).parent / "openai_agents")]
    sys.modules[PACKAGE] = stand_in
    try:
        return [importlib.import_module(f"{PACKAGE}.{name}") for name in names]
    finally:
        for name in [PACKAGE, *(f"{PACKAGE}.{name}" for name in names)]:
            sys.modules.pop(name, None)


_items, _reads = _without_the_session("_items", "_reads")
first_calls_only, to_message = _items.first_calls_only, _items.to_message
pop_newest, read_items, to_items = _reads.pop_newest, _reads.read_items, _reads.to_items


def png(width: int, height: int) -> bytes:
    """A real (noisy, so incompressible) RGB PNG: ~3 bytes per pixel."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return len(body).to_bytes(4, "big") + kind + body + crc.to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 1))
        + chunk(b"IEND", b"")
    )


PHOTO = png(256, 200)  # ~150 KB, a screenshot-sized image
SHOT = png(120, 90)


def data_url(data: bytes, media_type: str = "image/png", *, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return f"data:{media_type};base64,{encode(data).decode()}"


ITEMS: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Answer in English."}]},
    {"content": "Plain user text.", "role": "user"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is on these?"},
            {"type": "input_image", "image_url": data_url(PHOTO), "detail": "high"},
            {"type": "input_image", "image_url": data_url(SHOT, urlsafe=True), "detail": "low"},
            {"type": "input_file", "file_data": data_url(b"%PDF-1.4\n" + os.urandom(2000),
                                                           "application/pdf"),
             "filename": "report.pdf"},
            {"type": "input_image", "image_url": "https://cdn.example/x.png", "detail": "auto"},
        ],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look."}],
     "encrypted_content": "gAAAAB" + "x" * 400},
    {"arguments": '{"city": "Oslo"}', "call_id": "call_1", "name": "weather",
     "type": "function_call", "id": "fc_1", "status": "completed"},
    {"call_id": "call_1", "output": '{"temp": 3}', "type": "function_call_output"},
    {"type": "function_call", "call_id": "call_2", "name": "screenshot", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "the screen"},
                {"type": "input_image", "image_url": data_url(SHOT), "detail": "auto"}]},
    {"type": "custom_tool_call", "call_id": "call_3", "name": "patch", "input": "*** diff"},
    {"type": "custom_tool_call_output", "call_id": "call_3", "output": "applied"},
    {"type": "computer_call", "call_id": "call_4", "id": "cu_1", "status": "completed",
     "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
     "pending_safety_checks": []},
    {"type": "computer_call_output", "call_id": "call_4",
     "output": {"type": "computer_screenshot", "image_url": data_url(PHOTO)}},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "oslo"}},
    {"id": "msg_1", "content": [{"annotations": [], "text": "It is 3 degrees.",
                                 "type": "output_text", "logprobs": []}],
     "role": "assistant", "status": "completed", "type": "message"},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-summary"},
]  # fmt: skip


async def add(
    store: ConversationStore, cid: str, items: list[dict[str, Any]], **kwargs: Any
) -> None:
    """Store items as `ConvstoreSession.add_items` does."""
    messages = first_calls_only([to_message(copy.deepcopy(i)) for i in items], set())
    await store.append(cid, messages, on_conflict="keep-first", **kwargs)


async def typed(store: ConversationStore, cid: str, last: int | None = None) -> list[Any]:
    """The items as the typed path builds them."""
    return await to_items(store, (await store.load(cid, last=last)).messages)


async def test_every_item_kind_reads_back_exactly_whole_and_windowed(
    store: ConversationStore,
) -> None:
    await store.get_or_create_conversation("s")
    await add(store, "s", ITEMS)
    assert await read_items(store, "s", None, None) == ITEMS
    assert await typed(store, "s") == ITEMS
    for last in (1, 2, 5, 8, 13, len(ITEMS), 100):
        assert await read_items(store, "s", None, last) == ITEMS[-last:]
        assert await typed(store, "s", last) == ITEMS[-last:]
    assert await read_items(store, "missing", None, None) == []


async def test_items_written_through_the_store_api_read_like_the_typed_path(
    store: ConversationStore,
) -> None:
    await store.get_or_create_conversation("mixed")
    await add(store, "mixed", ITEMS[:3])
    await store.append(
        "mixed",
        Message.user(TextPart(text="no record"), FilePart.from_bytes(SHOT)),
    )
    await add(store, "mixed", ITEMS[5:7])
    native = await read_items(store, "mixed", None, None)
    assert native == await typed(store, "mixed")
    assert native[:3] == ITEMS[:3]
    assert native[3] == {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "no record"},
            {"type": "input_image", "image_url": data_url(SHOT), "detail": "auto"},
        ],
    }
    assert native[4:] == ITEMS[5:7]
    for last in (1, 2, 3, 4):
        assert await read_items(store, "mixed", None, last) == native[-last:]


async def test_pops_return_the_newest_item_and_leave_the_rest(store: ConversationStore) -> None:
    await store.get_or_create_conversation("p", tenant="acme")
    await add(store, "p", ITEMS, tenant="acme")
    popped = []
    for _ in range(len(ITEMS)):
        popped.append(await pop_newest(store, "p", "acme"))
        rest = ITEMS[: len(ITEMS) - len(popped)]
        if len(popped) % 4 == 0:
            assert await read_items(store, "p", "acme", None) == rest
    assert popped == ITEMS[::-1]
    assert await pop_newest(store, "p", "acme") is None
    assert await pop_newest(store, "p", "other") is None
    assert await read_items(store, "p", "acme", None) == []


async def test_a_branched_conversation_reads_its_active_path(store: ConversationStore) -> None:
    await store.get_or_create_conversation("b")
    await add(store, "b", ITEMS[:8])
    edited = [{"role": "user", "content": "edited question"}, ITEMS[-2]]
    await add(store, "b", edited, parent_seq=3)
    path = [*ITEMS[:3], *edited]
    assert await read_items(store, "b", None, None) == path == await typed(store, "b")
    assert await read_items(store, "b", None, 2) == edited
    await store.switch_branch("b", head_seq=8)
    assert await read_items(store, "b", None, None) == ITEMS[:8]
    assert await read_items(store, "b", None, 3) == ITEMS[5:8]
    assert await pop_newest(store, "b", None) == ITEMS[7]
    assert await read_items(store, "b", None, None) == ITEMS[:7] == await typed(store, "b")


async def test_a_completed_call_result_through_the_store_reads_as_an_output_item(
    store: ConversationStore,
) -> None:
    await store.get_or_create_conversation("c")
    await add(store, "c", [{"type": "function_call", "call_id": "c1", "name": "f",
                            "arguments": "{}"}])  # fmt: skip
    output = ContentOutput(parts=[TextPart(text="t"), FilePart.from_bytes(PHOTO)])
    await store.complete_tool_call("c", "c1", output)
    items = await read_items(store, "c", None, None)
    assert items == await typed(store, "c")
    assert items[-1]["output"][1]["image_url"] == data_url(PHOTO)


async def test_records_of_earlier_releases_read_back_exactly(store: ConversationStore) -> None:
    """A record whose bytes were cut out by JSON path (``"files"``) still reads back whole."""
    shot = data_url(SHOT)
    item = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "and this?"},
            {"type": "input_image", "image_url": shot, "detail": "auto"},
        ],
    }
    cut = copy.deepcopy(item)
    cut["content"][1]["image_url"] = ""
    legacy = Message.user(
        "and this?",
        FilePart.from_bytes(SHOT, media_type="image/png"),
        native=NativeRecord(
            format="openai-agents",
            data={
                "item": cut,
                "files": [
                    {
                        "path": ["content", 1, "image_url"],
                        "prefix": "data:image/png;base64,",
                        "file": 0,
                    }
                ],
            },
        ),
    )
    conv = await store.create_conversation()
    await store.append(conv.id, legacy)
    await add(store, conv.id, [ITEMS[2]])
    assert await read_items(store, conv.id, None, None) == [item, ITEMS[2]]
    assert await typed(store, conv.id) == [item, ITEMS[2]]
    assert await pop_newest(store, conv.id, None) == ITEMS[2]
    assert await pop_newest(store, conv.id, None) == item
