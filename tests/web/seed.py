"""Conversations the inspector's tests look at: branches, lifecycles, media and hostile text.

Everything is written through the public store API, as an application would.
"""

from __future__ import annotations

from dataclasses import dataclass

from convstore import (
    ContentOutput,
    ConversationStore,
    ErrorOutput,
    FilePart,
    Message,
    TextPart,
    ToolCallPart,
)
from convstore.cli.demo import DEMO_ID, _png

# Hostile strings a model or a user could put into a conversation: none may run in the page.
SCRIPT_TEXT = "<script>alert('script')</script>"
ONERROR_TEXT = '<img src="x" onerror="alert(\'onerror\')">'
JAVASCRIPT_LINK = "<a href=\"javascript:alert('link')\">click me</a>"
SVG_WITH_SCRIPT = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="alert(\'svg\')">'
    b'<script>alert(\'svg script\')</script><rect width="40" height="40"/></svg>'
)
HTML_FILE = b"<!doctype html><html><body><script>alert('html')</script></body></html>"
UNKNOWN_FILE = bytes(range(256)) * 4

BRANCH_TEXT = "Actually, make it Porto instead."
BRANCH_REPLY = "Porto it is: Ribeira, the Douro and a port cellar."


@dataclass(frozen=True, slots=True)
class Hostile:
    """The hostile conversation's id and the hashes of its attachments."""

    id: str
    svg: str
    html: str
    unknown: str
    png: str


async def add_branch(store: ConversationStore, conversation_id: str, *, at_seq: int) -> int:
    """A second branch from ``at_seq`` (the head moves to it); returns the old tip's seq."""
    old_tip = next(t.head_seq for t in await store.branches(conversation_id) if t.active)
    await store.append(
        conversation_id,
        [
            Message.user(BRANCH_TEXT, id="edit-1"),
            Message.assistant(BRANCH_REPLY, provider="openai", model="gpt-5"),
        ],
        parent_seq=at_seq,
    )
    return old_tip


async def add_hostile(store: ConversationStore, *, tenant: str | None = None) -> Hostile:
    """A conversation whose every string and attachment tries to run script."""
    png = _png(32, 20)
    conversation = await store.create_conversation(
        title=SCRIPT_TEXT, tenant=tenant, metadata={"note": ONERROR_TEXT}
    )
    stored = await store.append(
        conversation.id,
        [
            Message.user(SCRIPT_TEXT, id='"><script>alert("id")</script>'),
            Message.user(ONERROR_TEXT, FilePart.from_bytes(png, filename="ok.png")),
            Message.user(
                JAVASCRIPT_LINK,
                FilePart.from_bytes(SVG_WITH_SCRIPT, media_type="image/svg+xml", filename="x.svg"),
                FilePart.from_bytes(HTML_FILE, media_type="text/html", filename="page.html"),
                FilePart.from_bytes(UNKNOWN_FILE, filename="blob.bin"),
            ),
            Message.assistant(
                ToolCallPart(id="call_<b>x</b>", name="<script>", arguments={"q": SCRIPT_TEXT}),
                provider="<i>p</i>",
                model=ONERROR_TEXT,
            ),
            Message.tool_result("call_<b>x</b>", ErrorOutput(message=JAVASCRIPT_LINK)),
        ],
    )
    hashes = {
        f.filename: f.attachment.sha256
        for m in stored
        for f in m.files
        if f.attachment is not None and f.filename
    }
    return Hostile(
        id=conversation.id,
        svg=hashes["x.svg"],
        html=hashes["page.html"],
        unknown=hashes["blob.bin"],
        png=hashes["ok.png"],
    )


async def add_trip(store: ConversationStore, *, tenant: str | None) -> str:
    """A conversation like the demo's: every lifecycle, an image and a PDF from a tool."""
    image = _png()
    conversation = await store.create_conversation(title="Trip", tenant=tenant)
    await store.append(
        conversation.id,
        [
            Message.system("You are a travel assistant."),
            Message.user("Plan a trip.", FilePart.from_bytes(image, filename="map.png"), id="u1"),
            Message.assistant(
                "Checking.",
                ToolCallPart(id="call_weather", name="get_weather", arguments={"city": "Lisbon"}),
                ToolCallPart(id="call_hotel", name="book_hotel", arguments={"nights": 3}),
                ToolCallPart(id="call_map", name="render_route", arguments={"stops": 4}),
                ToolCallPart(id="call_flights", name="search_flights", arguments={"to": "LIS"}),
                provider="anthropic",
                model="claude-sonnet-4-5",
                id="a1",
            ),
            Message.tool_result("call_weather", {"forecast": "sunny"}),
            Message.tool_result("call_hotel", ErrorOutput(message="no rooms left")),
        ],
    )
    await store.complete_tool_call(
        conversation.id,
        "call_map",
        ContentOutput(
            parts=[TextPart(text="Route drawn"), FilePart.from_bytes(image, filename="r.png")]
        ),
    )
    return conversation.id


__all__ = [
    "BRANCH_REPLY",
    "BRANCH_TEXT",
    "DEMO_ID",
    "Hostile",
    "add_branch",
    "add_hostile",
    "add_trip",
]
