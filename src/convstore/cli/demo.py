"""``convstore demo``: the main job, end to end, on whatever store it is given.

Stores one conversation with completed, failed and pending tool calls and a tool result that
returns an image and a PDF, then shows what was stored: the conversation, the blobs (each
stored once, however often referenced), the typed result read back, and the conversation
rendered for every provider target (with a legend of the words on each line), and last the
database file and the commands to try next (``convstore show``, ``convstore render``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import struct
import zlib
from typing import Any

from convstore.cli.views import conversation_view
from convstore.db import DEFAULT_URL, parse_url, sqlite_path
from convstore.errors import ConversationNotFoundError, ConvstoreError
from convstore.model import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    TextPart,
    ToolCallPart,
)
from convstore.rendering import Rendered
from convstore.store import ConversationStore

__all__ = ["DEMO_ID", "run_demo"]


def _png(width: int = 24, height: int = 16) -> bytes:
    """A small valid RGB PNG (a colour gradient), built without image libraries."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 10 % 256, y * 16 % 256, 128)) for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _pdf(text: str) -> bytes:
    """A one-page PDF showing ``text``."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _heading(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


async def run_demo(store: ConversationStore) -> None:
    """Store the sample conversation in ``store`` and print what was stored."""
    image, pdf = _png(), _pdf("Lisbon itinerary: 3 nights")
    # One demo conversation however often the demo runs: the previous one makes way.
    with contextlib.suppress(ConversationNotFoundError):
        await store.delete_conversation(DEMO_ID)
    conversation = await store.create_conversation(
        id=DEMO_ID, title="Trip to Lisbon", metadata={"demo": True}
    )
    await store.append(
        conversation.id,
        [
            Message.system("You are a travel assistant. Use tools; be brief."),
            Message.user(
                "Plan three days in Lisbon. Here is the map I sketched:",
                FilePart.from_bytes(image, filename="sketch.png"),
            ),
            Message(
                role=Role.ASSISTANT,
                provider="anthropic",
                model="claude-sonnet-4-5",
                parts=[
                    TextPart(text="Checking weather, hotels, a route map and flights."),
                    ToolCallPart(
                        id="call_weather", name="get_weather", arguments={"city": "Lisbon"}
                    ),
                    ToolCallPart(id="call_hotel", name="book_hotel", arguments={"nights": 3}),
                    ToolCallPart(id="call_map", name="render_route", arguments={"stops": 4}),
                    ToolCallPart(id="call_flights", name="search_flights", arguments={"to": "LIS"}),
                ],
            ),
            Message.tool_result("call_weather", {"forecast": "sunny", "high_c": 24}),
            Message.tool_result("call_hotel", ErrorOutput(message="no rooms left in Alfama")),
        ],
    )
    # The route tool returns an image and a PDF: a ContentOutput. The image is the same bytes
    # the user sent, so the blob store keeps it once.
    route = ContentOutput(
        parts=[
            TextPart(text="Route: Baixa -> Alfama -> Belem -> LX Factory"),
            FilePart.from_bytes(image, filename="route.png"),
            FilePart.from_bytes(pdf, filename="itinerary.pdf"),
        ]
    )
    completed = await store.complete_tool_call(conversation.id, "call_map", route)

    loaded = await store.load(conversation.id)
    _heading("stored conversation")
    print(conversation_view(loaded))

    _heading("tool-call lifecycles")
    for call in loaded.tool_calls:
        print(f"  {call.name:<15} {call.status.value:<9} result_kind={call.result_kind}")

    _heading("attachments: bytes in the blob store, once each")
    references = [
        f.attachment.sha256 for m in loaded.messages for f in m.files if f.attachment is not None
    ]
    blobs = {info.sha256: info async for info in store.blob_store.iter_blobs()}
    print(f"  blob store: {store.blobs_url}")
    for sha in dict.fromkeys(references):
        info = blobs.get(sha)
        size = f"{info.size:,} bytes" if info else "MISSING"
        print(f"  {store.blob_store.key(sha)}  {size}  referenced {references.count(sha)}x")
    print(f"  {len(references)} references, {len(set(references))} distinct blobs")

    _heading("the multimodal result, read back")
    output = loaded.get_tool_call("call_map").output
    assert isinstance(output, ContentOutput)
    print(f"  {type(output).__name__} with {[p.kind for p in output.parts]}")
    for part in output.files:
        data = await store.read_attachment(part)
        print(f"  {part.filename}: {part.media_type}, {len(data):,} bytes, hash verified")
    print(f"  complete_tool_call returned status={completed.status.value}")
    assert isinstance(loaded.get_tool_call("call_weather").output, JsonOutput)

    _heading("the same conversation rendered for every target")
    print(_LEGEND)
    renders = {(t, m): await store.render(conversation.id, t, model=m) for t, m in _DEMO_TARGETS}
    for (target, model), rendered in renders.items():
        print(f"  {target:<17} {model:<22} {_render_summary(rendered)}")
    chat = renders["openai-chat", "gpt-5"]
    print("\n  openai-chat payload (base64 shortened):")
    for line in json.dumps(_shorten(chat.payload), indent=2, ensure_ascii=False).splitlines():
        print("    " + line)

    # Index what the demo wrote now, not in the background (the process may end first): the
    # first `convstore search` then reads the file without opening the store.
    await store.search_index.catch_up()
    _heading("where it is, and what to try next")
    database = sqlite_path(store.url)
    where = str(database.resolve()) if database is not None else _masked(store.url)
    print(f"  database: {where}")
    print(f"  attachments: {store.blobs_url}")
    url = "" if store.url == DEFAULT_URL else f" --url {shlex.quote(_masked(store.url))}"
    print(f"  convstore show {conversation.id}{url}")
    print(f"  convstore search weather{url}")
    print(f"  convstore render {conversation.id} --to anthropic{url}")
    print(f"  convstore render {conversation.id} --to gemini --model gemini-2.5-flash{url}")
    print(f"  convstore list{url}")
    print(f"  convstore fsck{url}")


DEMO_ID = "demo-trip-to-lisbon"
"""The demo conversation's id."""

