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
    Usage,
)
from convstore.cli.demo import DEMO_ID, _png
from convstore.store.checkpoints import MessageList, PendingWrite

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

MARKDOWN_HOSTILE = (
    "Links: [x](javascript:alert('md-link')) and [y](JaVaScRiPt:alert('md-link2')).\n\n"
    "Raw: <img src=x onerror=\"alert('md-img')\"> <script>alert('md-script')</script>\n\n"
    "```html\n<script>alert('md-fence')</script>\n<img src=x onerror=alert('md-fence-img')>\n```\n"
)

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
            Message.assistant(MARKDOWN_HOSTILE),
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


async def add_langgraph_thread(
    store: ConversationStore, *, tenant: str | None = None
) -> tuple[str, list[int]]:
    """A thread as `ConvstoreSaver` stores a LangGraph agent's run: messages and checkpoints.

    Input (step -1), one loop step per node (``__start__``, ``agent``, ``tools``), the last
    one interrupted, and a fork replayed from step 0. Returns the id and the messages' seqs.
    """
    conversation = await store.create_conversation(tenant=tenant)
    cid = conversation.id
    stored = await store.append(
        cid,
        [
            Message.user("What is the weather in Porto?"),
            Message.assistant(ToolCallPart(id="call_w", name="weather", arguments={})),
            Message.tool_result("call_w", "sunny"),
            Message.assistant("It is sunny."),
        ],
    )
    seqs = [m.seq for m in stored if m.seq is not None]
    plan = [
        ("1f0-a", None, -1, "input", seqs[:1], [("~__pregel_pull, __start__", "messages")]),
        ("1f0-b", "1f0-a", 0, "loop", seqs[:2], [("~__pregel_pull, agent", "messages")]),
        ("1f0-c", "1f0-b", 1, "loop", seqs[:3], [("~__pregel_pull, tools", "messages")]),
        ("1f0-d", "1f0-c", 2, "loop", seqs[:4], [("~__pregel_pull, agent", "__interrupt__")]),
        ("1f0-e", "1f0-b", 1, "fork", seqs[:2], []),
    ]
    for checkpoint_id, parent, step, source, kept, writes in plan:
        await store.checkpoints.put(
            cid,
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent,
            checkpoint_type="msgpack",
            checkpoint=b"\x81\xa1v\x04",
            channel_versions={"messages": f"v{checkpoint_id}"},
            metadata={"source": source, "step": step, "parents": {}},
            messages=MessageList("messages", f"v{checkpoint_id}", kept),
            tenant=tenant,
        )
        await store.checkpoints.put_writes(
            cid,
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            writes=[
                PendingWrite(
                    f"task-{i}",
                    -3 if channel == "__interrupt__" else 0,
                    channel,
                    "msgpack",
                    b"\x90",
                    path,
                )
                for i, (path, channel) in enumerate(writes)
            ],
            tenant=tenant,
        )
    return cid, seqs


SHOWCASE_ID = "porto-weekend"
SHOWCASE_ANSWERS = (
    "Start at **Ribeira**:\n\n1. Coffee at *Majestic*\n2. The Dom Luís I bridge at sunset\n\n"
    '```python\nstops = ["Ribeira", "Lello", "Serralves"]\nfor day, stop in enumerate(stops, 1):\n'
    '    print(f"Day {day}: {stop}")\n```',
    "Begin with **Livraria Lello** (book a slot), then:\n\n- Clérigos tower\n- Bolhão market\n\n"
    "| time | stop |\n|---|---|\n| 10:00 | Lello |\n| 12:30 | Bolhão |",
    "Walk the **Dom Luís I bridge**, then take the `1` tram to Foz:\n\n"
    "```sql\nSELECT stop, opens_at FROM sights WHERE city = 'Porto' ORDER BY opens_at;\n```\n\n"
    "> Tip: the upper deck is for the metro *and* walkers.",
)


async def add_showcase(store: ConversationStore) -> str:
    """A Markdown conversation with a three-way regeneration and usage (the README's shot)."""
    await store.create_conversation(id=SHOWCASE_ID, title="A weekend in Porto")
    await store.append(
        SHOWCASE_ID,
        [
            Message.system("You are a concise travel assistant. Answer in Markdown."),
            Message.user(
                "Plan my Saturday in **Porto** — three stops, and a script to print them."
            ),
        ],
    )
    for i, answer in enumerate(SHOWCASE_ANSWERS):
        await store.append(
            SHOWCASE_ID,
            [
                Message.assistant(
                    answer,
                    provider="anthropic" if i != 1 else "openai",
                    model="claude-sonnet-4-5" if i != 1 else "gpt-5",
                    usage=Usage(
                        input_tokens=812 + 40 * i,
                        output_tokens=164 + 9 * i,
                        cached_tokens=640 if i else 0,
                    ),
                )
            ],
            parent_seq=2,
        )
    await store.append(
        SHOWCASE_ID,
        [
            Message.user("Perfect. And dinner?"),
            Message.assistant(
                "Dinner at **Cantinho do Avillez** — book a table for *20:00*.",
                provider="anthropic",
                model="claude-sonnet-4-5",
                usage=Usage(input_tokens=1020, output_tokens=58, cached_tokens=812),
            ),
        ],
    )
    return SHOWCASE_ID


__all__ = [
    "BRANCH_REPLY",
    "BRANCH_TEXT",
    "DEMO_ID",
    "MARKDOWN_HOSTILE",
    "SHOWCASE_ANSWERS",
    "SHOWCASE_ID",
    "Hostile",
    "add_branch",
    "add_hostile",
    "add_langgraph_thread",
    "add_showcase",
    "add_trip",
]
