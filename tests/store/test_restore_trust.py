"""A restore takes an archive from a stranger: it writes only into the conversation it restores.

Each test edits a real export the way its downloader could (issue 32, findings 1-3) and checks
that the restore refuses it with a typed error naming the member and the field, that nothing of
the refused conversation was written, and that no other tenant's conversation or bytes moved.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convstore import (
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    ToolCallPart,
)
from convstore.errors import (
    AttachmentNotFoundError,
    ConversationNotFoundError,
    ConvstoreError,
    MalformedExportError,
)
from convstore.imports import import_file
from convstore.store.transfer.documents import conversation_document
from tests.support.archives import Tables, rows, set_rows, tamper
from tests.support.images import noise_png

PNG = noise_png(31, 40, 40)
SECRET = noise_png(32, 48, 48)
SECRET_B64 = base64.b64encode(SECRET).decode()


async def _victim(store: ConversationStore, tenant: str | None = "victim") -> str:
    conv = await store.create_conversation(title="victim", tenant=tenant)
    await store.append(
        conv.id,
        [Message.user("my secret plans", FilePart.from_bytes(SECRET)), Message.assistant("ok")],
        tenant=tenant,
    )
    return conv.id


async def _mallory_export(store: ConversationStore, tmp_path: Path) -> tuple[Path, str]:
    """Mallory's own conversation (a file, a tool call and its result), exported, then erased."""
    conv = await store.create_conversation(title="mine", tenant="mallory", metadata={"k": 1})
    await store.append(
        conv.id,
        [
            Message.user("look", FilePart.from_bytes(PNG, filename="a.png"), id="u1"),
            Message.assistant(ToolCallPart(id="call_1", name="lookup", arguments={"q": 1})),
            Message.tool_result("call_1", JsonOutput(value={"hits": 2})),
            Message.assistant("done"),
        ],
        tenant="mallory",
        idempotency_key="k-1",
    )
    out = tmp_path / "mallory.zip"
    await store.export(out, tenant="mallory")
    await store.erase_tenant("mallory", now=True)
    return out, conv.id


async def _unchanged(store: ConversationStore, cid: str, before: dict[str, Any]) -> None:
    assert conversation_document(await store.load(cid, tenant="victim")) == before
    # and the victim can still append (no seq of theirs was taken)
    await store.append(cid, [Message.user("still mine")], tenant="victim")


def _next_seq_of(victim: str, seq: int) -> Callable[[Tables], None]:
    def edit(tables: Tables) -> None:
        messages = rows(tables, "messages")
        extra = {**messages[-1], "conversation_id": victim, "seq": seq, "parent_seq": seq - 1}
        extra["message_id"] = None
        extra["parts"] = [{"kind": "text", "text": "attacker text"}]
        set_rows(tables, "messages", [*messages, extra])

    return edit


async def test_a_row_naming_another_conversation_is_refused(
    store: ConversationStore, tmp_path: Path
) -> None:
    victim = await _victim(store)
    before = conversation_document(await store.load(victim, tenant="victim"))
    archive, mine = await _mallory_export(store, tmp_path)
    bad = tamper(archive, tmp_path / "bad.zip", _next_seq_of(victim, 3))
    with pytest.raises(MalformedExportError, match=r"000001\.json.*messages\[4\]\.conversation_id"):
        await import_file(store, bad, "convstore", tenant="mallory")
    with pytest.raises(ConversationNotFoundError):
        await store.load(mine, tenant="mallory")
    assert not [h async for h in _hits(store, "attacker")]
    await _unchanged(store, victim, before)


@pytest.mark.parametrize("table", ["tool_calls", "append_keys", "checkpoints", "compactions"])
async def test_other_tables_naming_another_conversation_are_refused(
    store: ConversationStore, tmp_path: Path, table: str
) -> None:
    victim = await _victim(store)
    before = conversation_document(await store.load(victim, tenant="victim"))
    archive, _ = await _mallory_export(store, tmp_path)
    extra = {
        "tool_calls": {
            "id": "call_x", "seq": 2, "idx": 0, "name": "lookup", "provider_id": None,
            "arguments": {}, "raw_arguments": None, "status": "pending", "result_kind": None,
            "result_seq": None, "result_idx": None, "details": None,
            "created_at": "2026-01-01T00:00:00+00:00", "completed_at": None,
            "cancelled_at": None,
        },
        "append_keys": {
            "key": "stolen", "first_seq": 1, "count": 1,
            "created_at": "2026-01-01T00:00:00+00:00",
        },
        "checkpoints": {
            "checkpoint_ns": "", "checkpoint_id": "1", "parent_checkpoint_id": None,
            "checkpoint_type": "msgpack", "checkpoint": "AA==", "channel_versions": {},
            "metadata": {},
        },
        "compactions": {
            "id": 1, "through_seq": 1, "summary": "s", "created_at": "2026-01-01T00:00:00+00:00",
        },
    }[table]  # fmt: skip

    def edit(tables: Tables) -> None:
        set_rows(tables, table, [*rows(tables, table), {"conversation_id": victim, **extra}])

    bad = tamper(archive, tmp_path / "bad.zip", edit)
    with pytest.raises(MalformedExportError, match=rf"{table}\[\d+\]\.conversation_id"):
        await import_file(store, bad, "convstore", tenant="mallory")
    await _unchanged(store, victim, before)


