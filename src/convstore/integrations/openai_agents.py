"""openai-agents sessions stored in convstore: `ConvstoreSession`.

``ConvstoreSession`` implements the openai-agents ``Session`` protocol (``get_items``,
``add_items``, ``pop_item``, ``clear_session``, ``session_settings``, and the ``wrapper``
keyword the runner passes to sessions that accept it). Install with
``pip install convstore[openai-agents]``; this module is the only one that imports ``agents``.

Invariants:

- One session item is one stored message of the conversation whose id is the session id
  (created on the first write, so ``store.load(session_id)`` works).
- Items come back exactly as added (JSON equality): the SDK fingerprints items to rewind
  retries. The item is kept as the message's `NativeRecord` (format ``openai-agents``); every
  inline ``data:`` URL that becomes a canonical file (``input_image``, ``input_file``, a
  computer screenshot, in messages and tool outputs) is cut out of the record and its bytes
  stored once as a blob, then put back as the same data URL on read. Image bytes added through
  a session never reach the database.
- The canonical parts drive everything else: ``function_call`` / ``function_call_output``
  (and computer and custom tool calls) are tool calls and results, so tool lifecycles,
  ``store.render`` to any other provider, ``fork`` and ``compact`` work; reasoning items are
  thinking parts; items with no canonical form (hosted tool calls, compaction, references)
  are assistant messages with no parts, kept for the SDK only.
- The session refuses nothing a list would keep: a repeated call id (a replayed turn) is
  stored with its record and no second canonical call, and a second, different output for a
  call is kept as history while the call keeps its first result (``on_conflict="keep-first"``).
- A session opened with ``url=`` owns a private store on a background loop thread
  (`convstore.sync.ConversationStore`), so it works from any event loop or thread the SDK runs
  it on (``Runner.run_sync`` makes its own loop) and ``close()`` is synchronous like
  ``SQLiteSession.close()``. A session given ``store=`` uses that open async store on the
  caller's loop and never closes it.
- Writes (``add_items``, ``pop_item``, ``clear_session``) run to completion even when the
  caller is cancelled, which is then re-raised: the outcome of a mutation is never unknown.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from agents.memory.session_settings import SessionSettings, coerce_session_settings
from pydantic import JsonValue

from convstore.db import DEFAULT_URL
from convstore.errors import (
    ConversationNotFoundError,
    InvalidInputError,
    MediaTypeMismatchError,
    ToolCallConflictError,
)
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    NativeRecord,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
)
from convstore.providers._parsing import Json, parse_data_url
from convstore.store import ConversationStore
from convstore.sync import ConversationStore as SyncConversationStore

__all__ = ["NATIVE_FORMAT", "ConvstoreSession", "TenantResolver"]

NATIVE_FORMAT: Final = "openai-agents"
"""`NativeRecord.format` of the items a `ConvstoreSession` stores."""

TenantResolver = Callable[[Any], str | None]
"""Given a run's context object (``wrapper.context``), the tenant its session belongs to."""

Item = dict[str, Any]
_T = TypeVar("_T")
_OCTET_STREAM: Final = "application/octet-stream"


