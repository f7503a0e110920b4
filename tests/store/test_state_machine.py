"""The store against the reference model, any sequence of v2 operations.

A hypothesis `RuleBasedStateMachine` applies the same operations to a real store (SQLite and
PostgreSQL, through the `db_url` fixture) and to `tests.store.reference.ReferenceStore`: appends
(chained after the head or under any message, with tool calls, results, interrupting user
messages, message ids, thinking, native records and usage), pop, truncate, switch_branch, fork,
complete_tool_call, cancel_tool_calls, update_state and update_conversation, each with no,
the current or a stale ``expected_revision``. After every step every conversation must load
equal (messages with seq/parent_seq/id/parts, tool calls with status and output, head, state,
title, metadata), list the same branches, and have a revision that changed exactly when the
model's did. A refused operation must raise one of the error classes the model names and leave
the store unchanged (the next check compares everything, revision included).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar, cast

import pytest
from hypothesis import HealthCheck, Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from convstore import (
    Conversation,
    ConversationStore,
    ConvstoreError,
    ErrorOutput,
    JsonOutput,
    Message,
    NativeRecord,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolOutput,
    Usage,
)
from tests.store.model_store import ModelBackedStore
from tests.store.reference import (
    UNSET,
    ModelError,
    ReferenceStore,
    call_projection,
    message_projection,
)

T = TypeVar("T")
R = TypeVar("R")

MAX_CONVERSATIONS = 4
CALL_POOL = ("c1", "c2", "c3", "c4")
"""Few call ids, so that reusing one (a conflict) happens often."""
MESSAGE_IDS = ("m1", "m2", "m3", "m4")
"""Few message ids, so that duplicates happen often."""
OUTPUTS: tuple[ToolOutput, ...] = (
    JsonOutput(value=1),
    JsonOutput(value={"rows": [1, 2]}),
    ErrorOutput(message="failed"),
)
"""Few outputs, so that an equal repeat (history) and a different one (conflict) both happen."""
PROVENANCE = ((None, None), ("anthropic", "claude-sonnet-4-5"))

state_patches = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.none()
    | st.integers(-3, 3)
    | st.sampled_from(["x", "y"])
    | st.lists(st.integers(0, 2), max_size=2)
    | st.dictionaries(st.sampled_from(["p", "q"]), st.none() | st.integers(0, 2), max_size=2),
    max_size=3,
)
not_objects = st.sampled_from([[1], [], 3, "text", None, True])


def _without_conversation(message: Message) -> dict[str, Any]:
    projected = message_projection(message)
    projected.pop("conversation_id")
    return projected


class StoreMachine(RuleBasedStateMachine):
    """One store and one reference model, driven in step (see the module docstring)."""

    db_url: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.store = self.open_store()
        self.runner.run(self.store.open())
        self.ref = ReferenceStore()
        self.revision_of: dict[str, dict[int, str]] = {}
        """Per conversation: the store's revision for each model revision seen so far."""
        self.counter = 0

    def teardown(self) -> None:
        try:
            self.runner.run(self.store.close())
        finally:
            self.runner.close()

    def open_store(self) -> ConversationStore:
        """The store under test (its own blob location; the database is shared)."""
        return ConversationStore(
            self.db_url, blobs=f"memory://state-machine-{uuid.uuid4().hex}", auto_migrate=True
        )

    # -- helpers --------------------------------------------------------------------------------

    def _unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(list(self.ref.conversations)), label="conversation")

    def _expected_revision(self, data: st.DataObject, cid: str) -> tuple[str | None, int | None]:
        """``(store revision, model revision)`` to pass: none, the current one or a stale one."""
        current = self.ref.conv(cid).revision
        known = self.revision_of[cid]
        choice = data.draw(
            st.sampled_from(["none", "none", "none", "current", "current", "stale"]), label="rev"
        )
        if choice == "none":
            return None, None
        if choice == "current":
            return known[current], current
        older = sorted(r for r in known if r != current)
        if not older:
            return "never-issued", -1
        stale = data.draw(st.sampled_from(older), label="stale revision")
        return known[stale], stale

    def _run(
        self,
        label: str,
        store_call: Callable[[], Awaitable[T]],
        model_call: Callable[[T | None], R],
    ) -> tuple[T, R] | None:
        """Run both; on a refusal check the error classes agree. ``None`` when refused."""

        async def call() -> T:
            return await store_call()

        failure: ConvstoreError | None = None
        actual: T | None = None
        try:
            actual = self.runner.run(call())
        except ConvstoreError as exc:
            failure = exc
        refused: ModelError | None = None
        try:
            expected = model_call(actual)
        except ModelError as exc:
            refused = exc
        kinds = "ok" if refused is None else "/".join(k.__name__ for k in refused.kinds)
        event(f"{label}: {kinds}")
        if refused is not None:
            assert failure is not None, f"the store accepted what the model refuses: {refused}"
            assert isinstance(failure, refused.kinds), (
                f"the store raised {failure!r}; the model: {refused}"
            )
            return None
        if failure is not None:
            raise AssertionError(f"the store raised {failure!r}; the model accepts") from failure
        return cast("T", actual), expected

    def _see_revision(self, cid: str, revision: str) -> None:
        """The store's revision must change exactly when the model's does, and never repeat."""
        current = self.ref.conv(cid).revision
        known = self.revision_of.setdefault(cid, {})
        if current in known:
            assert revision == known[current], (
                f"{cid}: the revision changed to {revision!r} without a write (model rev "
                f"{current}, store had {known[current]!r})"
            )
        else:
            assert revision not in known.values(), f"{cid}: revision {revision!r} repeated"
            known[current] = revision

    def _draw_message(
        self, data: st.DataObject, path_calls: list[str], kind: str | None = None
    ) -> Message:
        if kind is None:
            kind = data.draw(
                st.sampled_from(["user", "assistant", "calls", "calls", "result", "result"]),
                label="kind",
            )
        mid = data.draw(st.none() | st.sampled_from(MESSAGE_IDS), label="message id")
        if kind == "result" and not path_calls:
            kind = "user"
        if kind == "user":
            return Message.user(data.draw(st.sampled_from(["hi", "stop"])), id=mid)
        if kind == "result":
            call_id = data.draw(st.sampled_from([*path_calls, self._unique("ghost")]))
            output = data.draw(st.sampled_from(OUTPUTS), label="output")
            return Message.tool_result(call_id, output, id=mid)
        provider, model = data.draw(st.sampled_from(PROVENANCE), label="provenance")
        parts: list[Part] = []
        if data.draw(st.booleans(), label="thinking"):
            own = data.draw(st.booleans(), label="own provenance")
            parts.append(
                ThinkingPart(text="hmm", provider="openai", model="gpt-5")
                if own
                else ThinkingPart(text="hmm", signature="sig")
            )
        parts.append(TextPart(text="answer"))
        if kind == "calls":
            for _ in range(data.draw(st.integers(1, 2), label="calls")):
                call_id = data.draw(st.sampled_from([self._unique("k"), *CALL_POOL]))
                parts.append(ToolCallPart(id=call_id, name="lookup", arguments={"q": call_id}))
        native = None
        if data.draw(st.booleans(), label="native"):
            native = NativeRecord(format="test", data={"n": self.counter, "x": [None, 1.5]})
        usage = Usage(input_tokens=7, output_tokens=3) if data.draw(st.booleans()) else None
        return Message(
            role=Role.ASSISTANT,
            parts=parts,
            provider=provider,
            model=model,
            id=mid,
            native=native,
            usage=usage,
        )

    # -- rules ----------------------------------------------------------------------------------

    @initialize(data=st.data())
    def first_conversation(self, data: st.DataObject) -> None:
        """A conversation with a few turns already, so that most steps have a tree to work on."""
        self.get_or_create(existing=False, title=None)
        for _ in range(data.draw(st.integers(0, 3), label="turns")):
            self.chat_turn(data)

    @rule(existing=st.booleans(), title=st.none() | st.just("chat"))
    def get_or_create(self, existing: bool, title: str | None) -> None:
        if existing and self.ref.conversations:
            cid = next(iter(self.ref.conversations))
        elif len(self.ref.conversations) < MAX_CONVERSATIONS:
            cid = f"sm-{uuid.uuid4().hex}"
        else:
            return
        got = self.runner.run(
            self.store.get_or_create_conversation(cid, title=title, metadata={"made": "here"})
        )
        conv = self.ref.get_or_create(cid, title=title, metadata={"made": "here"})
        assert (got.id, got.title, got.metadata, got.messages) == (
            cid, conv.title, conv.metadata, [],
        )  # fmt: skip
        self._see_revision(cid, got.revision)

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        where = data.draw(st.sampled_from(["head", "head", "node", "unknown"]), label="where")
        parent_seq: int | None = None
        if where == "node" and conv.nodes:
            parent_seq = data.draw(st.sampled_from(sorted(conv.nodes)), label="parent")
        elif where == "unknown":
            gone = [s for s in range(conv.last_seq + 2) if s not in conv.nodes]
            parent_seq = data.draw(st.sampled_from(gone), label="unknown parent")
        base = parent_seq if parent_seq is not None else conv.head
        path_calls = (
            [p.id for m in conv.path(base) for p in m.tool_calls]
            if base is None or base in conv.nodes
            else []
        )
        batch: list[Message] = []
        for _ in range(data.draw(st.integers(1, 3), label="batch size")):
            message = self._draw_message(data, path_calls)
            path_calls += [p.id for p in message.tool_calls]
            batch.append(message)
        rev, model_rev = self._expected_revision(data, cid)
        outcome = self._run(
            "append",
            lambda: self.store.append(cid, batch, parent_seq=parent_seq, expected_revision=rev),
            lambda stored: self.ref.append(
                cid,
                batch,
                parent_seq=parent_seq,
                expected_revision=model_rev,
                first_seq=stored[0].seq if stored else None,
            ),
        )
        if outcome is not None:
            stored, expected = outcome
            assert [(m.seq, m.id) for m in stored] == [(m.seq, m.id) for m in expected]

    @rule(data=st.data())
    def chat_turn(self, data: st.DataObject) -> None:
        """A user turn and an assistant reply (often calling tools) after the head."""
        cid = self._pick(data)
        reply = self._draw_message(data, [], kind="calls")
        batch = [Message.user("next question"), reply]
        answer = data.draw(st.booleans(), label="answer in the same batch")
        if answer and reply.tool_calls:
            output = data.draw(st.sampled_from(OUTPUTS), label="output")
            batch.append(Message.tool_result(reply.tool_calls[0].id, output))
        outcome = self._run(
            "chat_turn",
            lambda: self.store.append(cid, batch),
            lambda stored: self.ref.append(cid, batch, first_seq=stored[0].seq if stored else None),
        )
        if outcome is not None:
            stored, expected = outcome
            assert [(m.seq, m.id) for m in stored] == [(m.seq, m.id) for m in expected]

    @rule(data=st.data())
    def pop(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        rev, model_rev = self._expected_revision(data, cid)
        outcome = self._run(
            "pop",
            lambda: self.store.pop(cid, expected_revision=rev),
            lambda _: self.ref.pop(cid, expected_revision=model_rev),
        )
        if outcome is not None:
            popped, expected = outcome
            assert popped is not None
            assert _without_conversation(popped) == _without_conversation(expected)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        candidates = [*conv.path_seqs(), 0, *sorted(conv.nodes), conv.last_seq + 1]
        after_seq = data.draw(st.sampled_from(candidates), label="after_seq")
        rev, model_rev = self._expected_revision(data, cid)
        self._run(
            "truncate",
            lambda: self.store.truncate(cid, after_seq=after_seq, expected_revision=rev),
            lambda _: self.ref.truncate(cid, after_seq=after_seq, expected_revision=model_rev),
        )

    @rule(data=st.data())
    def switch_branch(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        # Tips and messages that made calls come up more often: switching back and forth
        # between an unanswered call and a branch that answers it is where lifecycles move.
        callers = [s for s, m in sorted(conv.nodes.items()) if m.tool_calls]
        tips = [s for s, _ in self.ref.branches(cid)]
        head_seq = data.draw(
            st.sampled_from([*callers, *tips, *sorted(conv.nodes), conv.last_seq + 1]),
            label="head_seq",
        )
        rev, model_rev = self._expected_revision(data, cid)
        self._run(
            "switch_branch",
            lambda: self.store.switch_branch(cid, head_seq=head_seq, expected_revision=rev),
            lambda _: self.ref.switch_branch(cid, head_seq=head_seq, expected_revision=model_rev),
        )

    @precondition(lambda self: len(self.ref.conversations) < MAX_CONVERSATIONS)
    @rule(data=st.data(), title=st.none() | st.just("forked"))
    def fork(self, data: st.DataObject, title: str | None) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        at_seq = data.draw(
            st.sampled_from([*conv.path_seqs(), *sorted(conv.nodes), conv.last_seq + 1]),
            label="at_seq",
        )
        outcome = self._run(
            "fork",
            lambda: self.store.fork(cid, at_seq=at_seq, title=title),
            lambda new: self.ref.fork(
                cid, at_seq=at_seq, title=title, new_id=new.id if new else "refused"
            ),
        )
        if outcome is not None:
            new, _ = outcome
            assert new.id != cid

    @rule(data=st.data())
    def complete_tool_call(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        calls = conv.calls()
        open_ = [v.id for v in calls if v.status in ("pending", "interrupted")]
        on_path = [v.id for v in calls]
        elsewhere = sorted(conv.tree_call_ids() - set(on_path))
        call_id = data.draw(
            st.sampled_from([*open_, *on_path, *elsewhere, self._unique("ghost")]), label="call id"
        )
        output = data.draw(st.sampled_from(OUTPUTS), label="output")
        rev, model_rev = self._expected_revision(data, cid)
        outcome = self._run(
            "complete_tool_call",
            lambda: self.store.complete_tool_call(cid, call_id, output, expected_revision=rev),
            lambda done: self.ref.complete_tool_call(
                cid,
                call_id,
                output,
                expected_revision=model_rev,
                first_seq=done.result_seq if done else None,
            ),
        )
        if outcome is not None:
            call, expected = outcome
            assert call_projection(call) == call_projection(expected)

    @rule(data=st.data())
    def cancel_tool_calls(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        rev, model_rev = self._expected_revision(data, cid)
        outcome = self._run(
            "cancel_tool_calls",
            lambda: self.store.cancel_tool_calls(cid, expected_revision=rev),
            lambda _: self.ref.cancel_tool_calls(cid, expected_revision=model_rev),
        )
        if outcome is not None:
            cancelled, expected = outcome
            assert cancelled == expected

    @rule(data=st.data())
    def visit_and_return(self, data: st.DataObject) -> None:
        """Look at an earlier point or another branch, act there, and come back: the flow
        in which a lifecycle has to follow the path in both directions."""
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        if conv.head is None:
            return
        home = conv.head
        callers = [s for s, m in sorted(conv.nodes.items()) if m.tool_calls]
        there = data.draw(st.sampled_from([*callers, *sorted(conv.nodes)]), label="visit")
        self._run(
            "visit",
            lambda: self.store.switch_branch(cid, head_seq=there),
            lambda _: self.ref.switch_branch(cid, head_seq=there),
        )
        action = data.draw(st.sampled_from(["cancel", "complete", "user turn"]), label="act")
        if action == "cancel":
            outcome = self._run(
                "visit: cancel",
                lambda: self.store.cancel_tool_calls(cid),
                lambda _: self.ref.cancel_tool_calls(cid),
            )
            assert outcome is None or outcome[0] == outcome[1]
        elif action == "complete" and (open_ := [v.id for v in conv.calls()]):
            call_id = data.draw(st.sampled_from(open_), label="call id")
            output = data.draw(st.sampled_from(OUTPUTS), label="output")
            self._run(
                "visit: complete",
                lambda: self.store.complete_tool_call(cid, call_id, output),
                lambda done: self.ref.complete_tool_call(
                    cid, call_id, output, first_seq=done.result_seq if done else None
                ),
            )
        elif action == "user turn":
            batch = [Message.user("from here")]
            self._run(
                "visit: user turn",
                lambda: self.store.append(cid, batch),
                lambda stored: self.ref.append(
                    cid, batch, first_seq=stored[0].seq if stored else None
                ),
            )
        self._run(
            "return",
            lambda: self.store.switch_branch(cid, head_seq=home),
            lambda _: self.ref.switch_branch(cid, head_seq=home),
        )

    @rule(data=st.data(), patch=state_patches | not_objects)
    def update_state(self, data: st.DataObject, patch: Any) -> None:
        cid = self._pick(data)
        rev, model_rev = self._expected_revision(data, cid)
        outcome = self._run(
            "update_state",
            lambda: self.store.update_state(cid, patch, expected_revision=rev),
            lambda _: self.ref.update_state(cid, patch, expected_revision=model_rev),
        )
        if outcome is not None:
            header, expected = outcome
            assert (header.state, header.messages) == (expected.state, [])
            self._see_revision(cid, header.revision)

    @rule(
        data=st.data(),
        title=st.sampled_from([UNSET, None, "renamed"]),
        metadata=st.sampled_from([UNSET, {}, {"k": 1}]),
    )
    def update_conversation(self, data: st.DataObject, title: Any, metadata: Any) -> None:
        cid = self._pick(data)
        rev, model_rev = self._expected_revision(data, cid)
        given: dict[str, Any] = {}
        if title is not UNSET:
            given["title"] = title
        if metadata is not UNSET:
            given["metadata"] = metadata
        outcome = self._run(
            "update_conversation",
            lambda: self.store.update_conversation(cid, expected_revision=rev, **given),
            lambda _: self.ref.update_conversation(cid, expected_revision=model_rev, **given),
        )
        if outcome is not None:
            header, expected = outcome
            assert (header.title, header.metadata, header.messages) == (
                expected.title, expected.metadata, [],
            )  # fmt: skip
            self._see_revision(cid, header.revision)

    @rule(data=st.data())
    def load_a_window(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        conv = self.ref.conv(cid)
        last = data.draw(st.none() | st.integers(0, 4), label="last")
        # Any message's path (another branch's, or a point on this one), not only the head's.
        head_seq = data.draw(
            st.none() | st.sampled_from([*sorted(conv.nodes), conv.last_seq + 1]),
            label="head_seq",
        )
        path = [m.seq for m in conv.path(head_seq)] if head_seq in conv.nodes else []
        before_seq = data.draw(
            st.none() | st.sampled_from([*path, *conv.path_seqs(), conv.last_seq + 1]),
            label="before_seq",
        )
        outcome = self._run(
            "load",
            lambda: self.store.load(cid, last=last, before_seq=before_seq, head_seq=head_seq),
            lambda _: self.ref.load(cid, last=last, before_seq=before_seq, head_seq=head_seq),
        )
        if outcome is None:
            return
        loaded, expected = outcome
        assert [message_projection(m) for m in loaded.messages] == expected.messages
        assert [call_projection(c) for c in loaded.tool_calls] == expected.tool_calls
        assert loaded.head_seq == expected.head_seq

    @rule(data=st.data())
    def get_message(self, data: st.DataObject) -> None:
        cid = self._pick(data)
        stored = sorted(self.ref.conv(cid).tree_message_ids())
        message_id = data.draw(st.sampled_from([*stored, *MESSAGE_IDS]), label="message id")
        outcome = self._run(
            "get_message",
            lambda: self.store.get_message(message_id, conversation_id=cid),
            lambda _: self.ref.get_message(message_id, cid),
        )
        if outcome is not None:
            found, expected = outcome
            assert message_projection(found) == message_projection(expected)

    # -- after every step -----------------------------------------------------------------------

    @invariant()
    def every_conversation_loads_equal(self) -> None:
        for cid in self.ref.conversations:
            loaded = self.runner.run(self.store.load(cid))
            expected = self.ref.load(cid)
            assert [message_projection(m) for m in loaded.messages] == expected.messages, cid
            assert [call_projection(c) for c in loaded.tool_calls] == expected.tool_calls, cid
            assert loaded.head_seq == expected.head_seq, cid
            assert (loaded.title, loaded.metadata, loaded.state) == (
                expected.title, expected.metadata, expected.state,
            ), cid  # fmt: skip
            self._see_revision(cid, loaded.revision)
            branches = self.runner.run(self.store.branches(cid))
            assert [(b.head_seq, b.active) for b in branches] == self.ref.branches(cid), cid


SETTINGS = settings(
    max_examples=30,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    # No "explain" phase: its line tracer makes a failing run take minutes on Python 3.11.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)


@pytest.mark.slow
@pytest.mark.timeout(900)  # a failure is shrunk to a short sequence, which takes a while
def test_store_agrees_with_the_reference_model(db_url: str) -> None:
    machine = type("StoreMachineOnDb", (StoreMachine,), {"db_url": db_url})
    run_state_machine_as_test(machine, settings=SETTINGS)


# -- the harness itself: no false alarms, and it does catch a wrong store ----------------------


class _ModelMachine(StoreMachine):
    store_class: ClassVar[type[ModelBackedStore]] = ModelBackedStore

    def open_store(self) -> ConversationStore:
        return cast("ConversationStore", self.store_class())


class _ShallowState(ModelBackedStore):
    """Broken: ``update_state`` overwrites top-level keys instead of merge-patching."""

    async def update_state(
        self, cid: str, patch: Any, *, expected_revision: str | None = None
    ) -> Conversation:
        if not isinstance(patch, dict):
            return await super().update_state(cid, patch, expected_revision=expected_revision)
        header = await super().update_state(cid, {}, expected_revision=expected_revision)
        self.model.conv(cid).state.update(patch)
        return header.model_copy(update={"state": self.model.conv(cid).state})


class _SwitchKeepsRevision(ModelBackedStore):
    """Broken: ``switch_branch`` leaves the revision as it was."""

    async def switch_branch(
        self, cid: str, *, head_seq: int, expected_revision: str | None = None
    ) -> None:
        await super().switch_branch(cid, head_seq=head_seq, expected_revision=expected_revision)
        self.model.conv(cid).revision -= 1


class _NeverInterrupted(ModelBackedStore):
    """Broken: a call followed by a user message still loads as ``pending``."""

    async def load(
        self, cid: str, *, last: int | None = None, before_seq: int | None = None
    ) -> Conversation:
        loaded = await super().load(cid, last=last, before_seq=before_seq)
        calls = [
            c.model_copy(update={"status": "pending"}) if c.status == "interrupted" else c
            for c in loaded.tool_calls
        ]
        return loaded.model_copy(update={"tool_calls": calls})


HARNESS = settings(SETTINGS, max_examples=60, derandomize=True, database=None)
FIND_ONLY = settings(HARNESS, phases=[Phase.generate], report_multiple_bugs=False)
"""A broken store only has to be caught, not shrunk to its smallest example."""


def test_the_machine_passes_on_the_reference_model_itself() -> None:
    run_state_machine_as_test(_ModelMachine, settings=HARNESS)


@pytest.mark.parametrize("broken", [_ShallowState, _SwitchKeepsRevision, _NeverInterrupted])
def test_the_machine_catches_a_broken_store(broken: type[ModelBackedStore]) -> None:
    machine = type("Broken", (_ModelMachine,), {"store_class": broken})
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=FIND_ONLY)
