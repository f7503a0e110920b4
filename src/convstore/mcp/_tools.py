"""The four read-only tools, on the public `ConversationStore` API with the tenant bound.

Each returns a ``CallToolResult`` itself: the JSON object (as structured content, and as text
for clients that read only text), or a tool error whose text starts with ``refused:``. The
SDK's wrapping of a raised exception hides its text, so nothing here raises for a caller's
mistake. Another tenant's ids go to the store with this server's tenant, and the store answers
them exactly as it answers ids that do not exist.

Limits (the input schemas say the same, so a larger value is refused before a tool runs):
`SEARCH_LIMIT_MAX` hits, `LIST_LIMIT_MAX` conversations, `READ_LAST_MAX` messages per call.
Images (``include_images``): at most `MAX_IMAGES` per call, each at most `MAX_IMAGE_BYTES`
and together at most `MAX_IMAGES_TOTAL` bytes; only PNG, JPEG, GIF and WebP, by what their bytes
prove. A file left out is named in a text item saying why.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Final

from mcp_types import CallToolResult, ContentBlock, ImageContent, TextContent

from convstore import (
    Conversation,
    ConversationStore,
    ConvstoreError,
    FilePart,
    InvalidInputError,
    NotFoundError,
    ToolCall,
)
from convstore.mcp._checks import quote, refused
from convstore.mcp._views import (
    call_detail,
    conversation_item,
    message_view,
    search_hit_view,
)
from convstore.media_types import SNIFF_PREFIX_BYTES, sniff

__all__ = [
    "LIST_LIMIT_MAX",
    "MAX_IMAGES",
    "MAX_IMAGES_TOTAL",
    "MAX_IMAGE_BYTES",
    "READ_LAST_MAX",
    "SEARCH_LIMIT_MAX",
    "ConversationTools",
]

SEARCH_LIMIT_MAX: Final = 50
LIST_LIMIT_MAX: Final = 100
READ_LAST_MAX: Final = 200
MAX_IMAGES: Final = 8
MAX_IMAGE_BYTES: Final = 2 * 1024 * 1024
MAX_IMAGES_TOTAL: Final = 6 * 1024 * 1024
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _success(value: Any, extra: Sequence[ContentBlock] = ()) -> CallToolResult:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text), *extra], structured_content=value
    )


def _failure(exc: ConvstoreError) -> CallToolResult:
    if isinstance(exc, NotFoundError | InvalidInputError):
        return refused(str(exc))
    # Storage trouble is the server's, not the caller's: name its kind, not its internals.
    return CallToolResult(
        content=[
            TextContent(
                type="text",
                text=f"failed: the store could not answer ({type(exc).__name__}); try again",
            )
        ],
        is_error=True,
    )


class ConversationTools:
    """The tools' bodies, bound to one store and one tenant."""

    def __init__(self, store: ConversationStore, *, tenant: str | None) -> None:
        self._store = store
        self._tenant = tenant

    async def search(
        self, query: str, conversation_id: str | None, roles: list[str] | None, limit: int
    ) -> CallToolResult:
        """``search_conversations``."""
        try:
            page = await self._store.search(
                query,
                tenant=self._tenant,
                conversation_id=conversation_id,
                roles=roles,
                limit=limit,
            )
        except ConvstoreError as exc:
            return _failure(exc)
        return _success({"hits": [search_hit_view(hit) for hit in page]})

    async def listing(
        self, limit: int, cursor: str | None, metadata: dict[str, Any] | None
    ) -> CallToolResult:
        """``list_conversations``."""
        try:
            page = await self._store.list_conversations(
                tenant=self._tenant, limit=limit, cursor=cursor, metadata=metadata
            )
        except ConvstoreError as exc:
            return _failure(exc)
        return _success(
            {
                "conversations": [conversation_item(summary) for summary in page],
                "next_cursor": page.next_cursor,
            }
        )

    async def read(
        self,
        conversation_id: str,
        last: int,
        before_seq: int | None,
        head_seq: int | None,
        include_images: bool,
    ) -> CallToolResult:
        """``read_conversation``."""
        try:
            conversation = await self._store.load(
                conversation_id,
                tenant=self._tenant,
                last=last,
                before_seq=before_seq,
                head_seq=head_seq,
            )
            images = await self._images(conversation) if include_images else []
        except ConvstoreError as exc:
            return _failure(exc)
        value = {
            "conversation": {"id": conversation.id, "title": conversation.title},
            "messages": [message_view(conversation, m) for m in conversation.messages],
        }
        return _success(value, images)

    async def tool_call(self, conversation_id: str, call_id: str) -> CallToolResult:
        """``get_tool_call``: on the active path, else on the first other branch that has it."""
        try:
            call = await self._find_call(conversation_id, call_id)
        except ConvstoreError as exc:
            return _failure(exc)
        if call is None:
            return refused(
                f"tool call {quote(call_id)} not found in conversation {quote(conversation_id)}"
            )
        return _success(call_detail(call))

    async def _find_call(self, conversation_id: str, call_id: str) -> ToolCall | None:
        active = await self._store.load(conversation_id, tenant=self._tenant)
        call = active.get_tool_call_or_none(call_id)
        if call is not None:
            return call
        for branch in await self._store.branches(conversation_id, tenant=self._tenant):
            if branch.active:
                continue
            path = await self._store.load(
                conversation_id, tenant=self._tenant, head_seq=branch.head_seq
            )
            call = path.get_tool_call_or_none(call_id)
            if call is not None:
                return call
        return None

    async def _images(self, conversation: Conversation) -> list[ContentBlock]:
        blocks: list[ContentBlock] = []
        sent = total = 0
        for message in conversation.messages:
            for part in message.files:
                skipped = _skip_reason(part, sent, total)
                label = f"file {quote(part.filename)} (sha256 {part.sha256}) of seq {message.seq}"
                if skipped is not None:
                    if part.media_type.startswith("image/"):
                        blocks.append(TextContent(type="text", text=f"{label}: {skipped}"))
                    continue
                data = await self._store.read_attachment(part, tenant=self._tenant)
                media_type = sniff(data[:SNIFF_PREFIX_BYTES])
                if media_type not in IMAGE_TYPES:
                    blocks.append(
                        TextContent(
                            type="text",
                            text=f"{label}: not shown, its bytes are "
                            "not a PNG, JPEG, GIF or WebP image",
                        )
                    )
                    continue
                blocks.append(TextContent(type="text", text=f"{label}:"))
                blocks.append(
                    ImageContent(
                        type="image",
                        data=base64.b64encode(data).decode("ascii"),
                        mime_type=media_type,
                    )
                )
                sent += 1
                total += len(data)
        return blocks


def _skip_reason(part: FilePart, sent: int, total: int) -> str | None:
    """Why ``part`` is not sent as an image (``None``: it is)."""
    if not part.media_type.startswith("image/"):
        return "not an image"
    if part.attachment is None:
        return "not shown, it is not stored here (an external URI)"
    size = part.attachment.size
    if size > MAX_IMAGE_BYTES:
        return f"not shown, {size} bytes is above the {MAX_IMAGE_BYTES}-byte cap per image"
    if sent >= MAX_IMAGES:
        return f"not shown, a call returns at most {MAX_IMAGES} images"
    if total + size > MAX_IMAGES_TOTAL:
        return f"not shown, the images of one call stay under {MAX_IMAGES_TOTAL} bytes"
    return None
