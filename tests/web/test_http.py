"""The inspector over HTTP (httpx on the ASGI app, same event loop as the store).

On SQLite and PostgreSQL: every page 200 for its tenant and 404 for another's, every non-GET
405, 401 without the token, attachment headers, escaping, branches without moving the head,
paging of long conversations and listings.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from convstore import ConversationStore, Message, ThinkingPart, Usage
from convstore.store import fsck
from convstore.web import create_app
from tests.web.seed import (
    BRANCH_REPLY,
    BRANCH_TEXT,
    HTML_FILE,
    JAVASCRIPT_LINK,
    ONERROR_TEXT,
    SCRIPT_TEXT,
    SVG_WITH_SCRIPT,
    add_branch,
    add_hostile,
    add_trip,
)


class Tags(HTMLParser):
    """The elements and attributes a browser would build from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attributes: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.attributes.extend((name, value or "") for name, value in attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


METHODS = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def client(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765", **kwargs)


@pytest.fixture
def tenant() -> str:
    return f"acme-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def seeded(store: ConversationStore, tenant: str) -> dict[str, str]:
    trip = await add_trip(store, tenant=tenant)
    other = await add_trip(store, tenant=f"{tenant}-other")
    return {"trip": trip, "other": other}


def routes_for(cid: str, sha: str) -> list[str]:
    return [
        "/",
        "/?q=Trip",
        "/health",
        f"/conversations/{cid}",
        f"/conversations/{cid}?head=6",
        f"/conversations/{cid}/render?target=anthropic&model=claude-sonnet-4-5&last=2",
        f"/conversations/{cid}.json",
        f"/attachments/{sha}",
    ]


async def image_sha(store: ConversationStore, cid: str, tenant: str) -> str:
    loaded = await store.load(cid, tenant=tenant)
    sha = loaded.messages[1].files[0].attachment
    assert sha is not None
    return sha.sha256


async def test_every_page_is_200_for_its_tenant_and_404_for_another(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    own = routes_for(seeded["trip"], await image_sha(store, seeded["trip"], tenant))
    async with client(create_app(store, tenant=tenant)) as http:
        for path in own:
            response = await http.get(path)
            assert response.status_code == 200, path
        # Another tenant's conversation, on every conversation route (its attachments: below).
        for path in routes_for(seeded["other"], "")[3:-1]:
            response = await http.get(path)
            assert response.status_code == 404, path
        listing = (await http.get("/")).text
        assert seeded["trip"] in listing
        assert seeded["other"] not in listing


async def test_an_attachment_only_another_tenant_references_is_404(
    store: ConversationStore, tenant: str
) -> None:
    hostile = await add_hostile(store, tenant=f"{tenant}-other")
    async with client(create_app(store, tenant=tenant)) as http:
        response = await http.get(f"/attachments/{hostile.png}")
        assert response.status_code == 404
        assert (await http.get("/attachments/not-a-hash")).status_code == 404
        assert (await http.get(f"/attachments/{'0' * 64}")).status_code == 404
    async with client(create_app(store, tenant=f"{tenant}-other")) as http:
        assert (await http.get(f"/attachments/{hostile.png}")).status_code == 200


async def test_every_method_but_get_is_405_and_nothing_changes(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    before = await store.load(seeded["trip"], tenant=tenant)
    paths = routes_for(seeded["trip"], await image_sha(store, seeded["trip"], tenant))
    async with client(create_app(store, tenant=tenant)) as http:
        for path in [*paths, "/no/such/page", "/static/style.css"]:
            for method in METHODS:
                response = await http.request(method, path, content=b"{}")
                assert response.status_code == 405, (method, path)
                assert response.headers["allow"] == "GET, HEAD"
    after = await store.load(seeded["trip"], tenant=tenant)
    assert after.revision == before.revision
    assert after == before


async def test_with_a_token_every_request_needs_it(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    token = "s3cret-" + uuid.uuid4().hex
    paths = routes_for(seeded["trip"], await image_sha(store, seeded["trip"], tenant))
    async with client(create_app(store, tenant=tenant, token=token)) as http:
        for path in [*paths, "/static/style.css", "/no/such/page"]:
            assert (await http.get(path)).status_code == 401, path
            wrong = {"authorization": f"Bearer {token}x"}
            assert (await http.get(path, headers=wrong)).status_code == 401, path
            assert (await http.get(path, headers={"authorization": token})).status_code == 401
            assert (await http.post(path)).status_code == 401, path
            right = {"authorization": f"Bearer {token}"}
            expected = 404 if path == "/no/such/page" else 200
            assert (await http.get(path, headers=right)).status_code == expected, path
        # A browser opens one link with ?token=; the cookie it gets carries the rest.
        first = await http.get(f"/?token={token}")
        assert first.status_code == 200
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert (await http.get("/health")).status_code == 200  # the client kept the cookie
    async with client(create_app(store, tenant=tenant, token=token)) as fresh:
        assert (await fresh.get(f"/?token={token}x")).status_code == 401
    wrong_cookie = {"convstore_token": token[:-1]}
    async with client(create_app(store, tenant=tenant, token=token), cookies=wrong_cookie) as bad:
        assert (await bad.get("/")).status_code == 401


async def test_attachments_are_served_with_sniffed_types_and_never_run(
    store: ConversationStore, tenant: str
) -> None:
    hostile = await add_hostile(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        png = await http.get(f"/attachments/{hostile.png}")
        assert png.headers["content-type"] == "image/png"
        assert png.headers["content-disposition"] == "inline"
        assert "max-age=31536000" in png.headers["cache-control"]
        for sha, body in (
            (hostile.svg, SVG_WITH_SCRIPT),
            (hostile.html, HTML_FILE),
            (hostile.unknown, None),
        ):
            response = await http.get(f"/attachments/{sha}?name=../../etc/x%22.svg")
            assert response.status_code == 200
            if body is not None:
                assert response.content == body
            # No signature proves SVG or HTML: neither is ever served as a renderable type.
            assert response.headers["content-type"] == "application/octet-stream"
            disposition = response.headers["content-disposition"]
            assert disposition == 'attachment; filename="etc_x_.svg"'
        for response in (png, await http.get(f"/attachments/{hostile.svg}")):
            assert response.headers["x-content-type-options"] == "nosniff"
            csp = response.headers["content-security-policy"]
            assert "default-src 'none'" in csp
            assert "sandbox" in csp


async def test_stored_strings_are_escaped(store: ConversationStore, tenant: str) -> None:
    hostile = await add_hostile(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        pages = [
            (await http.get("/")).text,
            (await http.get(f"/conversations/{hostile.id}")).text,
            (await http.get(f"/conversations/{hostile.id}/render?target=openai-chat")).text,
        ]
    for page in pages:
        tags = Tags()
        tags.feed(page)
        # No real element is a script, carries an event handler or a javascript: URL (the
        # text and attribute values may say so, escaped).
        assert "script" not in tags.names
        assert not [name for name, _ in tags.attributes if name.startswith("on")]
        assert not [v for _, v in tags.attributes if v.strip().lower().startswith("javascript:")]
    shown = Tags()
    shown.feed(pages[1])
    for text in (SCRIPT_TEXT, ONERROR_TEXT, JAVASCRIPT_LINK):
        assert text in "".join(shown.text)  # shown as text, exactly
    # Pages run no script at all, whatever got through.
    async with client(create_app(store, tenant=tenant)) as http:
        csp = (await http.get("/")).headers["content-security-policy"]
    assert "script-src" not in csp
    assert "default-src 'none'" in csp


async def test_conversation_markup_hooks(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    cid = seeded["trip"]
    loaded = await store.load(cid, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{cid}")).text
    seqs = [int(s) for s in re.findall(r'<article [^>]*data-seq="(\d+)"', page)]
    assert seqs == [m.seq for m in loaded.messages]
    roles = re.findall(r'<article [^>]*data-role="(\w+)"', page)
    assert roles == [m.role.value for m in loaded.messages]
    assert 'data-message-id="u1"' in page
    assert 'data-message-id="a1"' in page
    statuses = dict(re.findall(r'data-call-id="([^"]+)" data-status="(\w+)"', page))
    assert statuses == {call.id: call.status.value for call in loaded.tool_calls}
    assert statuses == {
        "call_weather": "complete",
        "call_hotel": "error",
        "call_map": "complete",
        "call_flights": "pending",
    }


async def test_render_page_holds_the_exact_payload(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    cid = seeded["trip"]
    async with client(create_app(store, tenant=tenant)) as http:
        for target, model, last in (
            ("openai-chat", "gpt-5", None),
            ("gemini", "gemini-3-pro-preview", None),
            ("anthropic", "claude-sonnet-4-5", 2),
        ):
            query = f"target={target}&model={model}" + (f"&last={last}" if last else "")
            page = (await http.get(f"/conversations/{cid}/render?{query}")).text
            found = re.search(r'data-payload="([^"]*)"', page)
            assert found is not None
            expected = await store.render(cid, target, model=model, tenant=tenant, last=last)
            assert json.loads(html.unescape(found.group(1))) == expected.payload
            assert "data-diagnostics" in page
        assert (await http.get(f"/conversations/{cid}/render?target=nope")).status_code == 400
        assert (await http.get(f"/conversations/{cid}/render?last=-1")).status_code == 400


async def test_another_branch_is_shown_without_moving_the_head(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    cid = seeded["trip"]
    old_tip = await add_branch(store, cid, at_seq=2)
    before = await store.load(cid, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        active = (await http.get(f"/conversations/{cid}")).text
        assert BRANCH_TEXT in active
        assert f'href="?head={old_tip}"' in active
        assert f'href="?head={before.head_seq}"' in active
        other = (await http.get(f"/conversations/{cid}?head={old_tip}")).text
        shown = other[other.index('<section class="messages">') :]
        assert BRANCH_TEXT not in shown
        assert BRANCH_REPLY not in shown
        # The branch list previews where the other branch leaves this path.
        assert re.search(
            r"leaves this path at #\d+ \(user\):</span>\s*<span class=\"preview\">"
            + re.escape(BRANCH_TEXT),
            other,
        )
        assert 'data-call-id="call_weather" data-status="complete"' in other
        # A seq that is no message of the conversation is refused (how: the store's choice).
        assert (await http.get(f"/conversations/{cid}?head=999")).status_code in (400, 404)
        assert (await http.get(f"/conversations/{cid}?head=x")).status_code == 400
    after = await store.load(cid, tenant=tenant)
    assert (after.head_seq, after.revision) == (before.head_seq, before.revision)


async def test_a_long_conversation_opens_with_its_newest_messages_and_pages_back(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    await store.append(conversation.id, [Message.user(f"message {i}") for i in range(1, 251)])
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
        seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', page)]
        assert seqs == list(range(151, 251))
        older = re.search(r'href="([^"]*before=151[^"]*)"', page)
        assert older is not None
        page = (await http.get(html.unescape(older.group(1)))).text
        assert [int(s) for s in re.findall(r'data-seq="(\d+)"', page)] == list(range(51, 151))
        page = (await http.get(f"/conversations/{conversation.id}?before=51")).text
        assert [int(s) for s in re.findall(r'data-seq="(\d+)"', page)] == list(range(1, 51))
        assert "before=1&" not in page
        assert "older messages" not in page


async def test_the_listing_pages_by_cursor_filters_and_searches(
    store: ConversationStore, tenant: str
) -> None:
    for i in range(55):
        await store.create_conversation(
            title=f"chat {i}" + (" about Lisbon" if i % 10 == 0 else ""),
            tenant=tenant,
            metadata={"bucket": i % 2},
        )
    async with client(create_app(store, tenant=tenant)) as http:
        first = (await http.get("/")).text
        ids = re.findall(r'<li data-conversation-id="([^"]+)"', first)
        assert len(ids) == 50
        cursor = re.search(r'href="([^"]*cursor=[^"]*)"', first)
        assert cursor is not None
        second = (await http.get(html.unescape(cursor.group(1)))).text
        more = re.findall(r'<li data-conversation-id="([^"]+)"', second)
        assert len(more) == 5
        assert not set(ids) & set(more)
        assert "chat 54" in first  # newest first
        found = (await http.get("/?q=lisbon")).text
        titles = re.findall(r">(chat \d+ about Lisbon)<", found)
        assert sorted(titles) == sorted(f"chat {i} about Lisbon" for i in range(0, 55, 10))
        odd = (await http.get("/?meta=bucket=1")).text
        assert len(re.findall(r"<li data-conversation-id=", odd)) == 27


async def test_health_reports_revision_counts_and_fsck(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    async with client(create_app(store, tenant=tenant)) as http:
        report = (await http.get("/health?format=json")).json()
        assert report["conversations"] == 1
        assert report["messages"] == 6  # five appended, and the result complete_tool_call added
        assert re.fullmatch(r"\w+", report["schema_revision"])
        assert (await http.get("/health?fsck=1")).status_code == 400  # every tenant's blobs
    async with client(create_app(store)) as http:
        page = await http.get("/health?fsck=1")
        assert page.status_code == 200
        # The blob check covers the whole database (shared by the PostgreSQL tests).
        expected = "ok" if (await fsck(store)).ok else "problems"
        assert f'data-fsck="{expected}"' in page.text


async def test_thinking_usage_and_compaction_are_shown(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    await store.append(
        conversation.id,
        [
            Message.user("What is 17 * 23?"),
            Message.assistant(
                ThinkingPart(text="17 * 23 = 391.", signature="c2lnbmF0dXJl"),
                "391.",
                provider="anthropic",
                model="claude-sonnet-4-5",
                usage=Usage(input_tokens=120, output_tokens=40, reasoning_tokens=25),
            ),
            Message.user("And 391 + 9?"),
            Message.assistant("400."),
        ],
    )
    await store.compact(conversation.id, through_seq=2, summary="Asked for 17 * 23 (391).")
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
    tags = Tags()
    tags.feed(page)
    assert "details" in tags.names  # thinking, collapsed until opened
    assert re.search(r"<details class=\"thinking\">\s*<summary>thinking \(anthropic/claude", page)
    assert "17 * 23 = 391." in "".join(tags.text)
    assert "120 in · 40 out · 25 reasoning" in page
    mark = re.search(r'data-compaction-through="2">([^<]*)<q>([^<]*)</q>', page)
    assert mark is not None
    assert html.unescape(mark.group(2)) == "Asked for 17 * 23 (391)."
    # The mark sits right after message #2, before #3.
    assert page.index('data-seq="2"') < mark.start() < page.index('data-seq="3"')


async def test_search_lists_message_and_title_hits_with_marks(
    store: ConversationStore, tenant: str, seeded: dict[str, str]
) -> None:
    await add_hostile(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get("/?q=lisbon")).text
        rows = re.findall(
            r'<li class="hit" data-conversation-id="([^"]+)"(?: data-seq="(\d+)")?', page
        )
        assert rows and {cid for cid, _ in rows} == {seeded["trip"]}  # not the other tenant's
        assert "<mark>Lisbon</mark>" in page or "<mark>lisbon</mark>" in page
        hostile = (await http.get("/", params={"q": "<script>"})).text
        assert "<script>" not in hostile
        assert "<mark>&lt;script&gt;</mark>" in hostile
