"""The inspector's trust boundaries (issue 32, findings 8, 11 and 12), on SQLite and PostgreSQL.

- DNS rebinding: a ``Host`` that is not an allowed name is 421 on every path, token or not.
- Every numeric parameter is ASCII digits within range, else 400: never a 500.
- Sizes are bounded: the render preview is a window unless the whole is asked for; a huge
  title does not make a huge list page.
- Every id is reachable: ids are one encoded path segment (``/`` included), and an id ending
  in ``.json`` is its own conversation, not another's document.
"""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from convstore import ConversationStore, Message
from convstore.web import create_app
from tests.web.seed import add_branch, add_trip

pytestmark = pytest.mark.usefixtures("store")


def client(app: Any, host: str = "127.0.0.1:8765") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url=f"http://{host}")


@pytest.fixture
def tenant() -> str:
    return f"acme-{uuid.uuid4().hex[:8]}"


async def test_a_host_that_is_not_allowed_is_421_before_anything_else(
    store: ConversationStore, tenant: str
) -> None:
    cid = await add_trip(store, tenant=tenant)
    paths = ["/", f"/conversations/{cid}", "/health", "/static/style.css", "/nowhere"]
    app = create_app(store, tenant=tenant)
    for host in ("attacker.example", "attacker.example:8765", "127.0.0.1.nip.io", "0.0.0.0"):
        async with client(app, host) as http:
            for path in paths:
                response = await http.get(path)
                assert response.status_code == 421, (host, path)
                assert cid not in response.text
    for host in ("127.0.0.1:8765", "localhost", "LOCALHOST:1", "[::1]:8765", "127.8.0.1"):
        async with client(app, host) as http:
            assert (await http.get(f"/conversations/{cid}")).status_code == 200, host
    # A token does not replace the host check, and an added name is answered.
    token = uuid.uuid4().hex
    named = create_app(store, tenant=tenant, token=token, allowed_hosts=["inspector.example"])
    async with client(named, "inspector.example") as http:
        ok = await http.get("/", headers={"authorization": f"Bearer {token}"})
        assert ok.status_code == 200
    async with client(named, "attacker.example") as http:
        refused = await http.get("/", headers={"authorization": f"Bearer {token}"})
        assert refused.status_code == 421
    async with client(create_app(store, tenant=tenant, allowed_hosts=["*"]), "any.example") as h:
        assert (await h.get("/")).status_code == 200