_DEMO_TARGETS = (
    ("openai-chat", "gpt-5"),
    ("openai-responses", "gpt-5"),
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-flash"),
    ("mistral", "mistral-medium-latest"),
    ("kimi", "kimi-k2-thinking"),
)


_LEGEND = """\
  Each line: target, model, then what the request holds and how convstore made it valid:
    items      entries in the request's list (messages / input / contents), system prompt
               included where the target keeps it there
    media      where the image and PDF went: user (in a user message), native (inside the
               tool result), nested (Gemini 3 functionResponse parts), sibling (parts beside
               Gemini 2.x function responses), user_message (a user message after the tool
               messages, for Chat Completions and dialects), text_note (a text note: the
               target takes no such file there)
    synthetic  calls with no stored result (here the pending search_flights), answered with
               a synthetic error result so the request is valid: wire id (why)
"""


def _masked(url: str) -> str:
    """``url`` without its password (for printing)."""
    try:
        return parse_url(url).render_as_string(hide_password=True)
    except ConvstoreError:
        return "<an unparsable URL>"


def _render_summary(rendered: Rendered) -> str:
    diagnostics = rendered.diagnostics
    items = next(iter(rendered.payload.values()))
    placements = sorted({m.placement for m in diagnostics.media})
    synthetic = ", ".join(f"{s.wire_id} ({s.reason})" for s in diagnostics.synthetic_results)
    return (
        f"{len(items)} items; media: {'/'.join(placements) or '-'}; synthetic: {synthetic or '-'}"
    )


def _shorten(value: Any) -> Any:
    """``value`` with long base64 strings cut, for printing."""
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if isinstance(value, str) and len(value) > 80 and " " not in value:
        return f"{value[:40]}...({len(value):,} chars)"
    return value
