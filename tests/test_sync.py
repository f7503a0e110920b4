"""The blocking facade: same methods as the async store, one loop thread, clean shutdown."""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from convstore import (
    ClosedError,
    ContentOutput,
    ConversationNotFoundError,
    FilePart,
    InvalidInputError,
    Message,
    TextPart,
    ToolCallPart,
)
from convstore import ConversationStore as AsyncConversationStore
from convstore.sync import SyncConversationStore

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
SRC = str(Path(__file__).resolve().parents[1] / "src")


def _sqlite(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'sync.db'}"


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "convstore-sync-loop"]


def test_every_public_async_method_has_a_blocking_twin() -> None:
    public = {
        name
        for name, member in inspect.getmembers(AsyncConversationStore)
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    }
    lifecycle = {"open", "close"}
    missing = {name for name in public - lifecycle if not hasattr(SyncConversationStore, name)}
    assert not missing
    # Same constructor: names, kinds, defaults and annotations.
    assert str(inspect.signature(SyncConversationStore.__init__)) == str(
        inspect.signature(AsyncConversationStore.__init__)
    )


def test_round_trip_with_attachments_and_render(tmp_path: Path) -> None:
    blobs = f"memory://sync-{uuid.uuid4().hex}"
    with SyncConversationStore(_sqlite(tmp_path), blobs=blobs) as store:
        conv = store.create_conversation(title="sync")
        call = ToolCallPart(id="c1", name="screenshot", arguments={})
        stored = store.append(
            conv.id,
            [
                Message.user("look", FilePart.from_bytes(PNG)),
                Message.assistant(call),
            ],
        )
        assert [m.seq for m in stored] == [1, 2]
        output = ContentOutput(parts=[TextPart(text="here"), FilePart.from_bytes(PNG)])
        done = store.complete_tool_call(conv.id, "c1", output)
        assert done.status == "complete"
        loaded = store.load(conv.id)
        assert [m.role for m in loaded.messages] == ["user", "assistant", "tool"]
        image = loaded.messages[0].files[0]
        assert image.attachment is not None
        assert store.read_attachment(image) == PNG
        rendered = store.render(conv.id, "anthropic", model="claude-sonnet-4-5")
        assert rendered.payload["messages"][0]["content"][1]["type"] == "image"
        assert [s.id for s in store.list_conversations()] == [conv.id]
        store.delete_conversation(conv.id)
        with pytest.raises(ConversationNotFoundError):
            store.load(conv.id)


def test_calls_from_many_threads_share_one_loop(tmp_path: Path) -> None:
    with SyncConversationStore(_sqlite(tmp_path), blobs=f"memory://{uuid.uuid4().hex}") as store:
        conv = store.create_conversation()
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            try:
                for i in range(5):
                    store.append(conv.id, Message.user(f"{n}-{i}"))
            except BaseException as exc:  # collected, asserted below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(store.load(conv.id).messages) == 20
        assert len(_loop_threads()) >= 1


def test_close_joins_the_thread_and_later_calls_raise(tmp_path: Path) -> None:
    before = set(_loop_threads())
    store = SyncConversationStore(_sqlite(tmp_path), blobs=f"memory://{uuid.uuid4().hex}")
    assert store.closed
    store.open()
    assert not store.closed
    (thread,) = set(_loop_threads()) - before
    store.create_conversation()
    store.close()
    assert store.closed
    assert not thread.is_alive()
    store.close()  # idempotent
    with pytest.raises(ClosedError, match=r"call store\.open\(\) to use it again"):
        store.load("anything")
    # Reopening starts a fresh loop.
    with store:
        assert store.list_conversations()


def test_errors_propagate_with_their_type(tmp_path: Path) -> None:
    with SyncConversationStore(_sqlite(tmp_path), blobs=f"memory://{uuid.uuid4().hex}") as store:
        with pytest.raises(ConversationNotFoundError):
            store.load("missing")
        with pytest.raises(InvalidInputError):
            store.load("missing", last=-1)


def test_a_call_from_the_loop_thread_raises_instead_of_deadlocking(tmp_path: Path) -> None:
    with SyncConversationStore(_sqlite(tmp_path), blobs=f"memory://{uuid.uuid4().hex}") as store:

        async def inside() -> None:
            store.create_conversation()

        future = __import__("asyncio").run_coroutine_threadsafe(inside(), store.loop)
        with pytest.raises(InvalidInputError, match="own event loop"):
            future.result(timeout=10)


def _run_script(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(body).replace("DB_URL", repr(_sqlite(tmp_path)))
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_an_exception_inside_with_does_not_hang_the_process(tmp_path: Path) -> None:
    result = _run_script(
        """
        from convstore.sync import SyncConversationStore
        with SyncConversationStore(DB_URL) as store:
            store.create_conversation(title="x")
            raise RuntimeError("boom inside with")
        """,
        tmp_path,
    )
    assert result.returncode == 1
    assert "boom inside with" in result.stderr


def test_a_store_never_closed_is_closed_at_exit(tmp_path: Path) -> None:
    # atexit runs handlers last-registered first: `report` was registered before the store's
    # finalizer, so it runs after it and sees the loop thread already joined.
    result = _run_script(
        """
        import atexit, threading
        def report():
            alive = [t for t in threading.enumerate() if t.name == "convstore-sync-loop"]
            print("loop threads at exit:", len(alive))
        atexit.register(report)
        from convstore.sync import SyncConversationStore
        store = SyncConversationStore(DB_URL)
        store.open()
        store.create_conversation(title="left open")
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "loop threads at exit: 0" in result.stdout
    assert result.stderr == ""


def test_an_exception_while_a_store_is_open_outside_with_exits(tmp_path: Path) -> None:
    result = _run_script(
        """
        from convstore.sync import SyncConversationStore
        store = SyncConversationStore(DB_URL).open()
        store.create_conversation()
        raise SystemExit(3)
        """,
        tmp_path,
    )
    assert result.returncode == 3


def test_branch_state_and_revision_operations_block_too(tmp_path: Path) -> None:
    with SyncConversationStore(_sqlite(tmp_path), blobs=f"memory://{uuid.uuid4().hex}") as store:
        conv = store.get_or_create_conversation("fixed-id", title="t")
        assert store.get_or_create_conversation("fixed-id").id == conv.id
        store.append(conv.id, [Message.user("a", id="m1"), Message.user("b"), Message.user("c")])
        assert store.pop(conv.id).text == "c"
        assert store.get_message("m1", conversation_id=conv.id).text == "a"
        state = store.update_state(conv.id, {"step": 2})
        assert state.state == {"step": 2}
        fork = store.fork(conv.id, at_seq=1)
        assert [m.text for m in store.load(fork.id).messages] == ["a"]
        store.truncate(conv.id, after_seq=1)
        assert [m.text for m in store.load(conv.id).messages] == ["a"]
        assert [b.head_seq for b in store.branches(conv.id)] == [1]
        renamed = store.update_conversation(conv.id, title="renamed")
        assert renamed.title == "renamed"
        stored = store.append(conv.id, Message.user("d"), expected_revision=renamed.revision)
        assert [m.text for m in stored] == ["d"]
        assert stored.revision == store.load(conv.id).revision != renamed.revision
        store.append(conv.id, Message.user("e"), expected_revision=stored.revision)
