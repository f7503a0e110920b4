"""`ConvstoreSessionService` held to ADK's session-service contract (google-adk 2.13).

ADK states the contract every `BaseSessionService` owes its callers in
``tests/unittests/sessions/test_session_service.py`` (backends registered in ``_conformance.py``).
That suite is not shipped in ADK's sdist; these are our own tests of each behaviour it checks,
run against our service (and, where it makes the comparison meaningful, beside ADK's
`InMemorySessionService` as the reference).

ADK contract test → our test (the registry-only tests come from ``_conformance.py``):

- ``test_get_empty_session``
  → ``test_missing_session_is_none``
- ``test_create_get_session``
  → ``test_create_get_delete_round_trip``
- ``test_create_and_list_sessions``
  → ``test_list_returns_every_session_with_state``
- ``test_list_sessions_all_users``
  → ``test_list_by_user_and_for_all_users``
- ``test_list_sessions_ordered_by_last_update_time (registry)``
  → ``test_list_is_oldest_update_first``
- ``test_app_state_is_shared_by_all_users_of_app``
  → ``test_app_state_is_shared_across_users``
- ``test_user_state_is_shared_only_by_user_sessions``
  → ``test_user_state_is_per_user``
- ``test_session_state_is_not_shared``
  → ``test_session_state_stays_in_its_session``
- ``test_temp_state_is_not_persisted_in_state_or_events``
  → ``test_temp_keys_are_never_stored``
- ``test_temp_state_visible_across_sequential_events``
  → ``test_temp_keys_are_never_stored``
- ``test_get_session_respects_user_id``
  → ``test_same_session_id_for_two_users``
- ``test_create_session_with_existing_id_raises_error``
  → ``test_duplicate_session_id_raises``
- ``test_padded_session_id_reads_and_deletes (registry)``
  → ``test_padded_session_ids_are_stripped``
- ``test_append_event_bytes``
  → ``test_event_bytes_round_trip_as_blobs``
- ``test_append_event_complete``
  → ``test_every_event_field_round_trips``
- ``test_session_last_update_time_updates_on_event``
  → ``test_last_update_time_is_the_event_time``
- ``test_get_session_with_config``
  → ``test_get_session_config_filters``
- ``test_partial_events_are_not_persisted``
  → ``test_partial_events_are_dropped``
- ``test_get_user_state_returns_empty_dict_when_no_state_exists``
  → ``test_get_user_state``
- ``test_get_user_state_returns_state_written_via_append_event``
  → ``test_get_user_state``
- ``test_get_user_state_is_not_visible_across_users``
  → ``test_get_user_state``
- ``test_get_user_state_is_not_visible_across_apps``
  → ``test_get_user_state``
- ``test_get_user_state_available_before_session_is_created``
  → ``test_get_user_state``
- ``test_get_user_state_reflects_latest_write``
  → ``test_get_user_state``
- ``test_append_event_to_stale_session (DatabaseSessionService)``
  → ``test_stale_writer_is_rejected``
- ``test_append_event_concurrent_stale_sessions_reject_stale_writer``
  → ``test_concurrent_stale_writers_one_wins``
- ``test_append_event_allows_timestamp_drift_for_current_session``
  → ``test_current_session_tolerates_time_drift``
- ``test_append_event_allows_markerless_current_session``
  → ``test_markerless_session_is_checked_by_events``

Not applicable (they test another backend's internals, not the contract): the
``DatabaseSessionService`` engine options, read-only factories, rollback spies, table
preparation races and ``_get_or_create_state`` rows; the SQLite URL parsing tests; the
in-memory "same object as storage" test; ``App state missing`` / ``User state missing`` (ADK's
SQL rows that convstore does not have: a missing app or user state conversation is empty
state). Every contract behaviour above is met; none is xfailed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from convstore import ConversationStore
from tests.integrations.pydantic_ai_google_adk_support import (  # noqa: F401 - blobs_url: a fixture
    blobs_url,
    require,
    sqlite_file_bytes,
)

require("google.adk")

from google.adk.errors.already_exists_error import AlreadyExistsError  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.adk.sessions.in_memory_session_service import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from convstore.integrations.google_adk import ConvstoreSessionService  # noqa: E402

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@pytest.fixture
async def service(store: ConversationStore) -> ConvstoreSessionService:
    return ConvstoreSessionService(store=store)


def app() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


def delta_event(delta: dict[str, Any], **fields: Any) -> Event:
    return Event(
        invocation_id=f"inv-{uuid.uuid4().hex[:6]}",
        author="user",
        actions=EventActions(state_delta=delta),
        **fields,
    )


async def test_missing_session_is_none(service: ConvstoreSessionService) -> None:
    assert await service.get_session(app_name=app(), user_id="u", session_id="nope") is None


async def test_create_get_delete_round_trip(service: ConvstoreSessionService) -> None:
    name = app()
    before = time.time()
    created = await service.create_session(app_name=name, user_id="u", state={"k": "v"})
    assert created.id and created.app_name == name and created.user_id == "u"
    assert created.state == {"k": "v"}
    assert before <= created.last_update_time <= time.time()
    got = await service.get_session(app_name=name, user_id="u", session_id=created.id)
    assert got == created
    await service.delete_session(app_name=name, user_id="u", session_id=created.id)
    assert await service.get_session(app_name=name, user_id="u", session_id=created.id) is None
    await service.delete_session(app_name=name, user_id="u", session_id=created.id)  # no error


async def test_list_returns_every_session_with_state(service: ConvstoreSessionService) -> None:
    name = app()
    ids = [f"s{i}" for i in range(5)]
    for sid in ids:
        await service.create_session(app_name=name, user_id="u", session_id=sid, state={"k": sid})
    listed = (await service.list_sessions(app_name=name, user_id="u")).sessions
    assert sorted(s.id for s in listed) == ids
    assert all(s.state == {"k": s.id} and s.events == [] for s in listed)


async def test_list_by_user_and_for_all_users(service: ConvstoreSessionService) -> None:
    name = app()
    for user, sid in (("u1", "a"), ("u1", "b"), ("u2", "c")):
        await service.create_session(app_name=name, user_id=user, session_id=sid, state={"k": sid})
    assert {s.id for s in (await service.list_sessions(app_name=name, user_id="u1")).sessions} == {
        "a",
        "b",
    }
    only = (await service.list_sessions(app_name=name, user_id="u2")).sessions
    assert [(s.id, s.state) for s in only] == [("c", {"k": "c"})]
    everyone = (await service.list_sessions(app_name=name)).sessions
    assert {s.id: s.state for s in everyone} == {"a": {"k": "a"}, "b": {"k": "b"}, "c": {"k": "c"}}
    assert (await service.list_sessions(app_name=app())).sessions == []


async def test_list_is_oldest_update_first(service: ConvstoreSessionService) -> None:
    name = app()
    first = await service.create_session(app_name=name, user_id="u", session_id="first")
    await service.create_session(app_name=name, user_id="u", session_id="second")
    await service.append_event(first, Event(author="user", timestamp=time.time() + 60))
    listed = (await service.list_sessions(app_name=name, user_id="u")).sessions
    assert [s.id for s in listed] == ["second", "first"]
    assert listed[-1].last_update_time == pytest.approx(first.last_update_time)


async def test_app_state_is_shared_across_users(service: ConvstoreSessionService) -> None:
    name = app()
    s1 = await service.create_session(app_name=name, user_id="u1", state={"app:a": 1})
    await service.append_event(s1, delta_event({"app:b": 2}))
    s2 = await service.create_session(app_name=name, user_id="u2")
    assert s2.state == {"app:a": 1, "app:b": 2}
    again = await service.get_session(app_name=name, user_id="u1", session_id=s1.id)
    assert again is not None and again.state == {"app:a": 1, "app:b": 2}


async def test_user_state_is_per_user(service: ConvstoreSessionService) -> None:
    name = app()
    s1 = await service.create_session(app_name=name, user_id="u1", state={"user:a": 1})
    await service.append_event(s1, delta_event({"user:b": None}))  # None is a value, kept
    other = await service.create_session(app_name=name, user_id="u1")
    assert other.state == {"user:a": 1, "user:b": None}
    assert (await service.create_session(app_name=name, user_id="u2")).state == {}


async def test_session_state_stays_in_its_session(service: ConvstoreSessionService) -> None:
    name = app()
    s1 = await service.create_session(app_name=name, user_id="u", state={"a": {"x": 1}})
    await service.append_event(s1, delta_event({"b": 2, "a": {"y": 2}}))  # replaces, no merge
    got = await service.get_session(app_name=name, user_id="u", session_id=s1.id)
    assert got is not None and got.state == {"a": {"y": 2}, "b": 2}
    assert (await service.create_session(app_name=name, user_id="u")).state == {}


async def test_temp_keys_are_never_stored(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    event = delta_event({"temp:scratch": "t", "kept": "k"})
    await service.append_event(session, event)
    assert session.state["temp:scratch"] == "t"  # visible to the rest of the invocation
    assert "temp:scratch" not in event.actions.state_delta
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and got.state == {"kept": "k"}
    assert got.events[0].actions.state_delta == {"kept": "k"}


async def test_same_session_id_for_two_users(service: ConvstoreSessionService) -> None:
    name = app()
    mine = await service.create_session(app_name=name, user_id="u1", session_id="s")
    await service.append_event(mine, Event(author="user"))
    await service.create_session(app_name=name, user_id="u2", session_id="s")
    theirs = await service.get_session(app_name=name, user_id="u2", session_id="s")
    assert theirs is not None and theirs.user_id == "u2" and theirs.events == []


async def test_duplicate_session_id_raises(service: ConvstoreSessionService) -> None:
    name = app()
    await service.create_session(app_name=name, user_id="u", session_id="dup")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=name, user_id="u", session_id="dup")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=name, user_id="u", session_id="  dup ")


async def test_padded_session_ids_are_stripped(service: ConvstoreSessionService) -> None:
    name = app()
    await service.create_session(app_name=name, user_id="u", session_id=" pad ")
    got = await service.get_session(app_name=name, user_id="u", session_id="pad  ")
    assert got is not None and got.id == "pad"
    await service.delete_session(app_name=name, user_id="u", session_id="  pad")
    assert await service.get_session(app_name=name, user_id="u", session_id="pad") is None


async def test_event_bytes_round_trip_as_blobs(
    service: ConvstoreSessionService, store: ConversationStore, db_url: str
) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    content = types.Content(
        role="user", parts=[types.Part.from_bytes(data=PNG, mime_type="image/png")]
    )
    grounding = types.GroundingMetadata(search_entry_point=types.SearchEntryPoint(sdk_blob=b"sdk"))
    event = Event(author="user", content=content, grounding_metadata=grounding)
    await service.append_event(session, event)
    assert session.events[0].content == content
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and len(got.events) == 1
    assert got.events[0].content == content and got.events[0].grounding_metadata == grounding
    if db_url.startswith("sqlite"):
        raw = sqlite_file_bytes(db_url)
        assert PNG not in raw and b"iVBORw0KGgo" not in raw


async def test_every_event_field_round_trips(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    event = Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="hello")]),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="code",
        error_message="message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["q"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"k": "v"},
        timestamp=1_700_000_000.123,
        input_transcription=types.Transcription(text="in", finished=True),
        output_transcription=types.Transcription(text="out", finished=True),
    )
    await service.append_event(session, event)
    assert await service.get_session(app_name=name, user_id="u", session_id=session.id) == session


async def test_last_update_time_is_the_event_time(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    created = session.last_update_time
    await service.append_event(session, Event(author="user", timestamp=created + 10))
    assert session.last_update_time == pytest.approx(created + 10, abs=1e-6)
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and got.last_update_time == pytest.approx(created + 10, abs=1e-6)


async def test_get_session_config_filters(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    for stamp in range(1, 6):
        await service.append_event(session, Event(author="user", timestamp=stamp))

    async def stamps(**config: Any) -> list[float]:
        got = await service.get_session(
            app_name=name,
            user_id="u",
            session_id=session.id,
            config=GetSessionConfig(**config) if config else None,
        )
        assert got is not None
        return [e.timestamp for e in got.events]

    assert await stamps() == [1, 2, 3, 4, 5]
    assert await stamps(num_recent_events=0) == []
    assert await stamps(num_recent_events=3) == [3, 4, 5]
    assert await stamps(after_timestamp=4.0) == [4, 5]
    assert await stamps(after_timestamp=50.0) == []
    assert await stamps(after_timestamp=4.0, num_recent_events=3) == [4, 5]
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        GetSessionConfig(num_recent_events=-1)


async def test_partial_events_are_dropped(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    await service.append_event(session, Event(author="user", partial=True))
    assert session.events == []
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and got.events == []


async def test_get_user_state(service: ConvstoreSessionService) -> None:
    name = app()
    assert await service.get_user_state(app_name=name, user_id="u1") == {}
    session = await service.create_session(app_name=name, user_id="u1")
    await service.append_event(session, delta_event({"user:profile": {"name": "A"}, "s": 1}))
    assert await service.get_user_state(app_name=name, user_id="u1") == {"profile": {"name": "A"}}
    assert await service.get_user_state(app_name=name, user_id="u2") == {}
    assert await service.get_user_state(app_name=app(), user_id="u1") == {}
    await service.append_event(session, delta_event({"user:counter": 1}))
    await service.append_event(session, delta_event({"user:counter": 2}))
    state = await service.get_user_state(app_name=name, user_id="u1")
    assert state == {"profile": {"name": "A"}, "counter": 2}


async def test_stale_writer_is_rejected(service: ConvstoreSessionService) -> None:
    name = app()
    original = await service.create_session(app_name=name, user_id="u")
    now = time.time()
    await service.append_event(original, delta_event({"k1": 1}, timestamp=now + 1))
    fresh = await service.get_session(app_name=name, user_id="u", session_id=original.id)
    assert fresh is not None
    await service.append_event(fresh, delta_event({"k2": 2}, timestamp=now + 2))
    # `original` still says one event: it is stale now.
    with pytest.raises(ValueError, match="modified in storage"):
        await service.append_event(original, delta_event({"k3": 3}, timestamp=now + 3))
    final = await service.get_session(app_name=name, user_id="u", session_id=original.id)
    assert final is not None and len(final.events) == 2
    assert final.state == {"k1": 1, "k2": 2}


async def test_concurrent_stale_writers_one_wins(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    for round_ in range(8):
        latest = await service.get_session(app_name=name, user_id="u", session_id=session.id)
        assert latest is not None
        copies = [latest.model_copy(deep=True), latest.model_copy(deep=True)]
        for copy in copies:
            copy._storage_update_marker = latest._storage_update_marker
        base = latest.last_update_time + 10
        results = await asyncio.gather(
            *(
                service.append_event(copy, delta_event({f"k{round_}-{i}": i}, timestamp=base + i))
                for i, copy in enumerate(copies)
            ),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], ValueError)
        assert "modified in storage" in str(errors[0])
    final = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert final is not None and len(final.events) == 8
    for round_ in range(8):
        written = [k for k in final.state if k.startswith(f"k{round_}-")]
        assert len(written) == 1  # the loser's delta is nowhere: no half-written turn


@pytest.mark.parametrize("written_by", ["an earlier release", "an application"])
async def test_a_lagging_snapshot_is_completed_from_the_events(
    service: ConvstoreSessionService, store: ConversationStore, written_by: str
) -> None:
    """A snapshot behind the events loses no state: reads fold the events after it, and the
    next append brings it up to date. (An earlier release wrote it after the event, by seq; an
    application may put back an older copy of the session's metadata.)"""
    name = app()
    session = await service.create_session(app_name=name, user_id="u", state={"a": 1})
    await service.append_event(session, delta_event({"b": 2}))
    cid = ConvstoreSessionService.conversation_id(name, "u", session.id)
    header = await store.load(cid, last=1)
    snapshot = header.metadata["adk.snapshot"]
    await service.append_event(session, delta_event({"c": 3, "a": 0}))
    await service.append_event(session, delta_event({"d": 4}))
    if written_by == "an earlier release":  # its snapshot, by seq, two events behind
        stale = {"through_seq": header.head_seq, "state": snapshot["state"], "time": 0.0}
        await store.update_conversation(cid, metadata={**header.metadata, "adk.snapshot": stale})
    else:  # the metadata as it was after the first event
        await store.update_conversation(cid, metadata=header.metadata)
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and got.state == {"a": 0, "b": 2, "c": 3, "d": 4}
    listed = (await service.list_sessions(app_name=name)).sessions
    assert listed[0].state == {"a": 1, "b": 2}  # listings show the snapshot as stored
    await service.append_event(got, delta_event({"e": 5}))  # the next append catches up
    listed = (await service.list_sessions(app_name=name)).sessions
    assert listed[0].state == {"a": 0, "b": 2, "c": 3, "d": 4, "e": 5}


async def test_events_sharing_an_id(service: ConvstoreSessionService) -> None:
    """An equal re-delivery is stored once; a different event reusing an id is kept too."""
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    first = delta_event({"n": 1}, id="fixed", timestamp=1.0)
    await service.append_event(session, first)
    await service.append_event(session, first.model_copy(deep=True))  # retried delivery
    await service.append_event(session, delta_event({"n": 2}, id="fixed", timestamp=2.0))
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and [e.timestamp for e in got.events] == [1.0, 2.0]
    assert [e.id for e in got.events] == ["fixed", "fixed"] and got.state == {"n": 2}


async def test_current_session_tolerates_time_drift(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    await service.append_event(
        session, Event(author="user", invocation_id="i1", timestamp=session.last_update_time + 10)
    )
    session.last_update_time -= 0.0001
    await service.append_event(
        session, Event(author="user", invocation_id="i2", timestamp=session.last_update_time + 20)
    )
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and [e.invocation_id for e in got.events] == ["i1", "i2"]


async def test_markerless_session_is_checked_by_events(service: ConvstoreSessionService) -> None:
    name = app()
    session = await service.create_session(app_name=name, user_id="u")
    await service.append_event(session, Event(author="user", invocation_id="i1"))
    session._storage_update_marker = None
    session.last_update_time -= 0.0001
    await service.append_event(session, Event(author="user", invocation_id="i2"))
    got = await service.get_session(app_name=name, user_id="u", session_id=session.id)
    assert got is not None and [e.invocation_id for e in got.events] == ["i1", "i2"]
    # A marker-less copy that lacks the newest event is stale.
    behind = got.model_copy(deep=True)
    behind.events = behind.events[:1]
    behind._storage_update_marker = None
    with pytest.raises(ValueError, match="modified in storage"):
        await service.append_event(behind, Event(author="user", invocation_id="i3"))


async def test_agrees_with_adk_in_memory_on_a_scripted_session(
    service: ConvstoreSessionService,
) -> None:
    """The same calls on ADK's in-memory service and ours give equal sessions."""
    reference = InMemorySessionService()
    name = app()
    call = types.FunctionCall(id="adk-1", name="chart", args={"n": 1})
    response = types.FunctionResponse(id="adk-1", name="chart", response={"ok": True})
    events = [
        Event(
            author="user",
            content=types.Content(role="user", parts=[types.Part(text="draw")]),
            timestamp=10,
        ),
        Event(
            author="agent",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            timestamp=11,
            actions=EventActions(state_delta={"app:calls": 1, "turn": 1}),
        ),
        Event(
            author="agent",
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
            timestamp=12,
            actions=EventActions(state_delta={"user:seen": True, "temp:x": 1}),
        ),
        Event(
            author="agent",
            content=types.Content(role="model", parts=[types.Part(text="done")]),
            timestamp=13,
        ),
    ]
    sessions = []
    for svc in (reference, service):
        session = await svc.create_session(
            app_name=name, user_id="u", session_id="s", state={"a": 1}
        )
        for event in events:
            await svc.append_event(session, event.model_copy(deep=True))
        sessions.append(session)
    got = [
        await svc.get_session(app_name=name, user_id="u", session_id="s")
        for svc in (reference, service)
    ]
    assert got[0] is not None and got[1] is not None
    assert got[1].events == got[0].events
    assert got[1].state == got[0].state
    assert sessions[1].state == sessions[0].state
    listed = [(await svc.list_sessions(app_name=name)).sessions for svc in (reference, service)]
    assert [(s.id, s.state, s.last_update_time) for s in listed[1]] == [
        (s.id, s.state, s.last_update_time) for s in listed[0]
    ]
