"""Conversations the MCP tests read: the search tests' multilingual corpus, an agent run with
every tool-call lifecycle, images and a second branch, and a long chat to page through.

Everything is written through the public store API, as an application would.
"""

from __future__ import annotations

from dataclasses import dataclass

from convstore import (
    ContentOutput,
    ConversationStore,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    TextPart,
    ToolCallPart,
)
from tests.store.test_search import CORPUS
from tests.support.images import noise_png

PHOTO = noise_png(1, 64, 48)
CHART = noise_png(2, 80, 60)
HUGE = noise_png(3, 900, 900)  # about 2.4 MB: above the per-image cap
LONG_MESSAGES = 45


@dataclass(frozen=True, slots=True)
class Seeded:
    """Where the seeded conversations are."""

    tenant: str | None
    corpus: dict[str, str]
    agent: str
    long: str
    main_tip: int
    branch_tip: int


async def seed(store: ConversationStore, tenant: str | None) -> Seeded:
    """Write the conversations into ``tenant``."""
    corpus = {}
    for name, (title, messages) in CORPUS.items():
        conv = await store.create_conversation(title=title, tenant=tenant)
        for message in messages:
            await store.append(conv.id, message, tenant=tenant)
        corpus[name] = conv.id

    agent = await store.create_conversation(title="Quarterly sales agent", tenant=tenant)
    await store.append(
        agent.id,
        [
            Message.user(
                "Plot the EMEA sales and compare them with this photo.",
                FilePart.from_bytes(PHOTO, media_type="image/png", filename="photo.png"),
                id="u-1",
            ),
            Message.assistant(
                "Fetching the sales.",
                ToolCallPart(id="call_sales", name="get_sales", arguments={"region": "EMEA"}),
                id="a-1",
            ),
            Message.tool_result("call_sales", {"total": 1234.5, "currency": "EUR"}, id="t-1"),
        ],
        tenant=tenant,
    )
    await store.append(
        agent.id,
        [
            Message.assistant(
                ToolCallPart(id="call_chart", name="render_chart", arguments={"kind": "bar"})
            ),
            Message.tool_result(
                "call_chart",
                ContentOutput(
                    parts=[
                        TextPart(text="chart rendered"),
                        FilePart.from_bytes(CHART, media_type="image/png", filename="chart.png"),
                    ]
                ),
            ),
            Message.assistant(
                ToolCallPart(id="call_mail", name="send_mail", arguments={"to": "ops@example.com"})
            ),
            Message.tool_result("call_mail", ErrorOutput(message="SMTP relay refused the message")),
            Message.assistant(ToolCallPart(id="call_slow", name="slow_lookup", arguments={})),
        ],
        tenant=tenant,
    )
    await store.append(
        agent.id,
        [
            Message.user(
                "Never mind the lookup; here is the full-size scan.",
                FilePart.from_bytes(HUGE, media_type="image/png", filename="scan.png"),
            ),
            Message.assistant("EMEA sales were 1,234.50 EUR.", id="a-final"),
        ],
        tenant=tenant,
    )
    main_tip = (await store.load(agent.id, tenant=tenant)).messages[-1].seq
    assert main_tip is not None
    # A second branch after the sales result, then the head moves back to the main one.
    branch = await store.append(
        agent.id,
        [
            Message.assistant(
                "Checking the archive instead.",
                ToolCallPart(id="call_archive", name="search_archive", arguments={"q": "2024"}),
            ),
            Message.tool_result("call_archive", JsonOutput(value={"archived_total": 999})),
        ],
        tenant=tenant,
        parent_seq=3,
    )
    branch_tip = branch[-1].seq
    assert branch_tip is not None
    await store.switch_branch(agent.id, head_seq=main_tip, tenant=tenant)

    long = await store.create_conversation(title="A long chat", tenant=tenant)
    await store.append(
        long.id,
        [
            Message.user(f"question number {i}") if i % 2 else Message.assistant(f"answer {i}")
            for i in range(1, LONG_MESSAGES + 1)
        ],
        tenant=tenant,
    )
    return Seeded(
        tenant=tenant,
        corpus=corpus,
        agent=agent.id,
        long=long.id,
        main_tip=main_tip,
        branch_tip=branch_tip,
    )
