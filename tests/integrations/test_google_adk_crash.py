"""An ADK event and its app-/user-scoped state: both or neither after a SIGKILL.

A writer process appends an event whose ``state_delta`` holds ``app:``, ``user:`` and session
keys, and kills itself (SIGKILL) the moment the store executes the statement that writes the
scoped state, the step that used to follow the event's own commit. Reopened, the database must
hold the event and both deltas, or none of them; an unkilled writer stores all three. Runs on
SQLite (file, WAL, ``synchronous=FULL``) and PostgreSQL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
)

require("google.adk")

from convstore.integrations.google_adk import ConvstoreSessionService  # noqa: E402

_WRITER = """
import asyncio, os, signal, sys
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from convstore import ConversationStore
from convstore.integrations.google_adk import ConvstoreSessionService

url, blobs, app, session_id, kill = sys.argv[1:6]


def kill_at_the_scoped_state(sql):
    if "UPDATE conversations SET title" in sql and "state" in sql:
        os.kill(os.getpid(), signal.SIGKILL)


async def main():
    async with ConversationStore(url, blobs=blobs) as store:
        service = ConvstoreSessionService(store=store)
        session = await service.create_session(app_name=app, user_id="u", session_id=session_id)
        if kill == "1":
            store.backend.add_statement_listener(kill_at_the_scoped_state)
            await store.backend.trace_all()
        delta = {"app:theme": "dark", "user:visits": 3, "draft": "hi"}
        event = Event(author="user", invocation_id="i1", actions=EventActions(state_delta=delta))
        await service.append_event(session, event)
    print("stored")


asyncio.run(main())
"""


def _write(db_url: str, blobs: str, app: str, session_id: str, *, kill: bool) -> int:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(_WRITER),
            db_url,
            blobs,
            app,
            session_id,
            "1" if kill else "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    if result.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(result.stderr)
    return result.returncode


@pytest.mark.parametrize("kill", [True, False], ids=["killed", "finished"])
async def test_the_event_and_its_scoped_state_are_stored_together(
    store: ConversationStore, db_url: str, tmp_path: Path, kill: bool
) -> None:
    app, session_id = f"app-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    blobs = str(tmp_path / "blobs")
    code = _write(db_url, blobs, app, session_id, kill=kill)
    assert code == (-signal.SIGKILL if kill else 0)

    service = ConvstoreSessionService(store=store)
    session = await service.get_session(app_name=app, user_id="u", session_id=session_id)
    assert session is not None
    stored = (len(session.events), session.state.get("app:theme"), session.state.get("user:visits"))
    assert stored in ((0, None, None), (1, "dark", 3)), stored  # both or neither
    assert stored == ((0, None, None) if kill else (1, "dark", 3))
    assert (session.state.get("draft") is None) == kill
