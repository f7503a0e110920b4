"""An Open WebUI chat export: a JSON list of chats (or one chat), as its "Export" writes them.

A chat record is ``{id, title, chat: {history: {messages, currentId}, ...}, created_at,
updated_at}`` (a bare ``{history: ...}`` chat object is read too). ``history.messages`` maps
ids to ``{id, parentId, childrenIds, role, content, model, timestamp, files}``: each becomes
one stored message with that id, under its ``parentId``, so the tree is the export's (edits
and regenerations are branches) and the head is ``currentId``. The conversation id is
``openwebui-<chat id>``.

- ``model`` is each assistant message's model (Open WebUI can answer one turn with several).
- Assistant content keeps Open WebUI's inline blocks apart: ``<details type="reasoning">`` is
  thinking, and ``<details type="tool_calls" id name arguments result>`` is a tool call with
  its result (the message then becomes a chain: assistant → tool → assistant, ids
  ``<id>``, ``<id>.1``...; the message's children follow the last).
- ``files``: ``data:`` URLs (either base64 alphabet) are stored as files; server files
  (``/api/v1/files/...``: the export has no bytes) are file parts whose ``uri`` names them,
  counted as not in the export.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from convstore.model import (
    ContentOutput,
    FilePart,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

from ._common import (
    asset_part,
    data_url_part,
    details,
    exported_tree,
    iso_time,
    list_of,
    make_message,
    object_of,
    text_of,
)
from ._driver import TreeFormat
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree, add_keyed

__all__ = ["FORMAT", "convert"]

_ROLES: Final = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
_ATTRIBUTE_START: Final = re.compile(r'(?<!\w)(\w+)="')
"""An attribute's name and opening quote; only at the start of a word, so each run of word
characters is tried once (linear time over any input)."""


@dataclass(frozen=True, slots=True)
class _Details:
    start: int
    end: int
    attributes: str
    body: str


def _details_blocks(content: str) -> Iterator[_Details]:
    """Each ``<details ATTRS>BODY</details>`` (the first closing tag ends it), left to right.

    A parser of ``str.find`` calls rather than a regular expression: every position is passed
    a bounded number of times, so time is linear in the content whatever it holds (the
    expression it replaces tried every ``<details`` against the whole rest of the text).
    """
    pos = 0
    while (start := content.find("<details", pos)) >= 0:
        after = start + len("<details")
        if after >= len(content) or not content[after].isspace():
            pos = after
            continue
        close_tag = content.find(">", after)
        if close_tag < 0:
            return  # no '>' anywhere after: no later block can be complete either
        close = content.find("</details>", close_tag + 1)
        if close < 0:
            return  # likewise for the closing tag
        end = close + len("</details>")
        yield _Details(start, end, content[after:close_tag], content[close_tag + 1 : close])
        pos = end


def _attributes(text: str) -> dict[str, str]:
    """``name="value"`` pairs (values unescaped), left to right; a later name wins."""
    found: dict[str, str] = {}
    pos = 0
    while (match := _ATTRIBUTE_START.search(text, pos)) is not None:
        close = text.find('"', match.end())
        if close < 0:
            break
        found[match.group(1)] = html.unescape(text[match.end() : close])
        pos = close + 1
    return found


def _without_summaries(text: str) -> str:
    """``text`` without its ``<summary>...</summary>`` elements (linear, like `_details_blocks`)."""
    kept: list[str] = []
    pos = 0
    while (start := text.find("<summary>", pos)) >= 0:
        close = text.find("</summary>", start + len("<summary>"))
        if close < 0:
            break
        kept.append(text[pos:start])
        pos = close + len("</summary>")
    kept.append(text[pos:])
    return "".join(kept)


def convert(element: Any, source: ExportSource, unmapped: Counter[str]) -> ConversationTree:
    """One chat of the export as a tree."""
    if not isinstance(element, dict):
        raise ConversationShapeError("not an Open WebUI chat: not an object")
    chat = object_of(element.get("chat")) or element
    history = chat.get("history")
    if not isinstance(history, dict) or not isinstance(history.get("messages"), dict):
        raise ConversationShapeError("not an Open WebUI chat: no 'history.messages' object")
    source_id = element.get("id") or chat.get("id")
    if not isinstance(source_id, str) or not source_id:
        # A chat without an id is known by its content, so a re-import still finds it.
        digest = json.dumps(history, sort_keys=True, ensure_ascii=False).encode()
        source_id = hashlib.sha256(digest).hexdigest()[:32]
    title = element.get("title") or chat.get("title")
    models = chat.get("models")
    tree = exported_tree(
        "openwebui",
        FORMAT.name,
        source_id,
        title if isinstance(title, str) else None,
        created_at=iso_time(element.get("created_at") or chat.get("timestamp")),
        updated_at=iso_time(element.get("updated_at")),
        models=[m for m in models if isinstance(m, str)] if isinstance(models, list) else None,
    )
    add_keyed(
        tree,
        history["messages"],
        parent_key="parentId",
        head=history.get("currentId") or history.get("current_id"),
        what="message that is not an object",
        messages=lambda key, raw: _messages(key, raw, source, unmapped),
        unmapped=unmapped,
    )
    return tree


def _messages(
    key: str, raw: dict[str, Any], source: ExportSource, unmapped: Counter[str]
) -> list[Message]:
    role = _ROLES.get(str(raw.get("role")))
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    info = details(created_at=iso_time(raw.get("timestamp")), model_name=raw.get("modelName"))
    if role is None:
        unmapped[f"role:{raw.get('role')}"] += 1
        info = {**(info or {}), "role": str(raw.get("role"))}
        role = Role.SYSTEM
        info["hidden"] = True
    content = text_of(raw.get("content"))
    files = _files(raw, source, unmapped) if role is not Role.SYSTEM else []
    out: list[Message] = []

    def emit(emit_role: Role, parts: list[Part]) -> None:
        out.append(
            make_message(
                unmapped,
                role=emit_role,
                id=key if not out else f"{key}.{len(out)}",
                parts=parts,
                model=model if emit_role is Role.ASSISTANT else None,
                provider_details=info,
            )
        )

    if role is not Role.ASSISTANT:
        emit(role, [*([TextPart(text=content)] if content else []), *files])
        return out
    parts: list[Part] = []
    at = 0
    for block in _details_blocks(content):
        _text(content[at : block.start], parts)
        at = block.end
        attributes = _attributes(block.attributes)
        kind = attributes.get("type")
        if kind == "reasoning":
            parts.append(ThinkingPart(text=_quoted(_without_summaries(block.body))))
        elif kind == "tool_calls" and attributes.get("name"):
            call = ToolCallPart(
                id=(attributes.get("id") or f"{key}.call{len(out)}")[:255],
                name=attributes["name"][:255],
                arguments=_arguments(attributes.get("arguments", "")),
            )
            emit(Role.ASSISTANT, [*parts, call])
            parts = []
            result = _json_text(attributes.get("result", ""))
            emit(
                Role.TOOL,
                [
                    ToolResultPart(
                        call_id=call.id,
                        name=call.name,
                        output=ContentOutput(parts=[TextPart(text=result)] if result else []),
                    )
                ],
            )
        else:
            unmapped[f"details:{kind}"] += 1
            _text(content[block.start : block.end], parts)
    _text(content[at:], parts)
    parts.extend(files)
    if parts or not out:
        emit(Role.ASSISTANT, parts)
    return out


def _text(text: str, parts: list[Part]) -> None:
    if text.strip():
        parts.append(TextPart(text=text.strip("\n")))


def _quoted(text: str) -> str:
    """Open WebUI shows reasoning as a quote (``> `` before each line): the text without it."""
    lines = text.strip("\n").splitlines()
    return "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">") for line in lines)


def _json_text(value: str) -> str:
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return decoded if isinstance(decoded, str) else json.dumps(decoded, ensure_ascii=False)


def _arguments(value: str) -> dict[str, Any]:
    try:
        decoded = json.loads(value)
        if isinstance(decoded, str):  # the arguments JSON text, itself JSON-encoded
            decoded = json.loads(decoded)
    except ValueError:
        return {"input": value}
    return decoded if isinstance(decoded, dict) else {"input": decoded}


def _files(raw: dict[str, Any], source: ExportSource, unmapped: Counter[str]) -> list[FilePart]:
    out: list[FilePart] = []
    for file in list_of(raw.get("files")):
        if not isinstance(file, dict):
            continue
        url = text_of(file.get("url"))
        name = text_of(file.get("name")) or None
        if url.startswith("data:"):
            part = data_url_part(url, name)
            if part is None:
                unmapped["unreadable data URL"] += 1
            else:
                out.append(part)
            continue
        file_id = text_of(file.get("id")) or url.rstrip("/").rsplit("/", 1)[-1]
        if not (url or file_id):
            unmapped["file without a location"] += 1
            continue
        out.append(
            asset_part(
                source,
                file_id,
                url or f"openwebui-file:{file_id}",
                media_type=None,
                filename=name,
                unmapped=unmapped,
            )
        )
    return out


FORMAT: Final = TreeFormat("openwebui-export", ("*.json",), convert)
