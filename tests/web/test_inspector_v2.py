"""The inspector v2 (issue 33) over HTTP, on SQLite and PostgreSQL: the markup hooks of
CONTRACT.md v4 and what they show.

Markdown rendered safely, sibling arrows over a three-way regeneration, usage and time per
message, JSON strings shown as JSON, a LangGraph thread's checkpoint timeline, search hits
grouped and linked to their branch, the listing's previews and markers, downloads that keep
their names, a favicon and the follow mode.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from typing import Any

import httpx
import pytest

from convstore import (
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    ToolCallPart,
    Usage,
)
from convstore.web import create_app
from tests.web.seed import add_langgraph_thread
from tests.web.test_http import Tags

MARKDOWN = """Here is **Saturday**:

- Ribeira at *ten*
- lunch at `Café Santiago`

```python
def walk(city: str) -> str:
    return f"walking in {city}"
```

See [the map](https://example.org/porto) or [this](javascript:alert('md-link')).
<img src=x onerror="alert('md-img')"> ![tracker](https://tracker.example/p.png)

```html
<script>alert('fence')</script>
```
"""


def client(app: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765")


@pytest.fixture
def tenant() -> str:
    return f"acme-{uuid.uuid4().hex[:8]}"


def _articles(page: str) -> dict[int, str]:
    """Each message's article markup by seq."""
    found = {}
    for match in re.finditer(r'<article id="m(\d+)".*?</article>', page, re.DOTALL):
        found[int(match.group(1))] = match.group(0)
    return found


async def test_markdown_is_rendered_highlighted_and_safe(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant, title="Porto")
    await store.append(
        conversation.id, [Message.user("Plan **Saturday**"), Message.assistant(MARKDOWN)]
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
    reply = _articles(page)[2]
    body = reply[reply.index("data-markdown") :]
    assert "<strong>Saturday</strong>" in body
    assert "<li>Ribeira at <em>ten</em></li>" in body
    assert "<code>Café Santiago</code>" in body
    # The code block: highlighted on the server, as class-marked spans.
    assert '<code class="language-python"><span class="k">def</span>' in body
    assert '<a href="https://example.org/porto" rel="nofollow noopener noreferrer">' in body
    tags = Tags()
    tags.feed(page)
    assert "script" not in tags.names
    assert not [name for name, _ in tags.attributes if name.startswith("on")]
    hrefs = [value for name, value in tags.attributes if name in ("href", "src")]
    assert not [h for h in hrefs if h.lower().startswith(("javascript:", "https://tracker"))]
    text = "".join(tags.text)
    assert "[this](javascript:alert('md-link'))" in text  # left as text, not a link
    assert "<img src=x onerror=\"alert('md-img')\">" in text
    assert "<script>alert('fence')</script>" in text
    assert "[image: tracker] (https://tracker.example/p.png)" in text


async def test_sibling_arrows_walk_a_three_way_regeneration(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    cid = conversation.id
    await store.append(cid, [Message.user("Plan a day in Porto.")])  # 1
    await store.append(cid, [Message.assistant("Start at Ribeira.")])  # 2
    await store.append(cid, [Message.assistant("Begin at Lello.")], parent_seq=1)  # 3
    await store.append(cid, [Message.assistant("Walk the bridge.")], parent_seq=1)  # 4
    await store.append(cid, [Message.user("And lunch?"), Message.assistant("Bifana.")])  # 5, 6
    await store.switch_branch(cid, head_seq=2, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        seen = []
        url = f"/conversations/{cid}"
        for _ in range(3):
            page = (await http.get(url)).text
            answer = next(a for a in _articles(page).values() if 'data-role="assistant"' in a)
            index = re.search(r'data-siblings="(\d)/3"', answer)
            assert index is not None
            seen.append(int(index.group(1)))
            assert 'data-siblings="' not in _articles(page)[1]  # the question has none
            following = re.search(r'href="([^"]*)" data-sibling-next', answer)
            if following is None:
                break
            url = f"/conversations/{cid}" + html.unescape(following.group(1)).split("#")[0]
        assert seen == [1, 2, 3]
        # The third answer's branch goes on: its newest tip is the path shown.
        assert "Bifana." in page
        assert url.endswith("?head=6")
        # And back.
        back = re.search(r'href="([^"]*)" data-sibling-prev', answer)
        assert back is not None
        assert html.unescape(back.group(1)) == "?head=3#m3"
        # The split is marked under the question.
        assert 'data-split="1">branches here into 3' in page


async def test_usage_time_and_author_are_shown_and_totalled(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    first = Usage(input_tokens=1200, output_tokens=300, cached_tokens=1000)
    second = Usage(input_tokens=1600, output_tokens=80, reasoning_tokens=64)
    await store.append(
        conversation.id,
        [
            Message.user("Weather?"),
            Message.assistant("Sunny.", provider="openai", model="gpt-5", usage=first),
            Message.user("Tomorrow?"),
            Message.assistant("Rain.", provider="anthropic", model="claude", usage=second),
        ],
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
    articles = _articles(page)
    usage = re.search(r'data-usage="([^"]*)"', articles[2])
    assert usage is not None
    assert json.loads(html.unescape(usage.group(1))) == first.model_dump()
    assert "openai/gpt-5" in articles[2]
    assert re.search(r'class="since"[^>]*>\+\d', articles[2])
    total = re.search(r'data-usage-total="([^"]*)"', page)
    assert total is not None
    assert json.loads(html.unescape(total.group(1))) == {
        "input_tokens": 2800,
        "output_tokens": 380,
        "cached_tokens": 1000,
        "reasoning_tokens": 64,
    }
    assert "data-usage" not in articles[1]


async def test_a_json_string_result_is_shown_as_the_json_it_holds(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    held = {"city": "Porto", "forecast": ["sun", "rain"], "note": 'a "quoted" word'}
    await store.append(
        conversation.id,
        [
            Message.user("Weather?"),
            Message.assistant(ToolCallPart(id="call_1", name="weather", arguments={})),
            Message.tool_result("call_1", JsonOutput(value=json.dumps(held))),
        ],
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
    shown = re.search(r"<pre class=\"json\" data-json-string>(.*?)</pre>", page, re.DOTALL)
    assert shown is not None
    assert json.loads(html.unescape(shown.group(1))) == held
    assert "&#34;\\&#34;city" not in page  # not a string of escaped JSON


async def test_a_langgraph_threads_checkpoint_timeline(
    store: ConversationStore, tenant: str
) -> None:
    cid, seqs = await add_langgraph_thread(store, tenant=tenant)
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{cid}")).text
        other = (await http.get("/")).text
    entries = re.findall(
        r'<li data-checkpoint="([^"]+)"( class="fork")?>(.*?)</li>', page, re.DOTALL
    )
    assert [e[0] for e in entries] == ["1f0-a", "1f0-b", "1f0-c", "1f0-d", "1f0-e"]
    by_id = {checkpoint_id: (fork, body) for checkpoint_id, fork, body in entries}
    assert "step -1" in by_id["1f0-a"][1]
    assert "ran <code>agent</code>" in by_id["1f0-b"][1]
    assert "ran <code>tools</code>" in by_id["1f0-c"][1]
    assert 'data-interrupts="1"' in by_id["1f0-d"][1]
    assert by_id["1f0-e"][0] == ' class="fork"'
    assert not by_id["1f0-c"][0]
    link = re.search(r'href="([^"]*)" data-checkpoint-head="(\d+)"', by_id["1f0-c"][1])
    assert link is not None
    assert html.unescape(link.group(1)) == f"?head={seqs[2]}#m{seqs[2]}"
    # An untitled thread is named by its first user words.
    assert "What is the weather in Porto?" in other
    assert '<h1>What is the weather in Porto? <span class="meta">(untitled' in page


async def test_search_hits_are_grouped_and_open_their_branch(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant, title="Trips")
    cid = conversation.id
    await store.append(cid, [Message.user("Plan Porto."), Message.assistant("Ribeira first.")])
    await store.append(cid, [Message.assistant("Try the zanzibarine tarts.")], parent_seq=1)
    await store.append(cid, [Message.user("More?"), Message.assistant("Lello.")])  # 4, 5
    await store.switch_branch(cid, head_seq=2, tenant=tenant)
    newer = await store.create_conversation(tenant=tenant, title="Food")
    await store.append(newer.id, [Message.user("Are zanzibarine tarts sweet?")])
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get("/?q=zanzibarine")).text
        groups = re.findall(r'<section class="hits-group" data-conversation-id="([^"]+)"', page)
        assert groups == [newer.id, cid]  # newest activity first
        hit = re.search(
            r'data-seq="3" data-on-active-path="false">\s*<a href="([^"]*)" data-link="hit"', page
        )
        assert hit is not None
        assert html.unescape(hit.group(1)) == f"/conversations/{cid}?head=5#m3"
        assert 'class="off-path"' in page
        on_path = re.search(r'data-seq="1" data-on-active-path="true">\s*<a href="([^"]*)"', page)
        assert on_path is not None
        assert html.unescape(on_path.group(1)) == f"/conversations/{newer.id}?head=1#m1"
        opened = (await http.get(html.unescape(hit.group(1)).split("#")[0])).text
    assert 'id="m3"' in opened
    assert "zanzibarine tarts" in _articles(opened)[3]


async def test_the_listing_previews_the_last_message_and_marks_waiting_calls(
    store: ConversationStore, tenant: str
) -> None:
    waiting = await store.create_conversation(tenant=tenant, title="Booking")
    await store.append(
        waiting.id,
        [
            Message.user("Book it."),
            Message.assistant("Booking now.", ToolCallPart(id="call_b", name="book", arguments={})),
        ],
    )
    untitled = await store.create_conversation(tenant=tenant)
    await store.append(
        untitled.id, [Message.system(""), Message.user("  Which   train to Braga? " * 10)]
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get("/")).text
    rows = dict(re.findall(r'<li data-conversation-id="([^"]+)">(.*?)</li>', page, re.DOTALL))
    assert 'data-waiting="1"' in rows[waiting.id]
    assert "assistant: Booking now." in rows[waiting.id]
    assert "data-waiting" not in rows[untitled.id]
    assert re.search(r"<span data-untitled>Which train to Braga\? Which", rows[untitled.id])


async def test_downloads_keep_their_names_and_text_is_text(
    store: ConversationStore, tenant: str
) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    notes = "Día 1: Ribeira\nDía 2: Lello\n".encode()
    await store.append(
        conversation.id,
        [
            Message.user(
                "Notes attached.",
                FilePart.from_bytes(notes, media_type="text/plain", filename="Itinerário.txt"),
            )
        ],
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
        link = re.search(r'<a class="download" href="([^"]*)"', page)
        assert link is not None
        response = await http.get(html.unescape(link.group(1)))
        assert response.content == notes
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        disposition = response.headers["content-disposition"]
        assert disposition == (
            "attachment; filename=\"Itiner_rio.txt\"; filename*=UTF-8''Itiner%C3%A1rio.txt"
        )
        assert response.headers["x-content-type-options"] == "nosniff"
        for icon_path in ("/static/favicon.svg", "/favicon.ico"):
            icon = await http.get(icon_path)
            assert icon.status_code == 200
            assert icon.headers["content-type"].startswith("image/svg+xml")
        assert 'rel="icon"' in page


async def test_follow_mode_reloads_without_script(store: ConversationStore, tenant: str) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    await store.append(conversation.id, [Message.user("hello")])
    async with client(create_app(store, tenant=tenant)) as http:
        plain = await http.get(f"/conversations/{conversation.id}")
        followed = await http.get(f"/conversations/{conversation.id}?follow=1")
    assert "refresh" not in plain.headers
    assert followed.headers["refresh"] == "3"
    assert "script-src" not in followed.headers["content-security-policy"]
    assert 'data-link="follow" class="following"' in followed.text


async def test_empty_hidden_nodes_are_one_muted_line(store: ConversationStore, tenant: str) -> None:
    conversation = await store.create_conversation(tenant=tenant)
    await store.append(
        conversation.id, [Message.system(""), Message.system("  \n"), Message.user("Hello")]
    )
    async with client(create_app(store, tenant=tenant)) as http:
        page = (await http.get(f"/conversations/{conversation.id}")).text
    articles = _articles(page)
    for seq in (1, 2):
        assert "empty-msg" in articles[seq]
        assert "(empty system message)" in articles[seq]
        assert "data-markdown" not in articles[seq]
    assert "empty-msg" not in articles[3]
