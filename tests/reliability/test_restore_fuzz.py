"""Restore fuzz: mutated real export archives raise only `ConvstoreError`s and store only loadable
conversations (issue 32, acceptance 2).

A real export (files, a tool call with its result and a pending one, a branch, a popped seq, a
compaction, state, an idempotency key, checkpoints) is mutated `CASES` times by a seeded
mutator: cells set to hostile values (wrong types, huge and negative integers, NaN, NUL, lone
surrogates, over-long strings, timestamps without offsets, other rows' values), nested part
JSON rewritten, rows dropped or repeated, columns dropped, rows moved to other conversations,
manifest entries changed, zip bytes truncated or flipped. Every restore either writes or raises
a `ConvstoreError`; whatever it wrote loads again, on every branch, and renders or raises a
`ConvstoreError`. ``CONVSTORE_FUZZ_SEED`` picks another seed (the failure message names it).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import random
import uuid
import zipfile
from collections import Counter
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
from convstore.errors import ConversationNotFoundError, ConvstoreError
from convstore.imports import import_file
from convstore.limits import MAX_CONVERSATION_ID_LENGTH, check_text
from convstore.store.checkpoints import ChannelValue, PendingWrite
from tests.support.images import noise_png

pytestmark = pytest.mark.slow  # thousands of inputs or subprocesses: make test, not test-fast

CASES = {"sqlite": 2_000, "postgres": 300}
SEED = int(os.environ.get("CONVSTORE_FUZZ_SEED") or 20261129)

HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1, 2, 2**31, 2**63, -(2**70), 1.5, float("nan"), "", "x",
    "\x00", "a\x00b", "\ud800", "bad \udfff", "\u202eevil", "m" * 300, "t" * 10_000,
    "2026-13-45T00:00:00+00:00", "2026-01-01T00:00:00", "not base64!", "AA==", [], {}, [1],
    [[]], {"kind": "text"}, {"kind": "video"}, {"a": [1, {"b": None}]}, "pending", "wizard",
    "sha256", "0" * 64,
]  # fmt: skip


async def _seed(store: ConversationStore, tenant: str) -> None:
    conv = await store.create_conversation(title="plans", tenant=tenant, metadata={"k": [1, 2]})
    cid = conv.id
    png, photo = noise_png(41, 24, 24), noise_png(42, 20, 20)
    first = await store.append(
        cid,
        [
            Message.system("Be brief."),
            Message.user("look", FilePart.from_bytes(png, filename="a.png"), id="u1"),
            Message.assistant(ToolCallPart(id="call_1", name="lookup", arguments={"q": "x"})),
            Message.tool_result("call_1", JsonOutput(value={"hits": [1]})),
            Message.assistant("done", provider="openai", model="gpt-5"),
        ],
        tenant=tenant,
        idempotency_key="k1",
    )
    await store.append(cid, [Message.assistant("other")], tenant=tenant, parent_seq=first[1].seq)
    await store.switch_branch(cid, head_seq=first[-1].seq or 0, tenant=tenant)
    await store.append(cid, [Message.user("oops")], tenant=tenant)
    await store.pop(cid, tenant=tenant)
    await store.append(
        cid,
        [
            Message.user("more", FilePart.from_bytes(photo)),
            Message.assistant(ToolCallPart(id="call_2", name="slow", arguments={})),
        ],
        tenant=tenant,
    )
    await store.update_state(cid, {"step": 2}, tenant=tenant)
    await store.compact(cid, through_seq=first[3].seq or 0, summary="so far")
    graph = await store.create_conversation(title="graph", tenant=tenant)
    await store.append(graph.id, [Message.user("thread")], tenant=tenant)
    await store.checkpoints.put(
        graph.id,
        checkpoint_ns="",
        checkpoint_id="1ef01",
        parent_checkpoint_id=None,
        checkpoint_type="msgpack",
        checkpoint=b"\x81\xa1v\x01",
        channel_versions={"plan": "1"},
        metadata={"step": 1},
        values=[ChannelValue("plan", "1", "msgpack", b"\x01")],
        tenant=tenant,
    )
    await store.checkpoints.put_writes(
        graph.id,
        checkpoint_ns="",
        checkpoint_id="1ef01",
        writes=[PendingWrite("task-1", 0, "plan", "msgpack", b"\x02")],
        tenant=tenant,
    )


class Mutator:
    """Seeded mutations of an export's members (manifest and conversation documents)."""

    def __init__(self, rng: random.Random, members: dict[str, bytes]) -> None:
        self.rng = rng
        self.members = members
        self.manifest = json.loads(members["manifest.json"])
        self.documents = {
            c["file"]: json.loads(members[c["file"]]) for c in self.manifest["conversations"]
        }

    def hostile(self, near: Any = None) -> Any:
        rng = self.rng
        if isinstance(near, int) and not isinstance(near, bool) and rng.random() < 0.3:
            return near + rng.choice([-1, 1, 1000])
        return copy.deepcopy(rng.choice(HOSTILE))

    def case(self) -> tuple[dict[str, bytes], list[str]]:
        """One mutated archive's members, and what was done."""
        rng = self.rng
        manifest = copy.deepcopy(self.manifest)
        documents = copy.deepcopy(self.documents)
        done = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            done.append(self.mutate(manifest, documents))
        members = dict(self.members)
        members["manifest.json"] = json.dumps(manifest).encode()
        for name, document in documents.items():
            members[name] = json.dumps(document).encode()
        self.ids = sorted({i for d in documents.values() if _valid_id(i := _id_of(d))})
        return members, done

    def mutate(self, manifest: dict[str, Any], documents: dict[str, Any]) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.08:
            entry = rng.choice(manifest["blobs"] + manifest["conversations"])
            key = rng.choice(sorted(entry))
            entry[key] = self.hostile(entry[key])
            return f"manifest {key}"
        document = documents[rng.choice(sorted(documents))]
        archive = document.get("archive")
        if not isinstance(archive, dict) or not isinstance(archive.get("tables"), dict):
            return "(already broken)"
        tables = archive["tables"]
        name = rng.choice(sorted(tables))
        body = tables[name]
        columns, rows = body["columns"], body["rows"]
        if roll < 0.6 and rows:
            row = rng.choice(rows)
            i = rng.randrange(len(columns))
            if isinstance(row[i], list | dict) and rng.random() < 0.6:
                self.nested(row[i])
                return f"{name}.{columns[i]} nested"
            row[i] = self.hostile(row[i])
            return f"{name}.{columns[i]}"
        if roll < 0.7 and rows:
            rows.remove(rng.choice(rows))
            return f"{name} row dropped"
        if roll < 0.8 and rows:
            rows.append(copy.deepcopy(rng.choice(rows)))
            return f"{name} row repeated"
        if roll < 0.85 and len(columns) > 1:
            i = rng.randrange(len(columns))
            del columns[i]
            for row in rows:
                del row[i]
            return f"{name} column dropped"
        if roll < 0.93 and rows and "conversation_id" in columns:
            i = columns.index("conversation_id")
            other = [d["id"] for d in documents.values()] + ["someone-else"]
            rng.choice(rows)[i] = rng.choice(other)
            return f"{name} row moved"
        key = rng.choice(["tables", "format", "version", "archive"])
        target = document["archive"] if key != "archive" else document
        target[key] = self.hostile()
        return f"document {key}"

    def nested(self, value: Any) -> None:
        """Replace or delete one value somewhere inside ``value`` (a list or dict)."""
        rng = self.rng
        node = value
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                return
            key = rng.choice(keys)
            child = node[key]
            if isinstance(child, list | dict) and child and rng.random() < 0.6:
                node = child
                continue
            if isinstance(node, dict) and rng.random() < 0.25:
                del node[key]
            else:
                node[key] = self.hostile(child)
            return