class ConvstoreSession:
    """An openai-agents ``Session`` whose history is a convstore conversation.

    Args:
        session_id: the session, and the id of its conversation (1 to 64 characters).
        store: an open async `ConversationStore` to share (used on the caller's event loop,
            never closed by the session).
        url: without ``store``, the database URL of a store the session owns: opened on first
            use, released by `close`. Default: convstore's default SQLite file.
        tenant: the tenant the conversation belongs to; or a function of the run context
            (``wrapper.context``) returning it, for one session object shared by tenants.
        session_settings: ``SessionSettings`` (or a dict of its fields); ``limit`` is the
            default of ``get_items``.
    """

    def __init__(
        self,
        session_id: str,
        store: ConversationStore | None = None,
        url: str | None = None,
        tenant: str | TenantResolver | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if store is not None and url is not None:
            raise InvalidInputError("pass store= or url=, not both")
        self.session_id = session_id
        if isinstance(session_settings, Mapping):
            session_settings = dict(session_settings)
        self.session_settings: SessionSettings = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )
        self._shared = store
        self._owned = None if store is not None else SyncConversationStore(url or DEFAULT_URL)
        self._tenant = tenant

    # -- the Session protocol -------------------------------------------------------------------

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Item]:
        """The session's items, oldest first; with ``limit``, only the newest ``limit``."""
        if limit is None:
            limit = self.session_settings.limit
        if limit is not None and limit == 0:
            return []
        last = limit if limit is not None and limit > 0 else None
        tenant = self._tenant_for(wrapper)

        async def read(store: ConversationStore) -> list[Item]:
            try:
                conversation = await store.load(self.session_id, tenant=tenant, last=last)
            except ConversationNotFoundError:
                return []
            return await _items(store, conversation.messages)

        return await self._run(read)

    async def add_items(self, items: list[Item], *, wrapper: Any = None) -> None:
        """Append items (atomically: all of them or none)."""
        if not items:
            return
        messages = _first_calls_only([_message(item) for item in items], set())
        tenant = self._tenant_for(wrapper)

        async def write(store: ConversationStore) -> None:
            try:
                await _append(store, self.session_id, messages, tenant)
            except ToolCallConflictError:
                # An item repeats a stored call id: that item keeps its record only.
                stored = await store.load(self.session_id, tenant=tenant)
                known = {call.id for call in stored.tool_calls}
                await _append(store, self.session_id, _first_calls_only(messages, known), tenant)

        await _complete(self._run(write))

    async def pop_item(self, *, wrapper: Any = None) -> Item | None:
        """Remove the newest item and return it; ``None`` when the session is empty."""
        tenant = self._tenant_for(wrapper)

        async def pop(store: ConversationStore) -> Item | None:
            try:
                popped = await store.pop(self.session_id, tenant=tenant)
            except (ConversationNotFoundError, InvalidInputError):
                return None  # no conversation yet, or nothing on it (pop's only bad input)
            return await _item(store, popped)

        return await _complete(self._run(pop))

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Delete every item (the conversation itself; the next write starts it again)."""
        tenant = self._tenant_for(wrapper)

        async def clear(store: ConversationStore) -> None:
            with contextlib.suppress(ConversationNotFoundError):
                await store.delete_conversation(self.session_id, tenant=tenant)

        await _complete(self._run(clear))

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the store the session owns (if it owns one); safe to call again."""
        if self._owned is not None:
            self._owned.close()

    async def __aenter__(self) -> ConvstoreSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------------

    def _tenant_for(self, wrapper: Any) -> str | None:
        if not callable(self._tenant):
            return self._tenant
        if wrapper is None:
            raise InvalidInputError(
                "this session resolves its tenant from the run context: "
                "call it through the Runner, or pass wrapper="
            )
        return self._tenant(wrapper.context)

    async def _run(self, work: Callable[[ConversationStore], Awaitable[_T]]) -> _T:
        if self._shared is not None:
            return await work(self._shared)
        owned = self._owned
        assert owned is not None  # one of the two is always set
        if owned.closed:
            await asyncio.to_thread(owned.open)  # opening may migrate: keep it off the loop

        async def on_store_loop() -> _T:
            return await work(owned.async_store)

        future = asyncio.run_coroutine_threadsafe(on_store_loop(), owned.loop)
        return await asyncio.wrap_future(future)


async def _append(
    store: ConversationStore, session_id: str, messages: list[Message], tenant: str | None
) -> None:
    # keep-first: a second, different output for a call is kept as history, as a list-backed
    # session would keep it, instead of refusing the batch.
    try:
        await store.append(session_id, messages, tenant=tenant, on_conflict="keep-first")
    except ConversationNotFoundError:
        await store.get_or_create_conversation(session_id, tenant=tenant)
        await store.append(session_id, messages, tenant=tenant, on_conflict="keep-first")


async def _complete(operation: Awaitable[_T]) -> _T:
    """Await a write to its end even if the caller is cancelled meanwhile; then re-raise."""
    task = asyncio.ensure_future(operation)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # the caller is gone: mark the outcome seen, report the cancel
        raise cancelled
    return task.result()


# -- items -> messages ----------------------------------------------------------------------------


@dataclass
class _Cut:
    """A data URL cut out of an item: where it was, its prefix, and which file holds it."""

    path: list[str | int]
    prefix: str
    file: int

    def dump(self) -> JsonValue:
        return {"path": list(self.path), "prefix": self.prefix, "file": self.file}


