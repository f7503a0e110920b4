"""The recognisable write workload of the reliability tests, and the checker that audits it.

Every append is a *batch* whose structure can be recognised in what was stored, so a loaded
conversation tells exactly what arrived, whole or in part, once or twice, and in which order:

- batch ``k`` of writer ``w`` has ``n`` messages (``n`` derived from ``(w, k)``, 1 to 3, or 1 to
  4 with files): ``j=0`` an assistant message tagged ``"w|k|0/n"`` making call ``call-w-k``
  (with a file when ``files``); ``j=1`` the tool message answering it in the same append (a
  `JsonOutput` marked ``via: append``, or a `ContentOutput` with a file); ``j=2`` an assistant
  message tagged ``"w|k|2/n"``; ``j=3`` a user message tagged ``"w|k|3/n"`` carrying a file
  every batch shares (a dedupe hit after the first put).
- a batch of one message leaves its call pending; the writer answers it at once with
  `ConversationStore.complete_tool_call` (a ``via: complete`` result), a second transaction.

`audit` checks a loaded conversation against that structure: sequence numbers are exactly
``1..last_seq``; every batch is whole and its messages are consecutive; each writer's batches
are a prefix ``0..K-1`` of what it wrote, in order; a completion sits between its batch and the
writer's next one; every call's lifecycle agrees with the results stored (a result row iff the
call is complete, at the ``result_seq`` it names); every file references the blob of the bytes
its writer sent. It never needs the whole run: any consistent snapshot passes, which is what
lets readers audit while writers are still running and the crash test audit what a killed
writer left.

Nothing here imports pytest: spawned worker processes and the crash writer use it too.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from convstore import (
    ContentOutput,
    Conversation,
    ConversationStore,
    FilePart,
    JsonOutput,
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolCallStatus,
    ToolResultPart,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SHARED_FILE = PNG_SIGNATURE + hashlib.sha256(b"shared").digest() * 64
"""The file every batch's ``j=3`` message carries: stored once, touched by every later put."""


class AuditError(AssertionError):
    """What was stored breaks the workload's invariants."""


def call_id(writer: str, k: int) -> str:
    """The id of the call batch ``k`` of ``writer`` makes."""
    return f"call-{writer}-{k}"


def batch_size(writer: str, k: int, *, files: bool) -> int:
    """How many messages batch ``k`` of ``writer`` has (deterministic)."""
    return 1 + zlib.crc32(f"{writer}|{k}".encode()) % (4 if files else 3)


def file_bytes(writer: str, k: int, slot: int) -> bytes:
    """The PNG-looking bytes of file ``slot`` of batch ``k`` (2 to 64 KiB, unique per batch)."""
    block = hashlib.sha256(f"{writer}|{k}|{slot}".encode()).digest()
    return PNG_SIGNATURE + block * (64 + zlib.crc32(block) % 1984)


def sha256(data: bytes) -> str:
    """Hex SHA-256 (the blob key of ``data``)."""
    return hashlib.sha256(data).hexdigest()


def completion_output(writer: str, k: int) -> JsonOutput:
    """The output `complete_tool_call` stores for a one-message batch."""
    return JsonOutput(value={"writer": writer, "k": k, "via": "complete"})


def _append_output(writer: str, k: int, *, files: bool) -> JsonOutput | ContentOutput:
    if files:
        return ContentOutput(
            parts=[
                TextPart(text=f"{writer}|{k}|result"),
                FilePart.from_bytes(file_bytes(writer, k, 1)),
            ]
        )
    return JsonOutput(value={"writer": writer, "k": k, "via": "append"})


def build_batch(writer: str, k: int, *, files: bool = False) -> list[Message]:
    """The messages of batch ``k`` of ``writer`` (see the module docstring)."""
    n = batch_size(writer, k, files=files)
    first: list[TextPart | ToolCallPart | FilePart] = [
        TextPart(text=f"{writer}|{k}|0/{n}"),
        ToolCallPart(id=call_id(writer, k), name="probe", arguments={"writer": writer, "k": k}),
    ]
    if files:
        first.append(FilePart.from_bytes(file_bytes(writer, k, 0)))
    batch = [Message(role=Role.ASSISTANT, parts=first)]
    if n >= 2:
        result = ToolResultPart(
            call_id=call_id(writer, k), output=_append_output(writer, k, files=files)
        )
        batch.append(Message(role=Role.TOOL, parts=[result]))
    if n >= 3:
        batch.append(Message.assistant(f"{writer}|{k}|2/{n}"))
    if n >= 4:
        batch.append(Message.user(f"{writer}|{k}|3/{n}", FilePart.from_bytes(SHARED_FILE)))
    return batch


@dataclass(frozen=True, slots=True)
class Written:
    """What one writer was told by the store about one batch."""

    k: int
    seqs: tuple[int, ...]
    completion_seq: int | None


