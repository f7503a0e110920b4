"""Export documents shaped like the products' own, built from their public descriptions.

ChatGPT: ``conversations.json`` (a list of conversations, each a ``mapping`` of nodes
``{id, message, parent, children}`` and a ``current_node``). Claude.ai: ``conversations.json``
(``chat_messages`` with ``sender``, ``text``, ``content`` blocks, ``attachments``, ``files``).
Open WebUI: the chat export (``chat.history.messages`` keyed by id with ``parentId`` /
``childrenIds``, ``currentId``). Every id is fresh (uuid4): the PostgreSQL database of the
test session is shared, and real exports use uuids too.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from typing import Any


def new_id() -> str:
    return str(uuid.uuid4())


def png(width: int = 3, height: int = 2, seed: int = 0) -> bytes:
    """A real, decodable PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + bytes((seed + x * 40 + y) % 256 for x in range(width * 3)) for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


# -- ChatGPT ------------------------------------------------------------------------------------


class ChatGPT:
    """Builds one ChatGPT conversation node by node."""

    def __init__(self, title: str = "Trip planning") -> None:
        self.id = new_id()
        self.mapping: dict[str, Any] = {}
        self.current: str | None = None
        self.title = title
        self.clock = 1_714_000_000.25
        self.root = self.node(None, None)

    def node(
        self, parent: str | None, message: dict[str, Any] | None, key: str | None = None
    ) -> str:
        key = key or new_id()
        if message is not None:
            message = {"id": key, **message}
        self.mapping[key] = {"id": key, "message": message, "parent": parent, "children": []}
        if parent is not None:
            self.mapping[parent]["children"].append(key)
        self.current = key
        return key

    def message(
        self,
        parent: str,
        role: str,
        content: dict[str, Any],
        *,
        recipient: str = "all",
        name: str | None = None,
        model: str | None = None,
        hidden: bool = False,
    ) -> str:
        self.clock += 7.5
        metadata: dict[str, Any] = {"request_id": "8a1f" + new_id()[:8], "timestamp_": "absolute"}
        if model:
            metadata["model_slug"] = model
            metadata["finish_details"] = {"type": "stop", "stop_tokens": [200002]}
        if hidden:
            metadata["is_visually_hidden_from_conversation"] = True
        return self.node(
            parent,
            {
                "author": {"role": role, "name": name, "metadata": {}},
                "create_time": self.clock,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "end_turn": role == "assistant" or None,
                "weight": 1.0,
                "metadata": metadata,
                "recipient": recipient,
                "channel": None,
            },
        )

    def text(self, parent: str, role: str, text: str, **kw: Any) -> str:
        return self.message(parent, role, {"content_type": "text", "parts": [text]}, **kw)

    def document(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "create_time": 1_714_000_000.25,
            "update_time": self.clock,
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": self.current,
            "plugin_ids": None,
            "conversation_id": self.id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "is_archived": False,
            "safe_urls": [],
            "default_model_slug": "gpt-4o",
            "id": self.id,
        }


