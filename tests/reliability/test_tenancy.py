"""Tenancy: no public read, render, write, delete or attachment read crosses tenants.

Tenant ``acme`` owns a conversation with a stored file and two pending tool calls. Tenant
``evil`` tries every public method that names a conversation or an attachment. Each attempt
must fail exactly as it does for an id that was never used (same error class, same message and
arguments once the id is masked, same chained cause), and must change nothing: the conversation,
its calls, its compactions, its ``updated_at`` and its listing are compared before and after.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from convstore import (
    AttachmentNotFoundError,
    ContentOutput,
    ConversationNotFoundError,
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    TextPart,
    ToolCallPart,
)
from convstore.errors import ConflictError, ConvstoreError
from convstore.model import AttachmentRef
from convstore.store.ids import new_id
from tests.providers.conversations import PDF, PNG, TARGET_MODELS

SECRET = PNG + b"acme's quarterly numbers"


@dataclass
class World:
    store: ConversationStore
    owner: str
    """``acme-…``: unique per test (the PostgreSQL database is shared by the whole session)."""
    intruder_tenant: str
    """``evil-…``."""
    owned: str
    """``acme``'s conversation."""
    untenanted: str
    """A conversation created without a tenant."""
    deleted: str
    """An ``acme`` conversation that was deleted."""
    intruder: str
    """``evil``'s own conversation."""
    secret: FilePart
    """The stored file part of ``acme``'s conversation."""


@pytest.fixture
async def world(store: ConversationStore) -> World:
    tag = uuid.uuid4().hex[:8]
    owner, intruder = f"acme-{tag}", f"evil-{tag}"
    owned = await store.create_conversation(tenant=owner, title="owned")
    (first, _) = await store.append(
        owned.id,
        [
            Message.user("numbers", FilePart.from_bytes(SECRET, filename="q3.png")),
            Message.assistant(
                ToolCallPart(id="c1", name="lookup", arguments={"q": 1}),
                ToolCallPart(id="c2", name="lookup", arguments={"q": 2}),
            ),
        ],
        tenant=owner,
        idempotency_key="acme-key",
    )
    await store.compact(owned.id, through_seq=1, summary="earlier", tenant=owner)
    untenanted = await store.create_conversation(title="no tenant")
    await store.append(untenanted.id, Message.user("hello"))
    deleted = await store.create_conversation(tenant=owner)
    await store.delete_conversation(deleted.id, tenant=owner)
    theirs = await store.create_conversation(tenant=intruder)
    secret = first.parts[1]
    assert isinstance(secret, FilePart)
    return World(store, owner, intruder, owned.id, untenanted.id, deleted.id, theirs.id, secret)


async def snapshot(world: World) -> Any:
    """Everything a cross-tenant attempt could change, read as the trusted caller."""
    store = world.store
    conversations = [await store.load(cid) for cid in (world.owned, world.untenanted)]
    listing = await store.list_conversations(limit=1000)
    # Blobs the stored rows reference, read back (a failed append may leave an unreferenced
    # blob of the caller's own bytes behind for gc; see the test below).
    blobs = {
        part.attachment.sha256: await store.read_attachment(part)
        for conversation in conversations
        for message in conversation.messages
        for part in message.parts
        if isinstance(part, FilePart) and part.attachment is not None
    }
    return conversations, sorted(listing, key=lambda s: s.id), blobs


Attempt = Callable[[ConversationStore, str, str], Awaitable[Any]]
"""(store, conversation id, tenant) -> the call under test."""


def _result() -> ContentOutput:
    return ContentOutput(parts=[TextPart(text="forged")])


ATTEMPTS: dict[str, Attempt] = {
    "load": lambda s, cid, t: s.load(cid, tenant=t),
    "load last=1": lambda s, cid, t: s.load(cid, tenant=t, last=1),
    "load last=0": lambda s, cid, t: s.load(cid, tenant=t, last=0),
    **{
        f"render {target} {model}": (
            lambda s, cid, t, target=target, model=model: s.render(
                cid, target, model=model, tenant=t
            )
        )
        for target, model in TARGET_MODELS
    },
    "render with placeholders": lambda s, cid, t: s.render(
        cid, "anthropic", tenant=t, missing_attachments="placeholder"
    ),
    "delete_conversation": lambda s, cid, t: s.delete_conversation(cid, tenant=t),
    "append": lambda s, cid, t: s.append(cid, Message.user("injected"), tenant=t),
    "append a file": lambda s, cid, t: s.append(
        cid, Message.user(FilePart.from_bytes(PDF)), tenant=t
    ),
    "append replaying the owner's idempotency key": lambda s, cid, t: s.append(
        cid, Message.user("replay?"), tenant=t, idempotency_key="acme-key"
    ),
    "append a result for a pending call": lambda s, cid, t: s.append(
        cid, Message.tool_result("c1", "forged"), tenant=t
    ),
    "complete_tool_call": lambda s, cid, t: s.complete_tool_call(
        cid, "c1", JsonOutput(value="forged"), tenant=t
    ),
    "complete_tool_call of an unknown call": lambda s, cid, t: s.complete_tool_call(
        cid, "no-such-call", _result(), tenant=t
    ),
    "cancel_tool_calls": lambda s, cid, t: s.cancel_tool_calls(cid, tenant=t),
    "compact": lambda s, cid, t: s.compact(cid, through_seq=1, summary="forged", tenant=t),
    "compact out of range": lambda s, cid, t: s.compact(
        cid, through_seq=10_000, summary="forged", tenant=t
    ),
}


