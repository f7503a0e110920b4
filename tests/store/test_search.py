"""`ConversationStore.search` on every database (issue 21, acceptance 1).

One fixed corpus (English, German with umlauts, Japanese and Chinese without spaces, code
identifiers, two-letter terms, emoji) is searched with the same queries on SQLite and
PostgreSQL, and each query's hits are asserted in order: both databases must give exactly
these. Then what is searched (titles, tool calls and results, file names, thinking only on
request), the filters, paging, hostile queries and what each write does to the index.
"""

from __future__ import annotations

import uuid

import pytest

from convstore import (
    ContentOutput,
    ConversationStore,
    FilePart,
    InvalidInputError,
    Message,
    SearchPage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

CORPUS: dict[str, tuple[str, list[Message]]] = {
    "en": (
        "Report drafts",
        [
            Message.user("The quarterly report is due on Friday."),
            Message.assistant("Please send the report again: the report had two errors."),
        ],
    ),
    "de": (
        "Einkauf",
        [
            Message.user("Die Größe der Äpfel ärgert mich."),
            Message.assistant("Die Straßenbahn fährt über die Brücke."),
        ],
    ),
    "ja": (
        "旅行",
        [Message.user("東京タワーに行きました"), Message.assistant("京都の寺はきれいです")],
    ),
    "zh": (
        "美食",
        [Message.user("我喜欢吃北京烤鸭"), Message.assistant("北京是中国的首都")],
    ),
    "code": (
        "Debugging",
        [
            Message.assistant(
                "Looking the user up.",
                ToolCallPart(id="c1", name="get_user_by_id", arguments={"user_id": 42}),
            ),
            Message.tool_result("c1", {"name": "Ada Lovelace", "plan": "pro"}),
            Message.assistant("Call parse_json_payload() and retry."),
        ],
    ),
    "short": (
        "Languages",
        [Message.user("Go is fun"), Message.assistant("AI in the loop: Go, Rust 🎉")],
    ),
}


def _key(page: SearchPage, ids: dict[str, str]) -> list[tuple[str, int | None]]:
    names = {cid: name for name, cid in ids.items()}
    return [(names[h.conversation_id], h.seq) for h in page]


@pytest.fixture
async def corpus(store: ConversationStore) -> tuple[str, dict[str, str]]:
    """The corpus in a tenant of its own (the PostgreSQL database is shared by the session)."""
    tenant = f"search-{uuid.uuid4().hex}"
    ids = {}
    for name, (title, messages) in CORPUS.items():
        conv = await store.create_conversation(title=title, tenant=tenant)
        for message in messages:  # one append each: every message its own timestamp
            await store.append(conv.id, message, tenant=tenant)
        ids[name] = conv.id
    return tenant, ids


EXPECTED: dict[str, list[tuple[str, int | None]]] = {
    # The title is weighted up; then the message saying "report" twice.
    "report": [("en", None), ("en", 2), ("en", 1)],
    '"report again"': [("en", 2)],
    "report -errors": [("en", None), ("en", 1)],
    "ÄRGERT größe": [("de", 1)],
    "straßen": [("de", 2)],
    "brücke -straßenbahn": [],
    "東京タワー": [("ja", 1)],
    # Terms under three characters: every hit ranks 0, newest first.
    "京": [("zh", 2), ("zh", 1), ("ja", 2), ("ja", 1)],
    "北京": [("zh", 2), ("zh", 1)],
    "user_id": [("code", 1)],
    "parse_json": [("code", 3)],
    "lovelace": [("code", 2)],
    "go": [("short", 2), ("short", 1)],
    "go rust": [("short", 2)],
    "go -rust": [("short", 1)],  # a short term, a long excluded one
    "ai": [("short", 2), ("en", 2)],  # "again"
    "🎉": [("short", 2)],
    "debug": [("code", None)],
}


async def test_the_corpus_gives_these_hits_in_this_order(
    store: ConversationStore, corpus: tuple[str, dict[str, str]]
) -> None:
    tenant, ids = corpus
    names = {cid: name for name, cid in ids.items()}
    found = {}
    for query in EXPECTED:
        page = await store.search(query, tenant=tenant)
        found[query] = _key(page, ids)
        assert [h.rank for h in page] == sorted((h.rank for h in page), reverse=True)
        for hit in page:
            assert hit.on_active_path
            assert hit.conversation_title == CORPUS[names[hit.conversation_id]][0]
            assert "⟦" in hit.snippet
    assert found == EXPECTED


async def test_hits_say_where_and_what(
    store: ConversationStore, corpus: tuple[str, dict[str, str]]
) -> None:
    tenant, ids = corpus
    [title, *messages] = await store.search("report", tenant=tenant)
    assert (title.seq, title.role, title.message_id) == (None, None, None)
    assert title.snippet == "⟦Report⟧ drafts"
    assert [m.role for m in messages] == ["assistant", "user"]
    assert messages[1].snippet == "The quarterly ⟦report⟧ is due on Friday."
    [call] = await store.search("get_user", tenant=tenant)
    assert call.snippet == 'Looking the user up. ⟦get_user⟧_by_id {"user_id":42}'
    assert call.conversation_id == ids["code"]


async def test_filters_apply_inside_the_query(
    store: ConversationStore, corpus: tuple[str, dict[str, str]]
) -> None:
    tenant, ids = corpus
    assert _key(await store.search("report", tenant=tenant, roles=["user"]), ids) == [("en", 1)]
    assert _key(await store.search("京", tenant=tenant, conversation_id=ids["ja"]), ids) == [
        ("ja", 2),
        ("ja", 1),
    ]
    assert await store.search("report", tenant=f"other-{tenant}") == []
    assert await store.search("report", tenant=tenant, roles=[]) == []


async def test_pages_walk_the_ranking_once(
    store: ConversationStore, corpus: tuple[str, dict[str, str]]
) -> None:
    tenant, ids = corpus
    whole = _key(await store.search("京", tenant=tenant), ids)
    seen: list[tuple[str, int | None]] = []
    page = await store.search("京", tenant=tenant, limit=3)
    while True:
        seen += _key(page, ids)
        if page.next_cursor is None:
            break
        page = await store.search("京", tenant=tenant, limit=3, cursor=page.next_cursor)
    assert seen == whole
    with pytest.raises(InvalidInputError, match="another search"):
        await store.search(
            "北京",
            tenant=tenant,
            limit=3,
            cursor=(await store.search("京", tenant=tenant, limit=3)).next_cursor,
        )
    with pytest.raises(InvalidInputError, match="not a search cursor"):
        await store.search("京", tenant=tenant, cursor="!!")


HOSTILE: dict[str, list[tuple[str, int | None]]] = {
    'report" OR "x': [],
    "NEAR(report friday)": [],
    "report*": [],
    "{title}: report": [],
    '"unbalanced': [],
    "%": [],
    "_": [("code", 3), ("code", 1)],
    "\\": [],
    "'; DROP TABLE messages; --": [],
    "a" * 10_000: [],
    " ".join(["report"] * 2_000): EXPECTED["report"],
    "-report": [],
    "": [],
    "\x00": [],
}


async def test_hostile_queries_are_data(
    store: ConversationStore, corpus: tuple[str, dict[str, str]]
) -> None:
    tenant, ids = corpus
    found = {q: _key(await store.search(q, tenant=tenant), ids) for q in HOSTILE}
    assert found == HOSTILE
    assert await store.search("report", tenant=tenant, conversation_id=ids["en"], limit=0) == []


async def test_operators_and_wildcards_are_searched_as_text(store: ConversationStore) -> None:
    tenant = f"search-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    await store.append(
        conv.id,
        [
            Message.user('say "hi" OR NOT 100% of a_b\\c'),
            Message.assistant("plain words only, xyz"),
        ],
        tenant=tenant,
    )
    for query in ['"OR NOT"', "100%", "a_b", "b\\c", '"hi"', '\\"hi\\"']:
        found = [h.seq for h in await store.search(query, tenant=tenant)]
        assert found == ([1] if query != '\\"hi\\"' else []), query


