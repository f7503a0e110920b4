"""Search properties on every database (issue 21, acceptance 1), with hypothesis.

- Every stored message whose text contains a random word (any case, any script, inside other
  text) is found, and nothing else is; after pop, truncate and delete the removed messages are
  not found, the others still are.
- Tenant scoping holds under concurrent writers: while two tenants append the same word at the
  same time, each tenant's searches return only, and all of, its own messages.

The oracle is Python's own case-insensitive substring test over the texts the test wrote.
"""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convstore import ConversationStore, Message

SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Letters whose lower and upper case are one character each in both directions, from several
# scripts (CJK has no case), so Python's case folding is the databases' too.
_LETTERS = "abcdefghijklmnopqrstuvwxyzäöüéñçøABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÜÉÑÇØ東京北海道語大阪"
WORDS = st.text(alphabet=_LETTERS, min_size=1, max_size=6)
FILLER = st.text(alphabet=_LETTERS + " .,-_", max_size=30)


def _open(db_url: str) -> ConversationStore:
    return ConversationStore(
        db_url,
        blobs=f"memory://search-{uuid.uuid4().hex}",
        auto_migrate=True,
        sqlite_synchronous="normal",
    )


def _contains(text: str, word: str) -> bool:
    return word.lower() in text.lower()


class TestFoundExactly:
    @SETTINGS
    @given(
        word=WORDS,
        texts=st.lists(
            st.tuples(FILLER, st.booleans(), FILLER, st.sampled_from(["lower", "upper", "same"])),
            min_size=1,
            max_size=8,
        ),
        removal=st.sampled_from(["pop", "truncate", "delete"]),
    )
    def test_every_message_with_the_word_is_found_until_removed(
        self,
        db_url: str,
        word: str,
        texts: list[tuple[str, bool, str, str]],
        removal: str,
    ) -> None:
        written = []
        for before, has_word, after, case in texts:
            inner = {"lower": word.lower(), "upper": word.upper(), "same": word}[case]
            written.append(f"{before}{inner if has_word else ''}{after}")

        async def scenario() -> None:
            tenant = f"prop-{uuid.uuid4().hex}"
            async with _open(db_url) as store:
                conv = await store.create_conversation(tenant=tenant)
                other = await store.create_conversation(tenant=tenant)
                await store.append(conv.id, [Message.user(t) for t in written], tenant=tenant)
                await store.append(other.id, Message.user(f"x {word} y"), tenant=tenant)

                async def found(cid: str) -> list[int | None]:
                    page = await store.search(word, tenant=tenant, conversation_id=cid, limit=100)
                    return sorted(h.seq for h in page if h.seq is not None)

                expected = [i + 1 for i, t in enumerate(written) if _contains(t, word)]
                assert await found(conv.id) == expected
                match removal:
                    case "pop":
                        await store.pop(conv.id, tenant=tenant)
                        kept = len(written) - 1
                    case "truncate":
                        kept = len(written) // 2
                        await store.truncate(conv.id, after_seq=kept, tenant=tenant)
                    case "delete":
                        await store.delete_conversation(conv.id, tenant=tenant)
                        kept = 0
                assert await found(conv.id) == [s for s in expected if s <= kept]
                assert await found(other.id) == [1]

        asyncio.run(scenario())


class TestTenantScoping:
    @SETTINGS
    @given(
        word=WORDS.filter(lambda w: len(w) >= 2),
        counts=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    )
    def test_each_tenant_sees_only_its_own_messages_while_both_write(
        self, db_url: str, word: str, counts: tuple[int, int]
    ) -> None:
        async def scenario() -> None:
            run = uuid.uuid4().hex
            tenants = [f"a-{run}", f"b-{run}"]
            async with _open(db_url) as store:
                convs = [await store.create_conversation(tenant=t) for t in tenants]

                async def writer(index: int) -> None:
                    for n in range(counts[index]):
                        message = Message.user(f"{tenants[index]} {n} says {word}")
                        await store.append(convs[index].id, message, tenant=tenants[index])

                async def reader() -> None:
                    for _ in range(4):
                        for index, tenant in enumerate(tenants):
                            page = await store.search(word, tenant=tenant, limit=100)
                            assert {h.conversation_id for h in page} <= {convs[index].id}
                        await asyncio.sleep(0)

                await asyncio.gather(writer(0), writer(1), reader())
                for index, tenant in enumerate(tenants):
                    page = await store.search(word, tenant=tenant, limit=100)
                    assert sorted(h.seq for h in page) == list(range(1, counts[index] + 1))
                    assert {h.conversation_id for h in page} == {convs[index].id}

        asyncio.run(scenario())
