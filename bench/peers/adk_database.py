"""google-adk ``DatabaseSessionService`` on ``sqlite+aiosqlite``: one row per event.

ADK's only write call is ``append_event(session, event)``, one event per call and one
transaction per event. A turn is written as the four events ADK's own runner produces for it:
the user's message, the model's response with both ``function_call`` parts, the two
``function_response`` parts merged into one event (as the runner merges parallel tool results),
and the model's reply; so four ``append_event`` calls per turn. Full load is ``get_session``;
last-50 is ``get_session(config=GetSessionConfig(num_recent_events=50))``, 50 *events*.

One service (one engine) for all conversations; each conversation is an ADK session of the
same app and user, created before timing (``create_session`` also creates the tables).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.peers.runner import Peer, main
from bench.workload import turn_data

PEER = Peer(
    name="adk_database",
    label="google-adk DatabaseSessionService",
    packages=("google-adk", "google-genai", "sqlalchemy", "aiosqlite"),
    unit="events",
    records_per_turn=4,
    append_api="4 x append_event (1 event each: the API takes one)",
    load_api="get_session()",
    last_api="get_session(num_recent_events=50)",
    shape="Event models with google.genai Content, one JSON row per event",
    durability="sets foreign_keys=ON only: journal mode and synchronous are SQLite defaults",
)

_APP = "bench"
_USER = "user"
_AGENT = "assistant"


class _Store:
    def __init__(self, service: Any) -> None:
        self._service = service

    def payload(self, turn: int) -> list[Any]:
        from google.adk.events import Event
        from google.genai import types

        data = turn_data(turn)
        invocation = f"inv_{turn}"

        def event(author: str, role: str, parts: list[Any]) -> Any:
            content = types.Content(role=role, parts=parts)
            return Event(invocation_id=invocation, author=author, content=content)

        calls = [
            types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=arguments))
            for call_id, name, arguments in data.calls
        ]
        names = {call_id: name for call_id, name, _ in data.calls}
        results = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id, name=names[call_id], response={"result": output}
                )
            )
            for call_id, output in data.results
        ]
        return [
            event("user", "user", [types.Part(text=data.user)]),
            event(_AGENT, "model", calls),
            event(_AGENT, "user", results),
            event(_AGENT, "model", [types.Part(text=data.reply)]),
        ]

    async def new_conversation(self, key: str) -> Any:
        return await self._service.create_session(app_name=_APP, user_id=_USER, session_id=key)

    async def append_turn(self, conversation: Any, payload: list[Any]) -> None:
        for event in payload:
            await self._service.append_event(conversation, event)

    async def _count(self, conversation: Any, config: Any = None) -> int:
        session = await self._service.get_session(
            app_name=_APP, user_id=_USER, session_id=conversation.id, config=config
        )
        return len(session.events)

    async def load_all(self, conversation: Any) -> int:
        return await self._count(conversation)

    async def load_last(self, conversation: Any, n: int) -> int:
        from google.adk.sessions.base_session_service import GetSessionConfig

        return await self._count(conversation, GetSessionConfig(num_recent_events=n))


@asynccontextmanager
async def open_store(path: Path) -> AsyncIterator[_Store]:
    """A `DatabaseSessionService` on ``path``, closed on exit."""
    from google.adk.sessions import DatabaseSessionService

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    try:
        yield _Store(service)
    finally:
        await service.close()


if __name__ == "__main__":
    main(PEER, open_store)