def _id_of(document: Any) -> Any:
    """The conversation id a (mutated) document's rows name, if they still name one."""
    try:
        body = document["archive"]["tables"]["conversations"]
        return body["rows"][0][body["columns"].index("id")]
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _valid_id(value: Any) -> bool:
    """Whether ``value`` is an id `load` takes (others cannot have been restored)."""
    try:
        check_text(value, "id", max_length=MAX_CONVERSATION_ID_LENGTH)
    except ConvstoreError:
        return False
    return isinstance(value, str)


def _write(path: Path, members: dict[str, bytes], rng: random.Random) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        for name, data in members.items():
            out.writestr(name, data)
    if rng.random() < 0.03:
        raw = bytearray(path.read_bytes())
        if rng.random() < 0.5:
            del raw[rng.randrange(len(raw)) :]
        else:
            for _ in range(4):
                raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(raw))


async def _check_loadable(store: ConversationStore, cid: str) -> None:
    """The conversation loads, on every branch, and renders or raises a ConvstoreError."""
    await store.load(cid)
    for tip in await store.branches(cid):
        await store.load(cid, head_seq=tip.head_seq)
    with contextlib.suppress(ConvstoreError):
        await store.render(cid, "anthropic", model="claude-sonnet-4-5")
    await store.delete_conversation(cid)


async def test_mutated_archives_raise_only_convstore_errors(
    store: ConversationStore, db_url: str, tmp_path: Path
) -> None:
    tenant = f"fuzz-{uuid.uuid4().hex[:8]}"  # the PostgreSQL database is shared by tests
    await _seed(store, tenant)
    source = tmp_path / "source.zip"
    await store.export(source, tenant=tenant)
    ids = [c.id for c in await store.list_conversations(tenant=tenant)]
    for cid in ids:
        await store.delete_conversation(cid)
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    rng = random.Random(SEED)
    mutator = Mutator(rng, members)
    cases = CASES["postgres" if db_url.startswith("postgresql") else "sqlite"]
    outcomes: Counter[str] = Counter()
    path = tmp_path / "case.zip"
    for n in range(cases):
        mutated, done = mutator.case()
        _write(path, mutated, rng)
        try:
            await import_file(store, path, "convstore")
            outcomes["restored"] += 1
        except ConvstoreError as exc:
            outcomes[type(exc).__name__] += 1
        except Exception as exc:  # the failure this test exists to find
            pytest.fail(f"seed {SEED}, case {n} ({done}): {type(exc).__name__}: {exc}")
        for cid in sorted({*ids, *mutator.ids}):  # a mutated id restores under that id
            try:
                await _check_loadable(store, cid)
            except ConversationNotFoundError:
                continue
            except Exception as exc:
                pytest.fail(f"seed {SEED}, case {n} ({done}): not loadable: {exc!r}")
    assert sum(outcomes.values()) == cases
    # The mutator reaches both sides: some archives still restore, most are refused.
    assert outcomes["restored"] > cases // 50, outcomes
    assert outcomes["MalformedExportError"] > cases // 2, outcomes