def chatgpt_rich() -> tuple[ChatGPT, dict[str, str]]:
    """A conversation with a hidden system node, an edit, two regenerations, an image upload
    (its file in the export), code interpreter, browsing, DALL·E, thoughts and an odd node.

    Returns the builder and named node ids.
    """
    c = ChatGPT()
    n: dict[str, str] = {}
    n["system"] = c.text(c.root, "system", "", hidden=True)
    n["context"] = c.message(
        n["system"],
        "user",
        {
            "content_type": "user_editable_context",
            "user_profile": "I live in Lisbon.",
            "user_instructions": "Answer briefly.",
        },
        hidden=True,
    )
    n["q1"] = c.text(n["context"], "user", "Plan a day in Porto.")
    n["a1"] = c.text(n["q1"], "assistant", "Start at Ribeira.", model="gpt-4o")
    n["a1_regen"] = c.text(n["q1"], "assistant", "Begin with the Livraria Lello.", model="gpt-4o")
    n["a1_regen2"] = c.text(n["q1"], "assistant", "Walk the Dom Luís bridge.", model="gpt-4o-mini")
    # An edit of the first question: a sibling of q1.
    n["q1_edit"] = c.text(n["context"], "user", "Plan a day in Porto, with a photo.")
    n["image"] = "file-Xq3kP9vR2mT8wL1nB6cY4d"
    n["q2"] = c.message(
        n["q1_edit"],
        "user",
        {
            "content_type": "multimodal_text",
            "parts": [
                {
                    "content_type": "image_asset_pointer",
                    "asset_pointer": f"file-service://{n['image']}",
                    "size_bytes": 120,
                    "width": 3,
                    "height": 2,
                    "fovea": None,
                    "metadata": None,
                },
                "What is in this photo?",
                {
                    "content_type": "image_asset_pointer",
                    "asset_pointer": "sediment://file_0000missing",
                    "size_bytes": 99,
                    "width": 1,
                    "height": 1,
                },
            ],
        },
    )
    n["thoughts"] = c.message(
        n["q2"],
        "assistant",
        {
            "content_type": "thoughts",
            "thoughts": [
                {
                    "summary": "Looking at the photo",
                    "content": "It shows a bridge.",
                    "finished": True,
                }
            ],
            "source_analysis_msg_id": new_id(),
        },
        model="o3",
    )
    n["recap"] = c.message(
        n["thoughts"],
        "assistant",
        {"content_type": "reasoning_recap", "content": "Thought for 4 seconds"},
        model="o3",
    )
    n["code"] = c.message(
        n["recap"],
        "assistant",
        {
            "content_type": "code",
            "language": "unknown",
            "response_format_name": None,
            "text": "import math\nprint(math.pi * 2)",
        },
        recipient="python",
        model="o3",
    )
    n["output"] = c.message(
        n["code"],
        "tool",
        {"content_type": "execution_output", "text": "6.283185307179586"},
        name="python",
    )
    n["search"] = c.message(
        n["output"],
        "assistant",
        {
            "content_type": "code",
            "language": "unknown",
            "text": 'search("Porto bridge opening hours")',
        },
        recipient="browser",
        model="o3",
    )
    n["browse"] = c.message(
        n["search"],
        "tool",
        {
            "content_type": "tether_browsing_display",
            "result": "# 【0†Dom Luís I Bridge】 open all day",
            "summary": None,
            "assets": [],
        },
        name="browser",
    )
    n["quote"] = c.message(
        n["browse"],
        "tool",
        {
            "content_type": "tether_quote",
            "url": "https://example.org/bridge",
            "domain": "example.org",
            "text": "Open all day.",
            "title": "Bridge",
        },
        name="browser",
    )
    n["odd"] = c.message(
        n["quote"], "assistant", {"content_type": "sonic_webpage", "url": "x"}, model="o3"
    )
    n["dalle_call"] = c.message(
        n["odd"],
        "assistant",
        {"content_type": "text", "parts": ['{"prompt": "a tram in Porto", "size": "1024x1024"}']},
        recipient="dalle.text2im",
        model="gpt-4o",
    )
    n["dalle_image"] = "file-9GtHw2ZpQa1Ls5MnVx7YkC"
    n["dalle"] = c.message(
        n["dalle_call"],
        "tool",
        {
            "content_type": "multimodal_text",
            "parts": [
                {
                    "content_type": "image_asset_pointer",
                    "asset_pointer": f"file-service://{n['dalle_image']}",
                    "size_bytes": 200,
                    "width": 4,
                    "height": 4,
                    "metadata": {"dalle": {"prompt": "a tram"}},
                }
            ],
        },
        name="dalle.text2im",
    )
    n["answer"] = c.text(
        n["dalle"], "assistant", "It is the Dom Luís I bridge; here is a tram.", model="gpt-4o"
    )
    c.current = n["answer"]
    return c, n


# -- Claude.ai ----------------------------------------------------------------------------------


def claude_message(
    sender: str,
    content: list[dict[str, Any]],
    created_at: str,
    *,
    parent: str | None = None,
    attachments: list[dict[str, Any]] | None = None,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    text = "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    message: dict[str, Any] = {
        "uuid": new_id(),
        "text": text,
        "content": [
            {"start_timestamp": created_at, "stop_timestamp": created_at, "citations": [], **b}
            for b in content
        ],
        "sender": sender,
        "created_at": created_at,
        "updated_at": created_at,
        "attachments": attachments or [],
        "files": files or [],
    }
    if parent is not None:
        message["parent_message_uuid"] = parent
    return message


def claude_conversation(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "uuid": new_id(),
        "name": "Refactoring the parser",
        "summary": "",
        "created_at": "2025-03-02T10:00:00.000000+00:00",
        "updated_at": "2025-03-02T10:30:00.000000+00:00",
        "account": {"uuid": new_id()},
        "chat_messages": messages,
        **extra,
    }


# -- Open WebUI ---------------------------------------------------------------------------------


class OpenWebUI:
    """Builds one Open WebUI chat (``history.messages`` by id, ``currentId``)."""

    def __init__(self) -> None:
        self.id = new_id()
        self.messages: dict[str, Any] = {}
        self.current: str | None = None
        self.clock = 1_730_000_000

    def add(self, parent: str | None, role: str, content: str, **extra: Any) -> str:
        key = new_id()
        self.clock += 5
        self.messages[key] = {
            "id": key,
            "parentId": parent,
            "childrenIds": [],
            "role": role,
            "content": content,
            "timestamp": self.clock,
            **extra,
        }
        if role == "user":
            self.messages[key]["models"] = ["llama3.1:8b"]
        if parent is not None:
            self.messages[parent]["childrenIds"].append(key)
        self.current = key
        return key

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "user_id": new_id(),
            "title": "Sourdough",
            "chat": {
                "id": "",
                "title": "Sourdough",
                "models": ["llama3.1:8b", "qwen2.5:14b"],
                "params": {},
                "history": {"messages": self.messages, "currentId": self.current},
                "messages": [],
                "tags": [],
                "timestamp": 1_730_000_000_000,
                "files": [],
            },
            "updated_at": self.clock,
            "created_at": 1_730_000_000,
            "share_id": None,
            "archived": False,
            "pinned": False,
            "meta": {},
            "folder_id": None,
        }


def data_url(data: bytes, media_type: str, *, urlsafe: bool = False) -> str:
    encoded = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()
    return f"data:{media_type};base64,{encoded}"
