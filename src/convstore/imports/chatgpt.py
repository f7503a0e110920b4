"""ChatGPT's data export: ``conversations.json`` (or ``conversations-000.json``, ...).

Each conversation has a ``mapping`` of nodes ``{id, parent, children, message}`` and a
``current_node``; every edit and regeneration is a sibling node. Each node becomes one stored
message with the node's id (a node without a message, such as the root, a marked empty
system message), so the stored tree is the export's, node for node, and the head is
``current_node``. The conversation id is ``chatgpt-<conversation id>``.

Content types (``message.content.content_type``):

- ``text``; ``multimodal_text``: text, image and audio asset pointers (the export's file when
  the export holds it, else a file part whose ``uri`` is the pointer), audio transcriptions;
- an assistant message addressed to a tool (``recipient`` not ``all``: ``python``,
  ``browser``, ``dalle.text2im``, ``web``...) is a tool call (id: the node id, arguments: its
  JSON text, else ``{"code": text}``); a ``tool`` message (``execution_output``,
  ``tether_browsing_display``, ``tether_quote``, images, ``system_error``) is that call's result;
- ``thoughts`` and ``reasoning_recap`` are thinking;
- ``user_editable_context`` / ``model_editable_context`` (custom instructions, memory) are text;
- anything else is kept as a placeholder and counted in ``ImportReport.unmapped``.

``metadata.is_visually_hidden_from_conversation`` is kept as ``provider_details.hidden``;
``metadata.model_slug`` is the message's model and ``create_time`` its
``provider_details.created_at``.
"""

from __future__ import annotations

import json
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
    details,
    exported_tree,
    iso_time,
    list_of,
    make_message,
    object_of,
    placeholder,
    required_id,
    text_of,
)
from ._driver import TreeFormat
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree, add_keyed

__all__ = ["FORMAT", "convert"]

_PROVIDER: Final = "openai"
_ROLES: Final = {r.value: r for r in Role}
_POINTER_SCHEMES: Final = ("file-service://", "sediment://")


def convert(element: Any, source: ExportSource, unmapped: Counter[str]) -> ConversationTree:
    """One conversation of the export as a tree."""
    if not isinstance(element, dict) or not isinstance(element.get("mapping"), dict):
        raise ConversationShapeError("not a ChatGPT conversation: no 'mapping' object")
    source_id = required_id(
        element.get("conversation_id") or element.get("id"), "a ChatGPT conversation without an id"
    )
    title = element.get("title")
    tree = exported_tree(
        "chatgpt",
        FORMAT.name,
        source_id,
        title if isinstance(title, str) else None,
        created_at=iso_time(element.get("create_time")),
        updated_at=iso_time(element.get("update_time")),
        model=element.get("default_model_slug"),
        archived=element.get("is_archived") is True,
    )
    mapping: dict[str, Any] = element["mapping"]
    add_keyed(
        tree,
        mapping,
        parent_key="parent",
        head=element.get("current_node"),
        what="node that is not an object",
        messages=lambda key, node: [_message(key, node.get("message"), mapping, source, unmapped)],
        unmapped=unmapped,
    )
    return tree


def _message(
    key: str, raw: Any, mapping: dict[str, Any], source: ExportSource, unmapped: Counter[str]
) -> Message:
    if not isinstance(raw, dict):
        return placeholder(key, "node without a message")
    author = object_of(raw.get("author"))
    role = _ROLES.get(str(author.get("role")))
    metadata = object_of(raw.get("metadata"))
    content = object_of(raw.get("content"))
    content_type = str(content.get("content_type", "text"))
    recipient = text_of(raw.get("recipient")) or "all"
    info = details(
        created_at=iso_time(raw.get("create_time")),
        hidden=metadata.get("is_visually_hidden_from_conversation") is True,
        content_type=None if content_type == "text" else content_type,
        recipient=None if recipient == "all" else recipient,
        author_name=author.get("name") if isinstance(author.get("name"), str) else None,
        status=raw.get("status") if raw.get("status") != "finished_successfully" else None,
    )
    if role is None:
        unmapped[f"role:{author.get('role')}"] += 1
        return placeholder(key, f"unknown author role {author.get('role')!r}", info)
    parts = _parts(content_type, content, source, unmapped)
    if parts is None:
        unmapped[f"content_type:{content_type}"] += 1
        return placeholder(key, f"content type {content_type!r}", info)
    model = metadata.get("model_slug") if isinstance(metadata.get("model_slug"), str) else None
    if role is Role.ASSISTANT and recipient != "all":
        call = ToolCallPart(
            id=key, name=recipient[:255], arguments=_arguments(parts), raw_arguments=_text(parts)
        )
        parts = [*(p for p in parts if isinstance(p, ThinkingPart)), call]
    elif role is Role.TOOL:
        call_id = _call_answered(key, mapping, author.get("name"))
        output: ToolOutput = (
            ErrorOutput(message=_text(parts))
            if content_type == "system_error"
            else ContentOutput(parts=[p for p in parts if isinstance(p, TextPart | FilePart)])
        )
        name = author.get("name") if isinstance(author.get("name"), str) else None
        parts = [ToolResultPart(call_id=call_id, output=output, name=name)]
    elif role is not Role.ASSISTANT:
        # Thinking and files only where the role admits them; as text otherwise.
        parts = [
            TextPart(text=p.text) if isinstance(p, ThinkingPart) else p
            for p in parts
            if role is Role.USER or not isinstance(p, FilePart)
        ]
    return make_message(
        unmapped,
        role=role,
        id=key,
        parts=parts,
        provider=_PROVIDER,
        model=model,
        provider_details=info,
    )