class _Builder:
    """Collects the files an item's canonical parts take out of its record."""

    def __init__(self) -> None:
        self.cuts: list[_Cut] = []
        self.files = 0

    def file(
        self, url: Any, path: list[str | int], media_type: str | None, *, bare: bool = False
    ) -> FilePart | None:
        """The canonical file for an image/file URL at ``path`` (cut out when inline).

        ``bare``: the field may also hold plain base64 (``input_file.file_data``).
        """
        if not isinstance(url, str):
            return None
        inline = _data_url(url)
        if inline is None and bare:
            inline = _bare_base64(url)
        if inline is None:
            if url.startswith(("http://", "https://", "gs://", "s3://")):
                self.files += 1
                return FilePart.from_uri(url, media_type=media_type)
            return None
        prefix, declared, data = inline
        try:
            part = FilePart.from_bytes(data, media_type=declared or media_type)
        except MediaTypeMismatchError:
            # The label is the item's business: the record restores it exactly either way.
            part = FilePart.from_bytes(data, media_type=_OCTET_STREAM)
        self.cuts.append(_Cut(path, prefix, self.files))
        self.files += 1
        return part


def _bare_base64(text: str) -> tuple[str, str | None, bytes] | None:
    """("", None, bytes) of plain canonical base64 text (re-encodes to the same text)."""
    if len(text) < 8 or len(text) % 4:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ("", None, data) if base64.b64encode(data).decode("ascii") == text else None


def _data_url(url: str) -> tuple[str, str | None, bytes] | None:
    """(prefix, media type, bytes) of a base64 data URL that re-encodes to the same text."""
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",")
    if comma < 0 or not url[:comma].lower().endswith(";base64"):
        return None
    try:
        parsed = parse_data_url(url, Json(url, NATIVE_FORMAT))
    except InvalidInputError:
        return None
    if parsed is None:
        return None
    declared, data = parsed
    try:
        exact = base64.b64encode(data).decode("ascii") == url[comma + 1 :]
    except (binascii.Error, ValueError):
        exact = False
    return (url[: comma + 1], declared, data) if exact else None


def _message(item: Any) -> Message:
    """The stored form of one session item: canonical parts plus the item as native record."""
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"a session item is a JSON object, got {type(item).__name__}")
    item = dict(item)
    builder = _Builder()
    role, parts = _canonical(item, builder)
    record: Item = {"item": item}
    if builder.cuts:
        stripped = copy.deepcopy(item)
        for cut in builder.cuts:
            _set(stripped, cut.path, "")
        record = {"item": stripped, "files": [cut.dump() for cut in builder.cuts]}
    try:
        native = NativeRecord(format=NATIVE_FORMAT, data=record)
    except ValueError as exc:
        raise InvalidInputError(f"a session item must be JSON: {exc}") from exc
    return Message(role=role, parts=parts, native=native)


def _first_calls_only(messages: list[Message], seen: set[str]) -> list[Message]:
    """The messages with every call whose id is in ``seen`` (or repeats one) left to the record.

    Call ids are unique per conversation; the SDK may still hand the same call item twice
    (a replayed turn). The repeat is stored with its record and no canonical call.
    """
    out = []
    for message in messages:
        parts = [p for p in message.parts if not (isinstance(p, ToolCallPart) and p.id in seen)]
        seen.update(p.id for p in parts if isinstance(p, ToolCallPart))
        out.append(
            message
            if len(parts) == len(message.parts)
            else message.model_copy(update={"parts": parts})
        )
    return out


def _canonical(item: Item, builder: _Builder) -> tuple[Role, list[Part]]:
    kind = item.get("type")
    if kind in (None, "message") and "role" in item:
        return _message_parts(item, builder)
    match kind:
        case "function_call" | "custom_tool_call" | "computer_call":
            call = _call(item, kind)
            return Role.ASSISTANT, ([] if call is None else [call])
        case "function_call_output" | "custom_tool_call_output" | "computer_call_output":
            result = _result(item, builder)
            if result is not None:
                return Role.TOOL, [result]
        case "reasoning":
            return Role.ASSISTANT, [_reasoning(item)]
        case _:
            pass
    return Role.ASSISTANT, []  # hosted tools, compaction, references: the record alone


def _message_parts(item: Item, builder: _Builder) -> tuple[Role, list[Part]]:
    role = item.get("role")
    content = item.get("content")
    parts: list[Part] = []
    if isinstance(content, str):
        parts.append(TextPart(text=content))
    elif isinstance(content, list):
        for index, entry in enumerate(content):
            if not isinstance(entry, Mapping):
                continue
            part = _content(entry, ["content", index], builder)
            if part is not None:
                parts.append(part)
    if role == "user":
        return Role.USER, parts
    if role in ("system", "developer"):
        return Role.SYSTEM, [p for p in parts if isinstance(p, TextPart)]
    return Role.ASSISTANT, parts