@pytest.mark.parametrize(
    "query",
    [
        "head=²",
        "head=١٢",
        "head=" + "9" * 5000,
        f"head={2**63}",
        "head=-1",
        "head=0",
        "head=1e3",
        "head= 3",
        "head=3&head=4",
        "before=²",
        "before=" + "9" * 5000,
    ],
)
async def test_malformed_numbers_on_the_conversation_page_are_400(
    store: ConversationStore, tenant: str, query: str
) -> None:
    cid = await add_trip(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        response = await http.get(f"/conversations/{cid}?{query}")
    assert response.status_code == 400
    assert "ASCII digits" in response.text


async def test_numbers_at_the_edge_of_the_range_are_answered_not_500(
    store: ConversationStore, tenant: str
) -> None:
    cid = await add_trip(store, tenant=tenant)
    biggest = 2**63 - 1
    async with client(create_app(store, tenant=tenant)) as http:
        for path in (
            f"/conversations/{cid}?head={biggest}",
            f"/conversations/{cid}.json?head={biggest}",
            f"/conversations/{cid}/render?head={biggest}",
        ):
            assert (await http.get(path)).status_code in (400, 404), path
        assert (await http.get(f"/conversations/{cid}/render?last={biggest}")).status_code == 200
        everything = await http.get(f"/conversations/{cid}?before={biggest}")
        assert everything.status_code == 200
        assert "no rooms left" in everything.text
        for bad in ("²", "9" * 5000, "-2", "lots"):
            response = await http.get(f"/conversations/{cid}/render?last={bad}")
            assert response.status_code == 400, bad


async def test_a_thousand_meta_filters_are_refused_at_once(
    store: ConversationStore, tenant: str
) -> None:
    await add_trip(store, tenant=tenant)
    many = "&".join(f"meta=k{i}=v" for i in range(1000))
    async with client(create_app(store, tenant=tenant)) as http:
        started = time.perf_counter()
        response = await http.get(f"/?{many}")
        elapsed = time.perf_counter() - started
        assert response.status_code == 400
        assert "at most 16 meta filters" in response.text
        # Refused before the store is asked (it used to scan for 2-5 s, then raise).
        assert elapsed < 1.0, elapsed
        few = "&".join(f"meta=k{i}=v" for i in range(16))
        assert (await http.get(f"/?{few}")).status_code == 200
        assert (await http.get("/?q=" + "x" * 5000)).status_code == 400


async def test_the_render_preview_is_a_window_unless_the_whole_is_asked_for(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    turns = [
        m
        for i in range(150)
        for m in (Message.user(f"question {i}"), Message.assistant(f"answer {i}"))
    ]
    await store.append(conversation.id, turns)
    base = f"/conversations/{conversation.id}/render?target=openai-chat"
    async with client(create_app(store, tenant=tenant)) as http:
        window = (await http.get(base)).text
        whole = (await http.get(base + "&last=all")).text
    shown = json.loads(html.unescape(re.search(r'data-payload="([^"]*)"', window).group(1)))
    assert 50 <= len(shown["messages"]) <= 52  # widened to the turn's start at most
    assert shown["messages"][-1]["content"] == "answer 149"
    link = re.search(r'href="([^"]*)" data-link="whole"', window)
    assert link is not None
    assert "last=all" in html.unescape(link.group(1))
    everything = json.loads(html.unescape(re.search(r'data-payload="([^"]*)"', whole).group(1)))
    assert len(everything["messages"]) == 300
    assert 'data-link="whole"' not in whole


async def test_a_huge_title_does_not_make_a_huge_page(
    store: ConversationStore, tenant: str
) -> None:
    # The API refuses a title over 4,096 characters (convstore.limits); one stored before that
    # limit (or written by other means) must not make a huge page either.
    conversation = await store.create_conversation(title="short", tenant=tenant)
    await store.append(conversation.id, [Message.user("hello")])
    sql = text("UPDATE conversations SET title = :title WHERE id = :id")
    params = {"title": "T" * 2_000_000, "id": conversation.id}
    await store.backend.write(lambda tx: tx.execute(sql, params))  # type: ignore[arg-type]
    async with client(create_app(store, tenant=tenant)) as http:
        for path in ("/", f"/conversations/{conversation.id}", "/?q=hello"):
            response = await http.get(path)
            assert response.status_code == 200
            assert len(response.content) < 50_000, (path, len(response.content))
            assert "2,000,000 characters" in response.text


async def test_every_id_is_reachable_and_json_is_its_own_route(
    store: ConversationStore, tenant: str
) -> None:
    suffix = uuid.uuid4().hex[:6]
    ids = [
        f"a/b-{suffix}",
        f"abc-{suffix}",
        f"abc-{suffix}.json",
        f"x%2Fy-{suffix}",
        f"../{suffix}",
    ]
    for cid in ids:
        await store.create_conversation(id=cid, title=f"title of {cid}", tenant=tenant)
        await store.append(cid, [Message.user(f"text of {cid}")])
    async with client(create_app(store, tenant=tenant)) as http:
        listing = (await http.get("/")).text
        for cid in ids:
            links = re.findall(
                r'href="(/conversations/[^"]*)">title of ' + re.escape(html.escape(cid)) + "<",
                listing,
            )
            assert len(links) == 1, cid
            page = await http.get(html.unescape(links[0]))
            assert page.status_code == 200, cid
            assert f"text of {html.escape(cid)}" in page.text, cid
            for hook in ("json", "render"):
                link = re.search(rf'href="([^"]*)" data-link="{hook}"', page.text)
                assert link is not None
                response = await http.get(html.unescape(link.group(1)))
                assert response.status_code == 200, (cid, hook)
                assert f"text of {cid}" in (
                    response.text if hook == "render" else json.dumps(response.json())
                ).replace("\\/", "/"), (cid, hook)
        # Typed by hand: the unencoded ".json" of "abc" is abc's document, and the id that
        # ends in ".json" is a page of its own, never the other's document.
        document = (await http.get(f"/conversations/abc-{suffix}.json")).json()
        assert document["id"] == f"abc-{suffix}"
        own = await http.get(f"/conversations/abc-{suffix}%2Ejson")
        assert own.status_code == 200
        assert f"text of abc-{suffix}.json" in own.text
        assert (await http.get(f"/conversations/abc-{suffix}/nothing")).status_code == 404


async def test_head_answers_every_page_without_a_body(
    store: ConversationStore, tenant: str
) -> None:
    cid = await add_trip(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        for path in ("/", f"/conversations/{cid}", "/health", "/static/style.css"):
            response = await http.head(path)
            assert response.status_code == 200, path
            assert response.content == b""
            assert "content-security-policy" in response.headers


async def test_links_on_a_branch_keep_its_head(store: ConversationStore, tenant: str) -> None:
    cid = await add_trip(store, tenant=tenant)
    old_tip = await add_branch(store, cid, at_seq=2)  # the stored head is the new branch now
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{cid}?head={old_tip}")).text
        links = [
            html.unescape(href)
            for href, hook in re.findall(r'href="([^"]*)" data-link="(json|render)"', page)
        ]
        assert links
        assert all(f"head={old_tip}" in link for link in links), links
        render = next(link for link in links if "target=anthropic" in link)
        preview = (await http.get(render)).text
        payload = json.loads(html.unescape(re.search(r'data-payload="([^"]*)"', preview).group(1)))
        texts = json.dumps(payload)
        assert "no rooms left" in texts  # branch A's tool result
        assert "Porto" not in texts  # not branch B's edit
        tabs = re.findall(r'href="([^"]*)" class="[^"]*" data-target=', preview)
        assert tabs
        assert all(f"head={old_tip}" in html.unescape(tab) for tab in tabs)
        document = next(link for link in links if ".json" in link)
        assert len((await http.get(document)).json()["messages"]) == 6
