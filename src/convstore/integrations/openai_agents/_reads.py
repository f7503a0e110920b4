"""Stored messages back to openai-agents session items (used by `openai_agents`).

No ``agents`` import here: items are plain JSON dicts, as the SDK hands them to sessions.

Invariants:

- `read_items` and `pop_newest` read items straight from their native records (written by
  `convstore.integrations.openai_agents._items.to_message`), putting the blob placeholders'
  bytes back by content hash; `to_items` / `item_of` do the same from typed messages, and give
  a message written through the store API instead, without a record, the equivalent item.
- A record written before placeholders (bytes cut out by JSON path, listed under ``"files"``)
  is read through its typed message, whose files hold the bytes.
- Every item is read at one revision of the conversation; a pop removes only what it read.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

from pydantic import JsonValue

from convstore.errors import ConversationNotFoundError, RevisionConflictError
from convstore.integrations._core.native_record import restore_from
from convstore.integrations.openai_agents._items import (
    BLOBS_KEY,
    CUT_BY_PATH_KEY,
    NATIVE_FORMAT,
    Item,
    set_at,
)
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Part,
    Role,
    TextPart,
    ToolOutput,
)
from convstore.store import ConversationStore

__all__ = ["item_of", "plain_item", "pop_newest", "read_items", "to_items"]


def plain_item(data: JsonValue) -> Item | None:
    """The item a native record's data holds, as stored (placeholders for its bytes); or None.

    ``data`` is the `NativeRecord.data` of a stored item (a ``load_native`` entry's data, as
    read: the caller owns it). None for a record whose bytes were cut out by JSON path (they
    are found through the typed message) or for data that is not such a record.
    """
    if not isinstance(data, dict) or CUT_BY_PATH_KEY in data:
        return None
    item = data.get("item")
    return item if isinstance(item, dict) else None


def _has_blobs(data: JsonValue) -> bool:
    return isinstance(data, dict) and data.get(BLOBS_KEY) is True


async def _with_bytes(store: ConversationStore, items: list[Item], blobbed: list[int]) -> None:
    """Put the bytes back into the items at ``blobbed`` (their placeholders), in place."""
    if not blobbed:
        return
    restored = await restore_from(store, [items[i] for i in blobbed], "standard")
    for index, item in zip(blobbed, restored, strict=True):
        assert isinstance(item, dict)
        items[index] = item


async def read_items(
    store: ConversationStore, session_id: str, tenant: str | None, last: int | None
) -> list[Item]:
    """The session's items (the newest ``last``), oldest first; ``[]`` for no conversation.

    The stored records themselves (`ConversationStore.load_native`), as far as they are plain;
    from the first message whose record is missing or had bytes cut out on, the typed path
    (`to_items`), which finds those files. Both halves are read at one revision.
    """
    while True:
        try:
            path = await store.load_native(
                session_id, format=NATIVE_FORMAT, tenant=tenant, last=last
            )
        except ConversationNotFoundError:
            return []
        items: list[Item] = []
        blobbed: list[int] = []
        for _seq, _id, data in path:
            item = plain_item(data)
            if item is None:
                break
            if _has_blobs(data):
                blobbed.append(len(items))
            items.append(item)
        else:
            await _with_bytes(store, items, blobbed)
            return items
        tail = await store.load(session_id, tenant=tenant, last=len(path) - len(items))
        if tail.revision == path.revision:
            await _with_bytes(store, items, blobbed)
            return items + await to_items(store, tail.messages)
        # Written in between: read again, so that the two halves are of one history.


async def pop_newest(store: ConversationStore, session_id: str, tenant: str | None) -> Item | None:
    """Remove the newest item and return it; ``None`` when there is none.

    The item is read before it is removed (once its row is gone, so are the references that
    lead ``read_attachment`` to its bytes), and removed only if nothing was written since it
    was read (``expected_revision``); a write in between means looking again.
    """
    while True:
        try:
            newest = await store.load_native(
                session_id, format=NATIVE_FORMAT, tenant=tenant, last=1
            )
        except ConversationNotFoundError:
            return None
        if not newest:
            return None
        data = newest[-1][2]
        item, revision = plain_item(data), newest.revision
        if item is not None and _has_blobs(data):
            items = [item]
            await _with_bytes(store, items, [0])
            item = items[0]
        if item is None:  # bytes cut out by path, or no record: the typed path
            head = await store.load(session_id, tenant=tenant, last=1)
            if not head.messages:
                return None
            item, revision = await item_of(store, head.messages[-1]), head.revision
        try:
            await store.pop(session_id, tenant=tenant, expected_revision=revision)
        except RevisionConflictError:
            continue
        return item


async def to_items(store: ConversationStore, messages: list[Message]) -> list[Item]:
    """The session items stored messages stand for, data URLs restored, oldest first."""
    return [await item_of(store, message) for message in messages]


async def item_of(store: ConversationStore, message: Message) -> Item:
    """The session item a stored message stands for, data URLs restored.

    A copy: a loaded message may be shared (kept by the store for the next load).
    """
    native = message.native
    if native is None or native.format != NATIVE_FORMAT or not isinstance(native.data, dict):
        return await _foreign_item(store, message)
    record = native.data
    item = copy.deepcopy(record["item"])
    assert isinstance(item, dict)
    if _has_blobs(record):
        items = [item]
        await _with_bytes(store, items, [0])
        return items[0]
    cuts = record.get(CUT_BY_PATH_KEY)
    if isinstance(cuts, list):
        files = message.files
        for cut in cuts:
            assert isinstance(cut, dict)
            # tenant=None: the caller already loaded the message under its tenant.
            data = await store.read_attachment(files[cut["file"]])  # type: ignore[index]
            text = str(cut["prefix"]) + base64.b64encode(data).decode("ascii")
            set_at(item, cut["path"], text)  # type: ignore[arg-type]
    return item


async def _foreign_item(store: ConversationStore, message: Message) -> Item:
    """A message written through the store API (no item of its own) in the SDK's item shape."""
    if message.role is Role.TOOL:
        (result, *_) = message.tool_results
        return {
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": await _output_item(store, result.output),
        }
    if message.role is Role.ASSISTANT and message.tool_calls:
        call = message.tool_calls[0]
        return {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.raw_arguments or json.dumps(call.arguments),
        }
    role = {"system": "system", "user": "user"}.get(message.role.value, "assistant")
    if role == "assistant":
        return {"role": "assistant", "content": message.text}
    content = [await _input_content(store, p) for p in message.parts]
    return {"role": role, "content": [c for c in content if c is not None]}


async def _output_item(store: ConversationStore, output: ToolOutput) -> Any:
    match output:
        case JsonOutput(value=str() as text):
            return text
        case JsonOutput():
            return json.dumps(output.value)
        case ErrorOutput():
            return output.message
        case ContentOutput():
            return [c for p in output.parts if (c := await _input_content(store, p)) is not None]


async def _input_content(store: ConversationStore, part: Part) -> Item | None:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if not isinstance(part, FilePart):
        return None
    if part.uri is not None:
        url = part.uri
    else:
        data = await store.read_attachment(part)
        url = f"data:{part.media_type};base64,{base64.b64encode(data).decode('ascii')}"
    if part.media_type.startswith("image/"):
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    entry: Item = {"type": "input_file", "file_data": url}
    if part.filename is not None:
        entry["filename"] = part.filename
    return entry