def _text(parts: list[Part]) -> str:
    return "\n".join(p.text for p in parts if isinstance(p, TextPart))


def _arguments(parts: list[Part]) -> dict[str, Any]:
    text = _text(parts)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"code": text}


def _call_answered(key: str, mapping: dict[str, Any], tool: Any) -> str:
    """The node id of the call a tool message answers: the nearest assistant call above it."""
    node = mapping.get(key)
    seen = 0
    while isinstance(node, dict) and seen < 64:
        parent_key = node.get("parent")
        node = mapping.get(parent_key) if isinstance(parent_key, str) else None
        message = node.get("message") if isinstance(node, dict) else None
        if isinstance(message, dict):
            author = message.get("author") or {}
            recipient = message.get("recipient")
            if isinstance(author, dict) and author.get("role") == "assistant":
                if isinstance(recipient, str) and recipient != "all":
                    return str(parent_key)
                break  # an assistant reply in between: no call is open
        seen += 1
    return f"{tool or 'tool'}:{key}"[:255]


def _parts(
    content_type: str, content: dict[str, Any], source: ExportSource, unmapped: Counter[str]
) -> list[Part] | None:
    """The parts of one content object; None for a content type this importer cannot map."""
    if content_type in ("text", "multimodal_text"):
        out: list[Part] = []
        for item in list_of(content.get("parts")):
            if isinstance(item, str):
                if item:
                    out.append(TextPart(text=item))
            elif isinstance(item, dict):
                out.extend(_multimodal_item(item, source, unmapped))
        return out
    if content_type in ("code", "execution_output"):
        return [TextPart(text=text_of(content.get("text")))]
    if content_type == "system_error":
        return [TextPart(text=text_of(content.get("text")) or text_of(content.get("name")))]
    if content_type == "tether_browsing_display":
        text = text_of(content.get("result")) or text_of(content.get("summary"))
        return [TextPart(text=text)] if text else []
    if content_type == "tether_quote":
        lines = [text_of(content.get(k)) for k in ("title", "url", "text")]
        return [TextPart(text="\n".join(line for line in lines if line))]
    if content_type == "thoughts":
        thoughts = [t for t in list_of(content.get("thoughts")) if isinstance(t, dict)]
        return [
            ThinkingPart(
                text="\n\n".join(text_of(t.get("content")) for t in thoughts),
                summary=[text_of(t.get("summary")) for t in thoughts] or None,
            )
        ]
    if content_type == "reasoning_recap":
        return [ThinkingPart(text="", summary=[text_of(content.get("content"))])]
    if content_type in ("user_editable_context", "model_editable_context"):
        keys = ("user_profile", "user_instructions", "model_set_context")
        return [TextPart(text=text_of(content.get(k))) for k in keys if text_of(content.get(k))]
    return None


def _multimodal_item(
    item: dict[str, Any], source: ExportSource, unmapped: Counter[str]
) -> list[Part]:
    kind = item.get("content_type")
    if kind in ("image_asset_pointer", "audio_asset_pointer"):
        pointer = text_of(item.get("asset_pointer"))
        asset_id = pointer
        for scheme in _POINTER_SCHEMES:
            asset_id = asset_id.removeprefix(scheme)
        if not pointer:
            unmapped[f"part:{kind} without a pointer"] += 1
            return []
        media = None  # the bytes tell (when the export has them)
        audio = item.get("format")
        if kind == "audio_asset_pointer" and isinstance(audio, str):
            media = f"audio/{audio}"
        return [
            asset_part(
                source, asset_id, pointer, media_type=media, filename=None, unmapped=unmapped
            )
        ]
    if kind == "audio_transcription":
        text = text_of(item.get("text"))
        return [TextPart(text=text)] if text else []
    if isinstance(item.get("text"), str):
        return [TextPart(text=item["text"])]
    unmapped[f"part:{kind}"] += 1
    return []


FORMAT: Final = TreeFormat(
    "chatgpt-export", ("conversations.json", "conversations-[0-9]*.json"), convert
)