async def _hits(store: ConversationStore, query: str) -> Any:
    for hit in await store.search(query, tenant="victim"):
        yield hit


@pytest.mark.parametrize("dedupe", ["tenant", "global"])
async def test_a_reference_to_bytes_the_archive_lacks_is_refused(
    db_url: str, blobs_url: str, tmp_path: Path, dedupe: str
) -> None:
    async with ConversationStore(
        db_url,
        blobs=blobs_url,
        auto_migrate=True,
        dedupe=dedupe,  # type: ignore[arg-type]
    ) as store:
        await _victim(store)
        archive, mine = await _mallory_export(store, tmp_path)
        secret = hashlib.sha256(SECRET).hexdigest()

        def edit(tables: Tables) -> None:
            messages = rows(tables, "messages")
            messages[0]["parts"][1]["attachment"] = {"sha256": secret, "size": len(SECRET)}
            set_rows(tables, "messages", messages)
            set_rows(tables, "blob_refs", [])  # the reference row left out

        bad = tamper(archive, tmp_path / "bad.zip", edit)
        with pytest.raises(MalformedExportError, match="blob_refs"):
            await import_file(store, bad, "convstore", tenant="mallory")

        def with_row(tables: Tables) -> None:
            edit(tables)
            set_rows(
                tables,
                "blob_refs",
                [{"conversation_id": mine, "seq": 1, "sha256": secret, "namespace": ""}],
            )

        worse = tamper(archive, tmp_path / "worse.zip", with_row)
        with pytest.raises(MalformedExportError, match=secret) as refused:
            await import_file(store, worse, "convstore", tenant="mallory")
        assert isinstance(refused.value.__cause__, AttachmentNotFoundError)
        with pytest.raises(ConversationNotFoundError):
            await store.load(mine, tenant="mallory")


def _edit_message(change: Callable[[dict[str, Any]], None]) -> Callable[[Tables], None]:
    def edit(tables: Tables) -> None:
        messages = rows(tables, "messages")
        change(messages[0])
        set_rows(tables, "messages", messages)

    return edit


def _edit_header(change: Callable[[dict[str, Any]], None]) -> Callable[[Tables], None]:
    def edit(tables: Tables) -> None:
        header = rows(tables, "conversations")
        change(header[0])
        set_rows(tables, "conversations", header)

    return edit


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(row: dict[str, Any]) -> None:
        row[key] = value

    return change


UNLOADABLE = {
    "seq as a string": (_edit_message(_set("seq", "1")), r"messages\[0\]\.seq must be an integer"),
    "parts not a list": (_edit_message(_set("parts", {"kind": "text"})), r"messages\[0\]\.parts"),
    "unknown part kind": (
        _edit_message(_set("parts", [{"kind": "video", "text": "x"}])),
        r"messages\[0\]",
    ),
    "unknown role": (_edit_message(_set("role", "wizard")), r"messages\[0\].*role"),
    "NUL in a title": (_edit_header(_set("title", "a\x00b")), r"conversations\[0\]\.title.*NUL"),
    "500-character id": (
        _edit_message(_set("message_id", "m" * 500)),
        r"messages\[0\]\.message_id is longer",
    ),
    "10,000-character tenant": (
        _edit_header(_set("tenant", "t" * 10_000)),
        r"conversations\[0\]\.tenant is longer",
    ),
    "head at a missing message": (_edit_header(_set("head_seq", 99)), r"head_seq 99"),
    "huge seq": (
        _edit_message(_set("seq", 2**70)),
        r"messages\[0\]\.seq is outside the column's range",
    ),
    "lone-surrogate title": (
        _edit_header(_set("title", "bad \ud800 title")),
        r"conversations\[0\]\.title.*surrogate",
    ),
    "title over the API's limit": (
        _edit_header(_set("title", "T" * 4_097)),
        r"title must be at most 4,096 characters, got 4,097",  # the API's own check
    ),
    "metadata as a list": (
        _edit_header(_set("metadata", [1, 2])),
        r"conversations\[0\]\.metadata must be a JSON object",
    ),
    "unknown call status": (
        lambda t: set_rows(
            t, "tool_calls", [{**r, "status": "paused"} for r in rows(t, "tool_calls")]
        ),
        r"tool_calls\[0\]\.status",
    ),
    "last_seq below a seq": (_edit_header(_set("last_seq", 1)), r"last_seq 1 is below"),
}