async def write_stream(
    store: ConversationStore,
    conversation_id: str,
    writer: str,
    appends: int,
    *,
    files: bool = False,
    on_write: Callable[[str, int], None] | None = None,
) -> list[Written]:
    """Append ``appends`` batches in order (answering one-message batches at once).

    ``on_write("batch" | "completion", k)`` is called after each write returns.
    """
    written = []
    for k in range(appends):
        stored = await store.append(conversation_id, build_batch(writer, k, files=files))
        if on_write is not None:
            on_write("batch", k)
        completion_seq = None
        if len(stored) == 1:
            call = await store.complete_tool_call(
                conversation_id, call_id(writer, k), completion_output(writer, k)
            )
            completion_seq = call.result_seq
            if on_write is not None:
                on_write("completion", k)
        written.append(Written(k, tuple(m.seq or 0 for m in stored), completion_seq))
    return written


@dataclass(slots=True)
class _Batch:
    n: int
    seqs: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    completions: list[int] = field(default_factory=list)

    @property
    def first(self) -> int:
        return min(self.seqs[0]) if self.seqs[0] else 0


@dataclass(frozen=True, slots=True)
class Audit:
    """What `audit` found (all of it consistent, or it raises)."""

    messages: int
    batches: dict[str, int]
    """Writer -> number of whole batches stored (always a prefix of what it wrote)."""
    completions: int
    unanswered: int
    """Calls stored without a result (the last batch of a writer that stopped early)."""
    positions: dict[tuple[str, int], tuple[tuple[int, ...], int | None]]
    """(writer, k) -> (seqs of the batch, seq of its completion)."""


def _fail(message: str) -> None:
    raise AuditError(message)


def _tag(message: Message) -> tuple[str, int, int, int] | None:
    text = next((p.text for p in message.parts if isinstance(p, TextPart)), None)
    if text is None or text.count("|") != 2 or "/" not in text:
        return None
    writer, k, position = text.split("|")
    j, n = position.split("/")
    return writer, int(k), int(j), int(n)


def _result_of(message: Message) -> tuple[str, int, str]:
    (part,) = message.parts
    assert isinstance(part, ToolResultPart)
    writer, _, k = part.call_id.removeprefix("call-").rpartition("-")
    match part.output:
        case JsonOutput(value={"via": str() as via}):
            return writer, int(k), via
        case ContentOutput():
            return writer, int(k), "append"
        case _:
            raise AuditError(f"unrecognised tool result {part!r}")


def audit(
    conversation: Conversation,
    *,
    last_seq: int | None,
    files: bool = False,
    expect: Mapping[str, int] | None = None,
) -> Audit:
    """Check a fully loaded conversation written only by `write_stream` (see the module doc).

    Args:
        conversation: the conversation, loaded whole (one snapshot).
        last_seq: its ``last_seq`` counter (``ConversationSummary.message_count``) read after
            the writers stopped: every reserved sequence number must hold a message. ``None``
            for a snapshot taken while writers run.
        files: the batches were written with ``files=True``.
        expect: writer -> appends: every writer finished, every batch and completion stored.
    """
    messages = conversation.messages
    seqs = [m.seq for m in messages]
    if seqs != list(range(1, len(messages) + 1)):
        _fail(f"sequence numbers are not 1..{len(messages)} (gap, duplicate or disorder)")
    if last_seq is not None and last_seq != len(messages):
        _fail(f"last_seq is {last_seq} but {len(messages)} messages are stored")
    batches: dict[tuple[str, int], _Batch] = {}
    stray_completions: dict[tuple[str, int], list[int]] = defaultdict(list)
    for message in messages:
        assert message.seq is not None
        if message.role is Role.TOOL:
            writer, k, via = _result_of(message)
            if via == "complete":
                stray_completions[(writer, k)].append(message.seq)
                continue
            j, n = 1, None
        else:
            tag = _tag(message)
            if tag is None:
                _fail(f"message {message.seq} is not part of the workload: {message!r}")
            assert tag is not None
            writer, k, j, n = tag
        batch = batches.get((writer, k))
        if batch is None:
            batch = batches[(writer, k)] = _Batch(n or 0)
        if n is not None:
            if batch.n not in (0, n):
                _fail(f"batch {writer}|{k} holds messages of two shapes")
            batch.n = n
        batch.seqs[j].append(message.seq)
    for key, found in stray_completions.items():
        if key not in batches:
            _fail(f"completion of {key} stored without its call's batch")
        batches[key].completions.extend(found)

    by_writer: dict[str, list[int]] = defaultdict(list)
    for (writer, k), batch in batches.items():
        by_writer[writer].append(k)
        if sorted(batch.seqs) != list(range(batch.n)):
            _fail(f"batch {writer}|{k} is partial: has messages {sorted(batch.seqs)} of {batch.n}")
        if any(len(s) != 1 for s in batch.seqs.values()):
            _fail(f"batch {writer}|{k} has doubled messages: {dict(batch.seqs)}")
        first = batch.first
        if [batch.seqs[j][0] for j in range(batch.n)] != list(range(first, first + batch.n)):
            _fail(f"batch {writer}|{k} is not contiguous: {dict(batch.seqs)}")
        if len(batch.completions) > (1 if batch.n == 1 else 0):
            _fail(f"batch {writer}|{k} has unexpected completions {batch.completions}")

    calls = {call.id: call for call in conversation.tool_calls}
    if len(calls) != len(batches):
        _fail(f"{len(calls)} tool calls stored for {len(batches)} batches")
    completions = unanswered = 0
    positions: dict[tuple[str, int], tuple[tuple[int, ...], int | None]] = {}
    for writer, ks in by_writer.items():
        ks.sort()
        if ks != list(range(len(ks))):
            _fail(f"writer {writer}'s batches are not a prefix of what it wrote: {ks}")
        if expect is not None and len(ks) != expect.get(writer, -1):
            _fail(f"writer {writer} stored {len(ks)} batches, expected {expect.get(writer)}")
        firsts = [batches[(writer, k)].first for k in ks]
        if firsts != sorted(firsts):
            _fail(f"writer {writer}'s batches are out of order: {firsts}")
        for k in ks:
            batch = batches[(writer, k)]
            following = firsts[k + 1] if k + 1 < len(ks) else None
            completion = batch.completions[0] if batch.completions else None
            answered_at = batch.first + 1 if batch.n >= 2 else completion
            if completion is not None:
                completions += 1
                if completion < batch.first or (following is not None and completion > following):
                    _fail(f"completion of {writer}|{k} at {completion} is out of order")
            elif batch.n == 1 and (following is not None or expect is not None):
                _fail(f"batch {writer}|{k}'s call was never completed, yet the writer went on")
            call = calls.get(call_id(writer, k))
            if call is None:
                _fail(f"call {call_id(writer, k)} is missing")
            assert call is not None
            if call.seq != batch.first or call.arguments != {"writer": writer, "k": k}:
                _fail(f"call {call.id} is stored at {call.seq} with {call.arguments}")
            if answered_at is None:
                unanswered += 1
                if call.status not in (ToolCallStatus.PENDING, ToolCallStatus.INTERRUPTED):
                    _fail(f"call {call.id} is {call.status} but no result is stored")
                if call.result_seq is not None or call.output is not None:
                    _fail(f"call {call.id} names a result that is not stored")
            else:
                if call.status is not ToolCallStatus.COMPLETE or call.result_seq != answered_at:
                    _fail(
                        f"call {call.id} is {call.status} at {call.result_seq}, "
                        f"its result is stored at {answered_at}"
                    )
                _check_output(call.output, writer, k, via_completion=batch.n == 1, files=files)
            if files:
                _check_files(messages, batch, writer, k)
            positions[(writer, k)] = (
                tuple(batch.seqs[j][0] for j in range(batch.n)),
                completion,
            )
    return Audit(
        messages=len(messages),
        batches={w: len(ks) for w, ks in by_writer.items()},
        completions=completions,
        unanswered=unanswered,
        positions=positions,
    )