async def test_tool_results_files_and_thinking(store: ConversationStore) -> None:
    tenant = f"search-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    await store.append(
        conv.id,
        [
            Message.user(
                "see file",
                FilePart(
                    media_type="text/plain",
                    filename="q3-budget.xlsx",
                    uri="https://example.com/q3-budget.xlsx",
                ),
            ),
            Message.assistant(
                ThinkingPart(text="the hidden chain of thought"),
                ToolCallPart(id="t1", name="fetch_page", arguments={"url": "https://a.example"}),
            ),
            Message.tool_result(
                "t1", ContentOutput(parts=[TextPart(text="page body mentions zeppelins")])
            ),
        ],
        tenant=tenant,
    )
    assert [h.seq for h in await store.search("budget", tenant=tenant)] == [1]
    assert [h.seq for h in await store.search("zeppelin", tenant=tenant)] == [3]
    assert [h.seq for h in await store.search("fetch_page", tenant=tenant)] == [2]
    assert await store.search("hidden chain", tenant=tenant) == []
    [hit] = await store.search("hidden chain", tenant=tenant, include_thinking=True)
    assert hit.seq == 2
    assert hit.snippet.endswith("the ⟦hidden⟧ ⟦chain⟧ of thought")


async def test_every_write_keeps_the_index_exact(store: ConversationStore) -> None:
    tenant = f"search-{uuid.uuid4().hex}"

    async def found(query: str) -> dict[tuple[str, int | None], bool]:
        page = await store.search(query, tenant=tenant, limit=100)
        return {(h.conversation_id, h.seq): h.on_active_path for h in page}

    conv = await store.create_conversation(tenant=tenant, title="walrus planning")
    c = conv.id
    await store.append(c, [Message.user("walrus one"), Message.assistant("walrus two")],
                       tenant=tenant)  # fmt: skip
    assert await found("walrus") == {(c, None): True, (c, 1): True, (c, 2): True}
    await store.update_conversation(c, title="narwhal planning", tenant=tenant)
    assert await found("walrus") == {(c, 1): True, (c, 2): True}
    assert await found("narwhal") == {(c, None): True}
    await store.pop(c, tenant=tenant)
    assert await found("walrus") == {(c, 1): True}
    await store.append(c, Message.assistant("walrus three"), tenant=tenant)  # 3
    await store.append(c, Message.user("walrus side"), parent_seq=1, tenant=tenant)  # 4, head
    assert await found("walrus") == {(c, 1): True, (c, 3): False, (c, 4): True}
    fork = await store.fork(c, at_seq=4, tenant=tenant)
    assert await found("side") == {(c, 4): True, (fork.id, 4): True}  # a fork keeps seqs
    await store.truncate(c, after_seq=1, tenant=tenant)
    assert await found("walrus") == {(c, 1): True, (c, 3): False, (fork.id, 1): True,
                                     (fork.id, 4): True}  # fmt: skip
    await store.delete_conversation(fork.id, tenant=tenant)
    assert await found("walrus") == {(c, 1): True, (c, 3): False}