@pytest.mark.parametrize("case", sorted(UNLOADABLE))
async def test_rows_no_load_can_read_are_refused_naming_the_field(
    store: ConversationStore, tmp_path: Path, case: str
) -> None:
    archive, mine = await _mallory_export(store, tmp_path)
    edit, named = UNLOADABLE[case]
    bad = tamper(archive, tmp_path / "bad.zip", edit)
    with pytest.raises(MalformedExportError, match=rf"conversations/000001\.json: .*{named}"):
        await import_file(store, bad, "convstore")
    with pytest.raises(ConversationNotFoundError):
        await store.load(mine)
    # The untouched export still restores (and loads).
    await import_file(store, archive, "convstore")
    assert len((await store.load(mine)).messages) == 4


async def test_every_refusal_is_typed(store: ConversationStore, tmp_path: Path) -> None:
    """Edits that used to raise OverflowError, UnicodeEncodeError or AttributeError."""
    archive, _ = await _mallory_export(store, tmp_path)
    for case, (edit, _named) in UNLOADABLE.items():
        bad = tamper(archive, tmp_path / "bad.zip", edit)
        try:
            await import_file(store, bad, "convstore")
        except ConvstoreError:
            continue
        pytest.fail(f"{case}: accepted")


async def _point_at(url: str, cid: str, parts: list[dict[str, Any]]) -> None:
    """Rewrite a stored message's parts behind the store's back (a row an older restore took)."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    value = "CAST(:parts AS JSON)" if url.startswith("postgresql") else ":parts"
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(f"UPDATE messages SET parts = {value} WHERE conversation_id = :cid"),
                {"parts": json.dumps(parts), "cid": cid},
            )
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("dedupe", "victim"),
    [("global", "victim"), ("tenant", None)],
    ids=["global-dedupe", "untenanted-victim"],
)
async def test_a_render_fetches_only_the_conversations_own_bytes(
    db_url: str, blobs_url: str, dedupe: str, victim: str | None
) -> None:
    # Finding 2: with `dedupe="global"`, or a victim without a tenant (the root namespace), a
    # row naming the victim's digest inlined the victim's bytes into mallory's render.
    secret = hashlib.sha256(SECRET).hexdigest()
    opened = {"blobs": blobs_url, "auto_migrate": True, "dedupe": dedupe}
    async with ConversationStore(db_url, **opened) as store:  # type: ignore[arg-type]
        await _victim(store, victim)
        conv = await store.create_conversation(tenant="mallory")
        await store.append(conv.id, [Message.user("hello")], tenant="mallory")
    reference = {"kind": "file", "media_type": "image/png", "attachment": {"sha256": secret}}
    await _point_at(db_url, conv.id, [{"kind": "text", "text": "see"}, reference])
    async with ConversationStore(db_url, **opened) as store:  # type: ignore[arg-type]
        with pytest.raises(AttachmentNotFoundError) as refused:
            await store.render(conv.id, "anthropic", tenant="mallory")
        assert blobs_url not in str(refused.value)
        placeholder = await store.render(
            conv.id, "anthropic", tenant="mallory", missing_attachments="placeholder"
        )
        assert SECRET_B64 not in json.dumps(placeholder.payload)
        (part,) = (await store.load(conv.id, tenant="mallory")).messages[0].files
        with pytest.raises(AttachmentNotFoundError):
            await store.read_attachment(part, tenant="mallory")


async def test_a_render_error_names_no_storage_path(store: ConversationStore) -> None:
    import fsspec

    conv = await store.create_conversation()
    await store.append(conv.id, [Message.user("pic", FilePart.from_bytes(PNG))])
    sha = hashlib.sha256(PNG).hexdigest()
    key = store.blob_store.key(sha)
    with fsspec.open(key, "wb") as out:
        out.write(PNG[:-1] + b"\x00")  # the bytes rot in storage
    with pytest.raises(ConvstoreError) as failed:
        await store.render(conv.id, "anthropic")
    assert key not in str(failed.value)
    assert key.rsplit(sha, 1)[0] not in str(failed.value)  # nor the directory
    assert sha in str(failed.value)