def _masked(exc: BaseException, *secrets: str) -> tuple[Any, ...]:
    """What a caller can observe of an error, with the ids it was given masked."""

    def mask(value: Any) -> Any:
        text = str(value)
        for secret in secrets:
            text = text.replace(secret, "<id>")
        return text

    cause = exc.__cause__
    return (
        type(exc),
        mask(exc),
        tuple(mask(a) for a in exc.args),
        tuple(sorted((k, mask(v)) for k, v in vars(exc).items())),
        type(cause),
        mask(cause) if cause is not None else None,
        exc.__suppress_context__,
    )


async def _error(attempt: Awaitable[Any]) -> ConvstoreError:
    with pytest.raises(ConvstoreError) as raised:
        await attempt
    return raised.value


@pytest.mark.parametrize("attempt", ATTEMPTS.values(), ids=ATTEMPTS.keys())
async def test_another_tenants_conversation_is_indistinguishable_from_a_missing_one(
    world: World, attempt: Attempt
) -> None:
    store = world.store
    before = await snapshot(world)
    missing = new_id()
    observed = {}
    for label, cid, tenant in [
        ("other tenant's", world.owned, world.intruder_tenant),
        ("never used", missing, world.intruder_tenant),
        ("deleted", world.deleted, world.owner),
        ("tenant-less, asked with a tenant", world.untenanted, world.intruder_tenant),
        ("the owner's, tenant in another case", world.owned, world.owner.upper()),
        ("the owner's, with trailing space", world.owned, world.owner + " "),
        ("the owner's, with a LIKE wildcard", world.owned, "%"),
        ("the owner's, with a LIKE wildcard", world.owned, "_" + world.owner[1:]),
        ("the owner's, as the empty tenant", world.owned, ""),
    ]:
        error = await _error(attempt(store, cid, tenant))
        assert isinstance(error, ConversationNotFoundError), (label, error)
        assert error.conversation_id == cid
        observed[label, tenant] = _masked(error, cid)
    assert len(set(observed.values())) == 1, observed
    assert await snapshot(world) == before


async def test_the_owner_still_sees_everything(world: World) -> None:
    store = world.store
    conversation = await store.load(world.owned, tenant=world.owner)
    assert [c.status for c in conversation.tool_calls] == ["pending", "pending"]
    assert len(conversation.messages) == 2 and conversation.compaction is not None
    assert await store.read_attachment(world.secret, tenant=world.owner) == SECRET
    for target, model in TARGET_MODELS:
        await store.render(world.owned, target, model=model, tenant=world.owner)


async def test_listing_never_shows_another_tenants_conversations(world: World) -> None:
    store = world.store
    for tenant, expected in [
        (world.intruder_tenant, {world.intruder}),
        (world.owner, {world.owned}),
        (world.owner.upper(), set()),
        (world.owner[:-1] + "%", set()),
    ]:
        listed = await store.list_conversations(tenant=tenant, limit=1000)
        assert {s.id for s in listed} == expected, tenant
        assert all(s.tenant == tenant for s in listed)
    everything = {s.id for s in await store.list_conversations(limit=1000)}
    assert {world.owned, world.untenanted, world.intruder} <= everything
    assert world.deleted not in everything


async def test_attachment_reads_do_not_cross_tenants(world: World) -> None:
    store = world.store
    before = await snapshot(world)
    secret = world.secret
    assert secret.attachment is not None
    never_stored = hashlib.sha256(b"never stored").hexdigest()
    unknown = FilePart(
        media_type="image/png", attachment=AttachmentRef(sha256=never_stored, size=3)
    )
    observed = []
    for part, tenant in [
        (secret, world.intruder_tenant),
        (secret, world.owner.upper()),
        (secret, ""),
        (unknown, world.intruder_tenant),
        (unknown, world.owner),
    ]:
        assert part.attachment is not None
        with pytest.raises(AttachmentNotFoundError) as raised:
            await store.read_attachment(part, tenant=tenant)
        sha = part.attachment.sha256
        observed.append(_masked(raised.value, store.blob_store.key(sha), sha))
        assert store.blob_store.url not in str(raised.value)  # no storage path, ever
    assert len(set(observed)) == 1, observed
    assert await snapshot(world) == before


