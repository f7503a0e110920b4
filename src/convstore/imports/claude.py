"""Claude.ai's data export: ``conversations.json``, a list of conversations.

Each conversation (``uuid``, ``name``, ``created_at``, ``chat_messages``) lists its messages
(``uuid``, ``sender`` ``human``/``assistant``, ``text``, ``content`` blocks, ``attachments``,
``files``, ``created_at``). The conversation id is ``claude-<uuid>``.

- Order: by ``parent_message_uuid`` where the export has it (then edits and regenerations are
  branches, and the head is ``current_leaf_message_uuid``, else the newest leaf); otherwise
  one path in ``created_at`` order (exports can list a message out of order).
- Content blocks: ``text``; ``thinking`` (with its summaries) as thinking; ``tool_use`` as a
  tool call; ``tool_result`` as the call's result. The export puts results inside the
  assistant's message, so such a message is stored as a chain: assistant (text, thinking,
  calls) → tool (results) → assistant..., with ids ``<uuid>``, ``<uuid>.1``, ``<uuid>.2``...;
  the next message follows the last of the chain.
- ``attachments`` (pasted or uploaded documents) are text files of their ``extracted_content``;
  ``files`` (images, PDFs: the export has no bytes) are file parts whose ``uri`` names them
  (``claude-file:<uuid or name>``), counted as not in the export; ``image`` blocks with base64
  data are files.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    ToolResultPart,
)

from ._common import (
    asset_part,
    data_url_part,
    details,
    exported_tree,
    inline_part,
    iso_time,
    list_of,
    make_message,
    required_id,
    text_of,
)
from ._driver import TreeFormat
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree, Node

__all__ = ["FORMAT", "convert"]

_PROVIDER: Final = "anthropic"
_NO_PARENT: Final = "00000000-0000-4000-8000-000000000000"


def convert(element: Any, source: ExportSource, unmapped: Counter[str]) -> ConversationTree:
    """One conversation of the export as a tree."""
    if not isinstance(element, dict) or not isinstance(element.get("chat_messages"), list):
        raise ConversationShapeError("not a Claude conversation: no 'chat_messages' list")
    source_id = required_id(element.get("uuid"), "a Claude conversation without a uuid")
    name = element.get("name")
    tree = exported_tree(
        "claude",
        FORMAT.name,
        source_id,
        name if isinstance(name, str) and name else None,
        created_at=iso_time(element.get("created_at")),
        updated_at=iso_time(element.get("updated_at")),
        summary=element.get("summary") if isinstance(element.get("summary"), str) else None,
        model=element.get("model") if isinstance(element.get("model"), str) else None,
    )
    raw = [
        m
        for m in element["chat_messages"]
        if isinstance(m, dict) and isinstance(m.get("uuid"), str)
    ]
    if len(raw) < len(element["chat_messages"]):
        unmapped["message without a uuid"] += len(element["chat_messages"]) - len(raw)
    seen: set[str] = set()
    unique = []
    for m in raw:
        if m["uuid"] in seen:
            unmapped["repeated message"] += 1
            continue
        seen.add(m["uuid"])
        unique.append(m)
    # Stable by time: ties keep the export's order.
    by_time = sorted(unique, key=lambda m: iso_time(m.get("created_at")) or "")
    linked = any("parent_message_uuid" in m for m in unique)
    previous: str | None = None
    for m in by_time:
        if linked:
            parent = m.get("parent_message_uuid")
            parent = parent if isinstance(parent, str) and parent != _NO_PARENT else None
        else:
            parent = previous
        model = element.get("model") if isinstance(element.get("model"), str) else None
        tree.nodes.append(Node(m["uuid"], parent, _messages(m, model, source, unmapped)))
        previous = m["uuid"]
    leaf = element.get("current_leaf_message_uuid")
    if isinstance(leaf, str) and leaf in seen:
        tree.head = leaf
    else:
        parents = {n.parent for n in tree.nodes}
        leaves = [n.key for n in tree.nodes if n.key not in parents]
        tree.head = leaves[-1] if leaves else None  # the newest leaf
    return tree


def _messages(
    raw: dict[str, Any], model: str | None, source: ExportSource, unmapped: Counter[str]
) -> list[Message]:
    uuid: str = raw["uuid"]
    info = details(created_at=iso_time(raw.get("created_at")))
    blocks = [b for b in list_of(raw.get("content")) if isinstance(b, dict)]
    if not blocks and text_of(raw.get("text")):
        blocks = [{"type": "text", "text": raw["text"]}]
    human = raw.get("sender") == "human"
    if raw.get("sender") not in ("human", "assistant"):
        unmapped[f"sender:{raw.get('sender')}"] += 1
    messages: list[Message] = []
    parts: list[Part] = []
    results: list[Part] = []
    open_calls: list[ToolCallPart] = []

    def emit(role: Role, emitted: list[Part]) -> None:
        message_id = uuid if not messages else f"{uuid}.{len(messages)}"
        messages.append(
            make_message(
                unmapped,
                role=role,
                id=message_id,
                parts=list(emitted),
                provider=_PROVIDER,
                model=model if role is Role.ASSISTANT else None,
                provider_details=info,
            )
        )
        emitted.clear()

    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "tool_result" and not human:
            if parts:
                emit(Role.ASSISTANT, parts)
            results.append(_result(block, open_calls, uuid, index))
            continue
        if results:
            emit(Role.TOOL, results)
        part = _block(block, human, uuid, index, source, unmapped)
        if isinstance(part, ToolCallPart):
            open_calls.append(part)
        if part is not None:
            parts.append(part)
    if results:
        emit(Role.TOOL, results)
    if human:
        parts.extend(_attachments(raw, source, unmapped))
    if parts or not messages:
        emit(Role.USER if human else Role.ASSISTANT, parts)
    return messages


def _block(
    block: dict[str, Any],
    human: bool,
    uuid: str,
    index: int,
    source: ExportSource,
    unmapped: Counter[str],
) -> Part | None:
    kind = block.get("type")
    if kind == "text":
        text = text_of(block.get("text"))
        return TextPart(text=text) if text else None
    if kind == "thinking" and not human:
        summaries = [
            text_of(s.get("summary"))
            for s in list_of(block.get("summaries"))
            if isinstance(s, dict)
        ]
        signature = block.get("signature")
        return ThinkingPart(
            text=text_of(block.get("thinking")),
            summary=summaries or None,
            signature=signature if isinstance(signature, str) else None,
        )
    if kind == "tool_use" and not human:
        name = text_of(block.get("name")) or "tool"
        call_id = text_of(block.get("id")) or f"{uuid}.call{index}"
        arguments = block.get("input")
        return ToolCallPart(
            id=call_id[:255],
            name=name[:255],
            arguments=arguments if isinstance(arguments, dict) else {"input": arguments},
        )
    if kind == "image":
        image = _image(block, source, unmapped)
        if image is not None:
            return image
    unmapped[f"block:{kind}"] += 1
    return None


def _image(block: dict[str, Any], source: ExportSource, unmapped: Counter[str]) -> FilePart | None:
    src = block.get("source")
    if isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str):
        media = src.get("media_type") if isinstance(src.get("media_type"), str) else None
        return data_url_part(f"data:{media or ''};base64,{src['data']}", None)
    file_id = text_of(block.get("file_uuid")) or text_of(block.get("file_name"))
    if file_id:
        return asset_part(
            source,
            file_id,
            f"claude-file:{file_id}",
            media_type=None,
            filename=None,
            unmapped=unmapped,
        )
    return None


def _result(
    block: dict[str, Any], open_calls: list[ToolCallPart], uuid: str, index: int
) -> ToolResultPart:
    call_id = text_of(block.get("tool_use_id"))
    name = text_of(block.get("name")) or None
    if not call_id:
        # No id in the export: the oldest open call of that name (or any) in this message.
        match = next((c for c in open_calls if name is None or c.name == name), None)
        call_id = match.id if match is not None else f"{uuid}.result{index}"
    if open_calls and any(c.id == call_id for c in open_calls):
        open_calls[:] = [c for c in open_calls if c.id != call_id]
    content = block.get("content")
    texts: list[TextPart | FilePart] = []
    if isinstance(content, str):
        texts.append(TextPart(text=content))
    elif isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(TextPart(text=item["text"]))
            elif isinstance(item, str):
                texts.append(TextPart(text=item))
    output: ToolOutput
    if block.get("is_error") is True:
        output = ErrorOutput(message="\n".join(t.text for t in texts if isinstance(t, TextPart)))
    else:
        output = ContentOutput(parts=texts)
    return ToolResultPart(call_id=call_id[:255], output=output, name=name)


def _attachments(raw: dict[str, Any], source: ExportSource, unmapped: Counter[str]) -> list[Part]:
    out: list[Part] = []
    for attachment in list_of(raw.get("attachments")):
        if not isinstance(attachment, dict):
            continue
        text = attachment.get("extracted_content")
        name = text_of(attachment.get("file_name")) or None
        if isinstance(text, str):
            out.append(inline_part(text.encode(), "text/plain", name))
        else:
            unmapped["attachment without extracted text"] += 1
    for file in list_of(raw.get("files_v2")) or list_of(raw.get("files")):
        if not isinstance(file, dict):
            continue
        file_id = text_of(file.get("file_uuid")) or text_of(file.get("file_name"))
        if file_id:
            out.append(
                asset_part(
                    source,
                    file_id,
                    f"claude-file:{file_id}",
                    media_type=None,
                    filename=text_of(file.get("file_name")) or None,
                    unmapped=unmapped,
                )
            )
    return out


FORMAT: Final = TreeFormat("claude-export", ("conversations.json",), convert)
