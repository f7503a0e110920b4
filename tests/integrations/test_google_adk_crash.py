"""An ADK event and all its state: everything or nothing after a SIGKILL.

A writer process appends an event whose ``state_delta`` holds ``app:``, ``user:`` and session
keys, and kills itself (SIGKILL) the moment the store executes a statement that writes state:
the first (the scoped state, which once followed the event's own commit) or the third (the
session's state snapshot, which once followed both). Reopened, the database must hold the
event, both deltas and the snapshot (what `list_sessions` shows), or none of them; an unkilled
writer stores all of them. Runs on SQLite (file, WAL, ``synchronous=FULL``) and PostgreSQL.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
    run_writer,
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
seen = 0


def kill_at_a_state_write(sql):
    global seen
    if "UPDATE conversations SET title" in sql and "state" in sql:
        seen += 1
        if seen == int(kill):
            os.kill(os.getpid(), signal.SIGKILL)


async def main():
    async with ConversationStore(url, blobs=blobs) as store:
        service = ConvstoreSessionService(store=store)
        session = await service.create_session(app_name=app, user_id="u", session_id=session_id)
        if kill != "0":
            store.backend.add_statement_listener(kill_at_a_state_write)
            await store.backend.trace_all()
        delta = {"app:theme": "dark", "user:visits": 3, "draft": "hi"}
        event = Event(author="user", invocation_id="i1", actions=EventActions(state_delta=delta))
        await service.append_event(session, event)
    print("stored")


asyncio.run(main())
"""


@pytest.mark.parametrize(
    "kill", [1, 3, 0], ids=["killed-at-the-scoped-state", "killed-at-the-snapshot", "finished"]
)
async def test_the_event_and_its_state_are_stored_together(
    store: ConversationStore, db_url: str, tmp_path: Path, kill: int
) -> None:
    app, session_id = f"app-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    blobs = str(tmp_path / "blobs")
    code = run_writer(_WRITER, db_url, blobs, app, session_id, str(kill))
    assert code == (-signal.SIGKILL if kill else 0)

    service = ConvstoreSessionService(store=store)
    session = await service.get_session(app_name=app, user_id="u", session_id=session_id)
    assert session is not None
    stored = (len(session.events), session.state.get("app:theme"), session.state.get("user:visits"))
    assert stored in ((0, None, None), (1, "dark", 3)), stored  # both or neither
    assert stored == ((0, None, None) if kill else (1, "dark", 3))
    assert (session.state.get("draft") is None) == bool(kill)
    # The snapshot agrees with the events: list_sessions (which reads only the snapshot) shows
    # the state get_session derives from them.
    (listed,) = (await service.list_sessions(app_name=app, user_id="u")).sessions
    assert listed.state == session.state
