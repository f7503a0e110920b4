"""The sync facade in a web app's lifetime, as docs/sync.md shows it.

Each documented example runs as written: a store made at import time, no ``open()``, used by
many requests from several threads at once (Flask's test client in this process; Django's test
client, with a minimal settings module, in a fresh interpreter since Django configures itself
once per process). Every message posted is stored once, in order per thread.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from convstore import ConversationStore as AsyncConversationStore
from convstore.sync import ConversationStore, SyncConversationStore

DOC = Path(__file__).resolve().parents[1] / "docs" / "sync.md"
THREADS = 6
POSTS = 5


def _block(heading: str) -> str:
    """The python block under ``## heading`` in docs/sync.md."""
    section = DOC.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return block


def _loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "convstore-sync-loop"]


def _at_once(work: Callable[[int], object]) -> list[BaseException]:
    """Run ``work(i)`` in THREADS threads released together; what they raised."""
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            work(index)
        except BaseException as exc:  # reported to the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_the_facade_has_its_own_name_and_the_old_one_stays() -> None:
    assert ConversationStore is SyncConversationStore


def test_the_first_call_opens_it_once_from_many_threads(tmp_path: Path) -> None:
    store = SyncConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'first.db'}")
    assert store.closed
    before = set(_loop_threads())
    errors = _at_once(lambda index: store.create_conversation(id=f"c{index}"))
    try:
        assert errors == []
        assert len(set(_loop_threads()) - before) == 1  # opened once, not once per thread
        assert len(store.list_conversations()) == THREADS
    finally:
        store.close()


def _check(rows: list[dict[str, Any]]) -> None:
    """Every post stored once, each thread's in the order it posted them."""
    texts = [r["text"] for r in rows]
    assert sorted(texts) == sorted(f"t{t} m{m}" for t in range(THREADS) for m in range(POSTS))
    for thread in range(THREADS):
        mine = [text for text in texts if text.startswith(f"t{thread} ")]
        assert mine == [f"t{thread} m{m}" for m in range(POSTS)]


def test_the_flask_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVSTORE_URL", f"sqlite+aiosqlite:///{tmp_path / 'flask.db'}")
    namespace: dict[str, Any] = {"__name__": "docs_sync_flask"}
    exec(compile(_block("Flask"), str(DOC), "exec"), namespace)
    app, store = namespace["app"], namespace["store"]
    assert store.closed  # nothing opened at import time

    def client(thread: int) -> None:
        http = app.test_client()
        for m in range(POSTS):
            reply = http.post("/chats/shared/messages", json={"text": f"t{thread} m{m}"})
            assert reply.status_code == 200, reply.data
            http.post(f"/chats/t{thread}/messages", json={"text": f"t{thread} m{m}"})
        private = http.get(f"/chats/t{thread}/messages").get_json()
        assert [r["text"] for r in private] == [f"t{thread} m{m}" for m in range(POSTS)]

    errors = _at_once(client)
    try:
        assert errors == []
        rows = app.test_client().get("/chats/shared/messages").get_json()
        _check(rows)
        unknown = app.test_client().get("/chats/nobody-started-this/messages")
        assert (unknown.status_code, unknown.get_json()) == (404, {"error": "no such chat"})
        assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)
    finally:
        store.close()


_DJANGO_SETTINGS = """
SECRET_KEY = "docs-sync-test"
DEBUG = False
ALLOWED_HOSTS = ["testserver"]
ROOT_URLCONF = "chat_urls"
INSTALLED_APPS: list[str] = []
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
"""

_DJANGO_RUN = """
import json, threading
import django
django.setup()
from django.test import Client
import chat_urls

assert chat_urls.store.closed
THREADS, POSTS = {threads}, {posts}
barrier = threading.Barrier(THREADS)
errors = []

def client(thread):
    try:
        http = Client()
        barrier.wait()
        for m in range(POSTS):
            reply = http.post(
                "/chats/shared/messages", data=json.dumps({{"text": f"t{{thread}} m{{m}}"}}),
                content_type="application/json",
            )
            assert reply.status_code == 200, reply.content
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=client, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
rows = Client().get("/chats/shared/messages").json()["messages"]
chat_urls.store.close()
print(json.dumps({{"errors": errors, "rows": rows}}))
"""


def test_the_django_example(tmp_path: Path) -> None:
    (tmp_path / "chat_urls.py").write_text(_block("Django"))
    (tmp_path / "docs_settings.py").write_text(_DJANGO_SETTINGS)
    script = textwrap.dedent(_DJANGO_RUN.format(threads=THREADS, posts=POSTS))
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "docs_settings",
        "CONVSTORE_URL": f"sqlite+aiosqlite:///{tmp_path / 'django.db'}",
    }
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["errors"] == []
    rows = outcome["rows"]
    _check(rows)


async def test_an_async_store_is_unchanged(tmp_path: Path) -> None:
    """The async store still needs ``async with`` (only the facade opens on first use)."""
    from convstore import ClosedError

    store = AsyncConversationStore(f"sqlite+aiosqlite:///{tmp_path / 'async.db'}")
    with pytest.raises(ClosedError):
        await store.create_conversation()