def _check_output(
    output: object, writer: str, k: int, *, via_completion: bool, files: bool
) -> None:
    if via_completion or not files:
        via = "complete" if via_completion else "append"
        if output != JsonOutput(value={"writer": writer, "k": k, "via": via}):
            _fail(f"call {call_id(writer, k)} holds {output!r}")
        return
    match output:
        case ContentOutput(parts=[TextPart(text=text), FilePart(attachment=ref)]) if ref:
            if text != f"{writer}|{k}|result" or ref.sha256 != sha256(file_bytes(writer, k, 1)):
                _fail(f"call {call_id(writer, k)} holds another batch's output")
        case _:
            _fail(f"call {call_id(writer, k)} holds {output!r}")


def _check_files(messages: list[Message], batch: _Batch, writer: str, k: int) -> None:
    def files_of(j: int) -> list[str]:
        message = messages[batch.seqs[j][0] - 1]
        return [p.attachment.sha256 for p in message.parts
                if isinstance(p, FilePart) and p.attachment is not None]  # fmt: skip

    if files_of(0) != [sha256(file_bytes(writer, k, 0))]:
        _fail(f"batch {writer}|{k}'s file does not reference its bytes")
    if batch.n >= 4 and files_of(3) != [sha256(SHARED_FILE)]:
        _fail(f"batch {writer}|{k}'s shared file does not reference its bytes")


def check_reported(report: Audit, writer: str, written: list[Written]) -> None:
    """What the store told ``writer`` (seqs returned) is where its batches were found."""
    for item in written:
        found = report.positions.get((writer, item.k))
        if found != (item.seqs, item.completion_seq):
            _fail(f"{writer}|{item.k} was reported at {item.seqs} but found at {found}")


async def audit_stored(
    store: ConversationStore,
    conversation_id: str,
    *,
    tenant: str,
    files: bool = False,
    expect: Mapping[str, int] | None = None,
) -> Audit:
    """`audit` a conversation of ``tenant`` as stored now, with its ``last_seq`` counter."""
    conversation = await store.load(conversation_id)
    listed = await store.list_conversations(tenant=tenant, limit=10_000)
    (summary,) = [s for s in listed if s.id == conversation_id]
    return audit(conversation, last_seq=summary.message_count, files=files, expect=expect)