async def test_a_failed_cross_tenant_append_writes_no_rows(world: World) -> None:
    # Blobs go in before the transaction that checks the tenant, so the intruder's bytes may
    # stay behind unreferenced (collected by `convstore gc`); no row refers to them, and the
    # owner's conversation is untouched (the parametrised test above compares everything).
    store = world.store
    payload = PDF + b"intruder"
    with pytest.raises(ConversationNotFoundError):
        await store.append(
            world.owned, Message.user(FilePart.from_bytes(payload)), tenant=world.intruder_tenant
        )
    referenced = {
        part.attachment.sha256
        for cid in (world.owned, world.untenanted, world.intruder)
        for message in (await store.load(cid)).messages
        for part in message.parts
        if isinstance(part, FilePart) and part.attachment is not None
    }
    assert hashlib.sha256(payload).hexdigest() not in referenced


async def test_choosing_an_id_another_tenant_uses_is_a_conflict(world: World) -> None:
    """A documented limit: conversation ids are global, so creating one with an id already
    taken reports a conflict whoever took it. Generated ids (the default: 26-character ULIDs
    with 80 random bits) cannot be guessed; applications that choose ids should put the tenant
    in them."""
    store = world.store
    with pytest.raises(ConflictError, match="already exists") as raised:
        await store.create_conversation(id=world.owned, tenant=world.intruder_tenant)
    assert world.owner not in str(raised.value) and world.owned not in str(raised.value)
    assert re.fullmatch(r"[0-9A-Z]{26}", world.owned)


# --------------------------------------------------------------------------------------------
# Forged attachment references: a content hash is not a capability
# --------------------------------------------------------------------------------------------


def _forged(sha256: str, size: int) -> FilePart:
    return FilePart(media_type="image/png", attachment=AttachmentRef(sha256=sha256, size=size))


async def test_a_forged_reference_to_another_tenants_blob_is_refused(world: World) -> None:
    # Today: evil, knowing only the SHA-256 of acme's file, appends a reference to it to its
    # own conversation; then read_attachment(tenant="evil") and render return acme's bytes.
    store = world.store
    forged = _forged(hashlib.sha256(SECRET).hexdigest(), len(SECRET))
    before = await snapshot(world)
    for write in (
        lambda: store.append(
            world.intruder, Message.user("mine now", forged), tenant=world.intruder_tenant
        ),
        lambda: store.append(
            world.intruder,
            [
                Message.assistant(ToolCallPart(id="x", name="f")),
                Message.tool_result("x", ContentOutput(parts=[forged])),
            ],
            tenant=world.intruder_tenant,
        ),
    ):
        with pytest.raises(AttachmentNotFoundError):
            await write()
    assert await snapshot(world) == before
    with pytest.raises(AttachmentNotFoundError):
        await store.read_attachment(forged, tenant=world.intruder_tenant)


async def test_a_forged_reference_fails_like_a_reference_to_nothing(world: World) -> None:
    # Today the two differ (the append succeeds vs a DatabaseError from the foreign key): an
    # oracle telling evil whether anyone stored a given file.
    store = world.store
    observed = []
    for sha256 in (hashlib.sha256(SECRET).hexdigest(), hashlib.sha256(b"nothing").hexdigest()):
        with pytest.raises(ConvstoreError) as raised:
            await store.append(
                world.intruder, Message.user(_forged(sha256, 1)), tenant=world.intruder_tenant
            )
        assert isinstance(raised.value, AttachmentNotFoundError)
        observed.append(_masked(raised.value, store.blob_store.key(sha256), sha256))
    assert observed[0] == observed[1]


async def test_a_reference_to_a_blob_never_stored_is_attachment_not_found(
    store: ConversationStore,
) -> None:
    # Today: a DatabaseError (foreign key violation) for the trusted, tenant-less caller too.
    conv = await store.create_conversation()
    with pytest.raises(AttachmentNotFoundError):
        await store.append(conv.id, Message.user(_forged("0" * 64, 1)))
    assert (await store.load(conv.id)).messages == []


async def test_a_reference_the_tenant_can_already_see_is_kept(world: World) -> None:
    # Re-referencing a blob of one's own conversation (a copy of a stored part) is allowed.
    store = world.store
    copy = await store.append(world.owned, Message.user(world.secret), tenant=world.owner)
    assert copy[0].parts[0] == world.secret
    assert await store.read_attachment(world.secret, tenant=world.owner) == SECRET
