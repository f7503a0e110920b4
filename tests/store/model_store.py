"""An async look-alike of `ConversationStore` backed by the reference model (tests only).

It exists to test the state machine itself: driven against this store the machine must pass
(the harness makes no false alarms: draws are replayable, revisions are mapped right, refused
operations are compared right), and against a deliberately broken subclass it must fail (the
machine can catch a wrong store). It is not a second implementation to trust: every answer
comes from `ReferenceStore`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from convstore import (
    Branch,
    Conversation,
    ConvstoreError,
    Message,
    ResultKind,
    ToolCall,
    ToolCallStatus,
    ToolOutput,
)
from tests.store.reference import (
    UNSET,
    CallView,
    ModelError,
    RefConversation,
    ReferenceStore,
    lifecycles,
)

__all__ = ["ModelBackedStore"]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _raise_as_store(refused: ModelError) -> ConvstoreError:
    """The first error class the model names, built without its custom ``__init__``."""
    kind = refused.kinds[0]
    error = kind.__new__(kind)
    Exception.__init__(error, str(refused))
    return error


class ModelBackedStore:
    """The store methods the state machine calls, answered by a `ReferenceStore`."""

    def __init__(self) -> None:
        self.model = ReferenceStore()
        self.salt = uuid.uuid4().hex[:6]

    async def open(self) -> ModelBackedStore:
        return self

    async def close(self) -> None:
        return None

    def _revision(self, conv: RefConversation) -> str:
        return f"{self.salt}-{conv.revision}"

    def _expected(self, revision: str | None) -> int | None:
        if revision is None:
            return None
        salt, _, number = revision.partition("-")
        return int(number) if salt == self.salt and number.isdigit() else -1

    def _header(self, conv: RefConversation, messages: list[Message] | None = None) -> Conversation:
        return Conversation(
            id=conv.id,
            title=conv.title,
            tenant=conv.tenant,
            metadata=conv.metadata,
            created_at=_EPOCH,
            updated_at=_EPOCH,
            revision=self._revision(conv),
            state=conv.state,
            head_seq=conv.head,
            messages=messages or [],
        )

    @staticmethod
    def _call(view: CallView) -> ToolCall:
        return ToolCall(
            id=view.id,
            name=view.name,
            arguments=view.arguments,
            status=ToolCallStatus(view.status),
            result_kind=None if view.output is None else ResultKind(view.output.kind),
            output=view.output,
            provider_id=view.provider_id,
            seq=view.seq or 0,
            result_seq=view.result_seq,
            created_at=_EPOCH,
        )

    async def get_or_create_conversation(
        self, cid: str, *, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Conversation:
        return self._header(self.model.get_or_create(cid, title=title, metadata=metadata))

    async def append(
        self,
        cid: str,
        batch: Sequence[Message],
        *,
        parent_seq: int | None = None,
        expected_revision: str | None = None,
    ) -> list[Message]:
        try:
            return self.model.append(
                cid,
                batch,
                parent_seq=parent_seq,
                expected_revision=self._expected(expected_revision),
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None

    async def pop(self, cid: str, *, expected_revision: str | None = None) -> Message:
        try:
            return self.model.pop(cid, expected_revision=self._expected(expected_revision))
        except ModelError as refused:
            raise _raise_as_store(refused) from None

    async def truncate(
        self, cid: str, *, after_seq: int, expected_revision: str | None = None
    ) -> None:
        try:
            self.model.truncate(
                cid, after_seq=after_seq, expected_revision=self._expected(expected_revision)
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None

    async def switch_branch(
        self, cid: str, *, head_seq: int, expected_revision: str | None = None
    ) -> None:
        try:
            self.model.switch_branch(
                cid, head_seq=head_seq, expected_revision=self._expected(expected_revision)
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None

    async def fork(self, cid: str, *, at_seq: int, title: str | None = None) -> Conversation:
        new_id = f"fork-{uuid.uuid4().hex}"
        try:
            self.model.fork(cid, at_seq=at_seq, title=title, new_id=new_id)
        except ModelError as refused:
            raise _raise_as_store(refused) from None
        return self._header(self.model.conv(new_id))

    async def complete_tool_call(
        self, cid: str, call_id: str, output: ToolOutput, *, expected_revision: str | None = None
    ) -> ToolCall:
        try:
            view = self.model.complete_tool_call(
                cid, call_id, output, expected_revision=self._expected(expected_revision)
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None
        return self._call(view)

    async def cancel_tool_calls(
        self, cid: str, *, expected_revision: str | None = None
    ) -> list[str]:
        try:
            return self.model.cancel_tool_calls(
                cid, expected_revision=self._expected(expected_revision)
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None

    async def update_state(
        self, cid: str, patch: Any, *, expected_revision: str | None = None
    ) -> Conversation:
        try:
            conv = self.model.update_state(
                cid, patch, expected_revision=self._expected(expected_revision)
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None
        return self._header(conv)

    async def update_conversation(
        self,
        cid: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] = UNSET,
        expected_revision: str | None = None,
    ) -> Conversation:
        try:
            conv = self.model.update_conversation(
                cid,
                title=title,
                metadata=metadata,
                expected_revision=self._expected(expected_revision),
            )
        except ModelError as refused:
            raise _raise_as_store(refused) from None
        return self._header(conv)

    async def load(
        self,
        cid: str,
        *,
        last: int | None = None,
        before_seq: int | None = None,
        head_seq: int | None = None,
    ) -> Conversation:
        conv = self.model.conv(cid)
        try:
            view = self.model.load(cid, last=last, before_seq=before_seq, head_seq=head_seq)
        except ModelError as refused:
            raise _raise_as_store(refused) from None
        path = conv.path(view.head_seq)
        seqs = {m["seq"] for m in view.messages}
        header = self._header(conv, [m for m in path if m.seq in seqs])
        wanted = {(c["id"]) for c in view.tool_calls}
        calls = [self._call(v) for v in lifecycles(path, conv.cancelled) if v.id in wanted]
        return header.model_copy(update={"tool_calls": calls, "head_seq": view.head_seq})

    async def branches(self, cid: str) -> list[Branch]:
        return [
            Branch(head_seq=seq, active=active, created_at=_EPOCH)
            for seq, active in self.model.branches(cid)
        ]

    async def get_message(self, message_id: str, *, conversation_id: str) -> Message:
        try:
            return self.model.get_message(message_id, conversation_id)
        except ModelError as refused:
            raise _raise_as_store(refused) from None