async def test_an_escaped_nul_lookalike_is_text(store: ConversationStore) -> None:
    # Stored JSON escapes a backslash, so the text "\\u0000" is not the NUL escape the
    # PostgreSQL index drops (NUL itself is refused on append, on both databases).
    tenant = f"search-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    await store.append(conv.id, Message.user("before \\u0000 after"), tenant=tenant)
    [hit] = await store.search("\\u0000 after", tenant=tenant)
    assert hit.snippet == "before ⟦\\u0000⟧ ⟦after⟧"


async def test_only_the_newest_matches_are_ranked(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The short messages match best; with a cap of 3 candidates the oldest is not ranked.
    monkeypatch.setattr("convstore.store.search.RANKED_CANDIDATES", 3)
    tenant = f"search-{uuid.uuid4().hex}"
    conv = await store.create_conversation(tenant=tenant)
    long = "a walrus among many other words about the sea and the ice"
    texts = ["walrus", long, long, "walrus", long]
    for text in texts:  # one append each: every message newer than the one before
        await store.append(conv.id, Message.user(text), tenant=tenant)
    assert [h.seq for h in await store.search("walrus", tenant=tenant)] == [4, 5, 3]
    monkeypatch.setattr("convstore.store.search.RANKED_CANDIDATES", 10)
    assert [h.seq for h in await store.search("walrus", tenant=tenant)] == [4, 1, 5, 3, 2]