def _content(entry: Mapping[str, Any], path: list[str | int], builder: _Builder) -> Any:
    kind = entry.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(entry.get("text"), str):
        return TextPart(text=entry["text"])
    if kind == "refusal" and isinstance(entry.get("refusal"), str):
        return TextPart(text=entry["refusal"])
    if kind == "input_image":
        return builder.file(entry.get("image_url"), [*path, "image_url"], None)
    if kind == "input_file":
        part = builder.file(entry.get("file_data"), [*path, "file_data"], None, bare=True)
        if part is None:
            part = builder.file(entry.get("file_url"), [*path, "file_url"], None)
        filename = entry.get("filename")
        if part is not None and isinstance(filename, str):
            part = part.model_copy(update={"filename": filename})
        return part
    return None


def _call(item: Item, kind: str) -> ToolCallPart | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not 0 < len(call_id) <= 255:
        return None
    name: Any
    arguments: dict[str, Any]
    raw: Any
    if kind == "computer_call":
        name, arguments, raw = "computer", {"action": item.get("action")}, None
    elif kind == "custom_tool_call":
        name, arguments, raw = item.get("name"), {"input": item.get("input")}, None
    else:
        name, arguments, raw = item.get("name"), {}, item.get("arguments")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            arguments, raw = parsed, None
    if not isinstance(name, str) or not 0 < len(name) <= 255:
        return None
    return ToolCallPart(
        id=call_id,
        name=name,
        arguments=arguments,
        raw_arguments=raw if isinstance(raw, str) else None,
    )


def _result(item: Item, builder: _Builder) -> ToolResultPart | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not 0 < len(call_id) <= 255:
        return None
    output = item.get("output")
    value: ToolOutput
    if item.get("type") == "computer_call_output" and isinstance(output, Mapping):
        shot = builder.file(output.get("image_url"), ["output", "image_url"], None)
        value = ContentOutput(parts=[shot]) if shot is not None else JsonOutput(value=None)
    elif isinstance(output, list):
        parts = [_content(e, ["output", i], builder) if isinstance(e, Mapping) else None
                 for i, e in enumerate(output)]  # fmt: skip
        value = ContentOutput(parts=[p for p in parts if isinstance(p, TextPart | FilePart)])
    elif isinstance(output, str):
        value = JsonOutput(value=output)
    else:
        value = ErrorOutput(message="no output") if output is None else JsonOutput(value=output)
    return ToolResultPart(call_id=call_id, output=value)


def _reasoning(item: Item) -> ThinkingPart:
    summary = [
        entry["text"]
        for entry in item.get("summary") or []
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str)
    ]
    item_id = item.get("id")
    encrypted = item.get("encrypted_content")
    return ThinkingPart(
        text="\n\n".join(summary),
        provider="openai",
        reasoning_id=item_id if isinstance(item_id, str) else None,
        encrypted_content=encrypted if isinstance(encrypted, str) else None,
        summary=summary or None,
    )


def _set(node: Any, path: Sequence[str | int], value: str) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


# -- messages -> items ----------------------------------------------------------------------------


async def _items(store: ConversationStore, messages: list[Message]) -> list[Item]:
    """The session items stored messages stand for, data URLs restored, oldest first."""
    items: list[Item] = []
    for message in messages:
        item = _plain_item(message)
        items.append(item if item is not None else await _item(store, message))
    return items


def _plain_item(message: Message) -> Item | None:
    """The record of a message whose item needs no bytes put back (the common case), else None.

    Returned as loaded, not copied: each load builds its own messages, so nobody else holds it.
    """
    native = message.native
    if native is None or native.format != NATIVE_FORMAT or not isinstance(native.data, dict):
        return None
    record = native.data
    item = record.get("item")
    return item if isinstance(item, dict) and not record.get("files") else None


async def _item(store: ConversationStore, message: Message) -> Item:
    """The session item a stored message stands for, data URLs restored."""
    native = message.native
    if native is None or native.format != NATIVE_FORMAT or not isinstance(native.data, dict):
        return await _foreign_item(store, message)
    record = native.data
    item = record["item"]
    assert isinstance(item, dict)
    cuts = record.get("files")
    if isinstance(cuts, list):
        files = message.files
        for cut in cuts:
            assert isinstance(cut, dict)
            # tenant=None: the caller already loaded the message under its tenant.
            data = await store.read_attachment(files[cut["file"]])  # type: ignore[index]
            text = str(cut["prefix"]) + base64.b64encode(data).decode("ascii")
            _set(item, cut["path"], text)  # type: ignore[arg-type]
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
