"""google-adk's `BaseSessionService` backed by convstore.

`ConvstoreSessionService` stores ADK sessions (google-adk ≥ 2.13) as convstore conversations.

How ADK's model maps onto convstore's:

- **Session → conversation.** ADK names a session by (app, user, session id), the id being
  unique only per app and user, so the conversation id is derived from all three
  (``adk-s-`` + a SHA-256 prefix); the three names, the creation time and the session state
  live in the conversation's metadata (``adk.app``, ``adk.user``, ``adk.session``, ...).
  Session ids are stripped of surrounding whitespace, as ADK's in-memory service does.
- **Event → messages.** Each event is stored by one ``append`` as the canonical messages of its
  content, the last carrying ``Message.id = event.id`` and the whole event as its native
  record (format ``google-adk``, the JSON ``DatabaseSessionService`` stores). Function calls
  become tool calls, function responses tool results, ``inline_data`` files (blobs), text
  text, thoughts thinking; an event without content is an empty message. Inline bytes in the
  record are replaced by blob placeholders and restored on read, so no file is in a row.
- **Reads** take the events' records straight from `ConversationStore.load_native` (one JSON
  column per message): `get_session` builds ADK's `Event`s from them without convstore's
  typed messages in between.
- **State.** ``app:`` keys live in one conversation per app, ``user:`` keys in one per (app,
  user), each in `Conversation.state`, changed by merge patches (each value wrapped in a
  one-element list so that ``None`` stays a value and objects replace instead of merging).
  Session keys are derived from the events: the session's state is its initial state plus
  every stored event's ``state_delta``, in order. A snapshot of it (naming the event it covers)
  is written into the session's metadata by the append that stores the event; a snapshot that
  lags (messages written by other means, or by an earlier release that wrote the snapshot
  afterwards) is completed from the events. ``temp:`` keys are applied to the caller's session
  object only, never stored.
- **Stale writers.** A session carries the conversation's revision as its storage marker;
  ``append_event`` appends with ``expected_revision`` set to it, so a writer holding an older
  copy gets ADK's `StaleSessionError` ("modified in storage") and nothing is written. A
  session without a marker (built by hand) is checked as ADK does: it must hold the newest
  stored event.

An event, its ``app:`` and ``user:`` deltas and the session's state snapshot are written in one
transaction (``append(..., state_patches=..., metadata=...)``): a process killed at any point
keeps all of them or none.

Limits: `list_sessions` shows each session's state snapshot, which lags only when the session's
conversation was written to other than by `append_event` (`get_session` folds the missing
events in).

Its modules:

- ``_parts``: an ADK event's content as canonical messages.
- ``_state``: ``app:``, ``user:`` and session state kept in conversations and folded from events.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import uuid
from typing import Any, Final

from convstore.errors import MissingDependencyError

try:
    from google.adk.errors._stale_session_error import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event
    from google.adk.sessions import _session_util
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session
except ImportError as _missing:
    raise MissingDependencyError(__name__, "google-adk", "google-adk") from _missing
from pydantic import JsonValue

from convstore.errors import (
    ConversationNotFoundError,
    InvalidMessageError,
    MessageNotFoundError,
    RevisionConflictError,
)
from convstore.integrations._core.native_record import MARKER_KEY
from convstore.integrations._core.store_handle import OwnsStore, StoreHandle
from convstore.integrations.google_adk._parts import event_messages
from convstore.integrations.google_adk._state import (
    APP_KEY,
    CREATED_KEY,
    CREATOR_KEY,
    FORMAT,
    KIND_KEY,
    RECORDS,
    SESSION_KEY,
    SNAPSHOT_KEY,
    USER_KEY,
    Snapshot,
    app_cid,
    fold,
    merged,
    scope_conversation,
    scope_state,
    session_cid,
    unwrap,
    user_cid,
)
from convstore.model import Message
from convstore.store import AppendResult, ConversationStore, ConversationSummary, NativePath

__all__ = ["ConvstoreSessionService"]

_STALE: Final = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)


class ConvstoreSessionService(OwnsStore, BaseSessionService):
    """ADK sessions, events and app/user/session state in convstore (see the module docstring).

    Args:
        store: an open `ConversationStore` to share; the application closes it.
        url: a database URL; the service leases the process's store on it (one per URL and
            event loop, shared by every integration using it) on first use and gives it back in
            `close` (the last user's closes it).
        blobs: the blob location for a store opened on ``url`` (its default otherwise).
    """

    def __init__(
        self,
        *,
        store: ConversationStore | None = None,
        url: str | None = None,
        blobs: str | None = None,
    ) -> None:
        self._handle = StoreHandle(store=store, url=url, blobs=blobs)

    close = OwnsStore.aclose  # this service's name for it (``async with`` closes it too)

    @staticmethod
    def conversation_id(app_name: str, user_id: str, session_id: str) -> str:
        """The convstore conversation holding a session (for ``store.load`` / ``store.render``)."""
        return session_cid(app_name, user_id, session_id.strip())

    # -- sessions --------------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new session; `AlreadyExistsError` when the app's user already has that id."""
        store = await self._handle.get()
        session_id = session_id.strip() if session_id else None
        session_id = session_id or str(uuid.uuid4())
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        now = time.time()
        token = uuid.uuid4().hex
        metadata = {
            MARKER_KEY: FORMAT,
            KIND_KEY: "session",
            APP_KEY: app_name,
            USER_KEY: user_id,
            SESSION_KEY: session_id,
            CREATED_KEY: now,
            CREATOR_KEY: token,
            SNAPSHOT_KEY: {"through_seq": 0, "state": deltas["session"], "time": now},
        }
        cid = session_cid(app_name, user_id, session_id)
        conv = await store.get_or_create_conversation(cid, metadata=metadata)
        if conv.metadata.get(CREATOR_KEY) != token:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        app_state, user_state = await asyncio.gather(
            self._patch_scope(store, app_cid(app_name), app_name, None, deltas["app"]),
            self._patch_scope(
                store, user_cid(app_name, user_id), app_name, user_id, deltas["user"]
            ),
        )
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merged(app_state, user_state, deltas["session"]),
            last_update_time=now,
        )
        session._storage_update_marker = conv.revision
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (filtered by ``config``), or `None`."""
        store = await self._handle.get()
        session_id = session_id.strip() if session_id else session_id
        cid = session_cid(app_name, user_id, session_id)
        recent = config.num_recent_events if config is not None else None
        # An event is one message or a few: a window of 3 per event usually holds the newest
        # `recent` events; when it does not, the whole path is read.
        window = None if recent is None else 3 * recent + 3 if recent else 0
        # return_exceptions: the three reads all end before this returns, even when the session
        # is missing (a read left running would outlive its caller's event loop).
        loaded, app_state, user_state = await asyncio.gather(
            store.load_native(cid, format=FORMAT, last=window),
            scope_state(store, app_cid(app_name)),
            scope_state(store, user_cid(app_name, user_id)),
            return_exceptions=True,
        )
        for outcome in (app_state, user_state):
            if isinstance(outcome, BaseException):
                raise outcome
        if isinstance(loaded, ConversationNotFoundError):
            return None
        if isinstance(loaded, BaseException):
            raise loaded
        path = loaded
        natives = _records(path)
        if recent and len(natives) < recent and len(path) == window:
            path = await store.load_native(cid, format=FORMAT)
            natives = _records(path)
        session_state, updated = await self._session_state(store, path)
        if recent is not None:
            natives = natives[-recent:] if recent else []
        events = await _events(store, natives)
        if config is not None and config.after_timestamp is not None:
            events = _since(events, config.after_timestamp)
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merged(app_state, user_state, session_state),
            events=events,
            last_update_time=updated,
        )
        session._storage_update_marker = path.revision
        return session

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's sessions (of ``user_id``, or all users), oldest update first, no events."""
        store = await self._handle.get()
        wanted: dict[str, JsonValue] = {
            MARKER_KEY: FORMAT,
            KIND_KEY: "session",
            APP_KEY: app_name,
        }
        if user_id is not None:
            wanted[USER_KEY] = user_id
        summaries: list[ConversationSummary] = []
        cursor: str | None = None
        while True:
            page = await store.list_conversations(limit=500, cursor=cursor, metadata=wanted)
            summaries.extend(page)
            if not page.has_more or page.next_cursor is None:
                break
            cursor = page.next_cursor
        users = sorted({str(s.metadata[USER_KEY]) for s in summaries})
        app_state, *user_states = await asyncio.gather(
            scope_state(store, app_cid(app_name)),
            *(scope_state(store, user_cid(app_name, user)) for user in users),
        )
        by_user = dict(zip(users, user_states, strict=True))
        sessions = []
        for summary in summaries:
            snapshot = summary.metadata.get(SNAPSHOT_KEY)
            snapshot = snapshot if isinstance(snapshot, dict) else {}
            user = str(summary.metadata[USER_KEY])
            state = snapshot.get("state")
            sessions.append(
                Session(
                    id=str(summary.metadata[SESSION_KEY]),
                    app_name=app_name,
                    user_id=user,
                    state=merged(
                        app_state, by_user[user], state if isinstance(state, dict) else {}
                    ),
                    last_update_time=float(snapshot.get("time") or 0.0),
                )
            )
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and its events (a missing one is not an error)."""
        store = await self._handle.get()
        session_id = session_id.strip() if session_id else session_id
        with contextlib.suppress(ConversationNotFoundError):
            await store.delete_conversation(session_cid(app_name, user_id, session_id))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state, keys without the prefix; ``{}`` when none."""
        store = await self._handle.get()
        return await scope_state(store, user_cid(app_name, user_id))

    # -- events ----------------------------------------------------------------------------------

    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` in ``session`` (one append), then apply its state delta.

        Raises `StaleSessionError` when the session changed in storage since ``session`` was
        read, and `SessionNotFoundError` when it does not exist; nothing is written then.
        """
        if event.partial:
            return event
        store = await self._handle.get()
        cid = session_cid(session.app_name, session.user_id, session.id)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        marker = session._storage_update_marker
        patches = await self._scope_patches(store, session, event)
        try:
            head = await store.load_native(cid, format=FORMAT, last=1 if marker else 4)
            if marker is None:
                marker = _check_markerless(head, session)
            state = await self._state_after(store, head, event)
            append = functools.partial(
                _append, store, cid, event, marker=marker, patches=patches, snapshot=state
            )
            try:
                stored = await append(event.id)
            except InvalidMessageError:
                if await self._already_stored(store, cid, event):
                    return event  # an equal re-delivery: idempotent, as ADK's own services are
                # A different event reusing an id (ADK keeps both): the messages get a fresh
                # handle; the event keeps its id in the native record.
                key = f"{event.id}#{uuid.uuid4().hex}"
                stored = await append(key)
        except ConversationNotFoundError as exc:
            raise SessionNotFoundError(f"Session {session.id} not found.") from exc
        except RevisionConflictError as exc:
            raise StaleSessionError(_STALE) from exc
        session._storage_update_marker = stored.revision
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    async def _already_stored(self, store: ConversationStore, cid: str, event: Event) -> bool:
        try:
            message = await store.get_message(event.id, conversation_id=cid)
        except MessageNotFoundError:
            return False
        stored = await _events(store, _natives([message]))
        return bool(stored) and stored[0] == event

    async def _state_after(
        self, store: ConversationStore, head: NativePath, event: Event
    ) -> Snapshot:
        """The metadata, with the session state through ``event``, of the append storing it.

        ``head`` is the conversation as read before the append (its newest message); the
        append is checked against the session's marker, so it applies only to that state.
        """
        state, _ = await self._session_state(store, head)
        folded = fold(state, [event.model_dump(exclude_none=True, mode="json")])
        return Snapshot(head.metadata, folded, event.timestamp)

    async def _session_state(
        self, store: ConversationStore, conv: NativePath
    ) -> tuple[dict[str, Any], float]:
        """The session-scoped state and last update time: the snapshot, completed if it lags."""
        snapshot = conv.metadata.get(SNAPSHOT_KEY)
        snapshot = snapshot if isinstance(snapshot, dict) else {}
        state = snapshot.get("state")
        state = dict(state) if isinstance(state, dict) else {}
        updated = float(snapshot.get("time") or 0.0)
        through_id, through_seq = snapshot.get("through_id"), snapshot.get("through_seq")
        if isinstance(through_id, str):
            head = conv
            if not head and conv.head_seq is not None:  # read without its messages (last=0)
                head = await store.load_native(conv.conversation_id, format=FORMAT, last=1)
            if head and head[-1][1] == through_id:
                return state, updated
        elif through_seq == conv.head_seq or (through_seq == 0 and conv.head_seq is None):
            return state, updated
        # The snapshot lags (the conversation was written to by other means, or by a release
        # that wrote the snapshot after the event): fold the stored events after it. Folding
        # events the snapshot already holds again changes nothing (each delta sets its keys).
        whole = await store.load_native(conv.conversation_id, format=FORMAT)
        start = int(through_seq) if isinstance(through_seq, int) else 0
        if isinstance(through_id, str):
            start = next((seq for seq, mid, _ in reversed(whole) if mid == through_id), 0)
        after = [n for seq, _, n in whole if isinstance(n, dict) and seq > start]
        if after:
            timestamp = after[-1].get("timestamp")
            updated = float(timestamp) if isinstance(timestamp, int | float) else updated
        return fold(state, after), updated

    async def _patch_scope(
        self,
        store: ConversationStore,
        cid: str,
        app: str,
        user: str | None,
        delta: dict[str, Any],
    ) -> dict[str, Any]:
        """Apply ``delta`` to an app or user state conversation; its state afterwards.

        `create_session`'s initial scoped state (no event to write it with).
        """
        if not delta:
            return await scope_state(store, cid)
        await scope_conversation(store, cid, app, user)
        conv = await store.update_state(cid, {key: [value] for key, value in delta.items()})
        return unwrap(conv.state)

    async def _scope_patches(
        self, store: ConversationStore, session: Session, event: Event
    ) -> dict[str, dict[str, JsonValue]]:
        """The event's ``app:`` and ``user:`` deltas as state patches of their conversations.

        The patches are written with the event, in its transaction (`_append`): a crash leaves
        both or neither. Only the (empty) scope conversations are made beforehand.
        """
        delta = event.actions.state_delta if event.actions else None
        if not delta:
            return {}
        deltas = _session_util.extract_json_safe_state_delta(delta)
        app, user = session.app_name, session.user_id
        patches: dict[str, dict[str, JsonValue]] = {}
        for cid, scope_user, scoped in (
            (app_cid(app), None, deltas["app"]),
            (user_cid(app, user), user, deltas["user"]),
        ):
            if not scoped:
                continue
            await scope_conversation(store, cid, app, scope_user)
            patches[cid] = {key: [value] for key, value in scoped.items()}
        return patches


def _check_markerless(path: NativePath, session: Session) -> str:
    """ADK's check for a session without a marker: it must hold the newest stored event."""
    natives = _records(path)
    newest = natives[-1].get("id") if natives else None
    mine = session.events[-1].id if session.events else None
    if newest != mine:
        raise StaleSessionError(_STALE)
    return path.revision


def _natives(messages: list[Message]) -> list[dict[str, JsonValue]]:
    return [n for m in messages if (n := RECORDS.data(m)) is not None]


def _records(path: NativePath) -> list[dict[str, JsonValue]]:
    """The events a native read found (messages before an event's last carry no record)."""
    return [data for _, _, data in path if isinstance(data, dict)]


async def _events(store: ConversationStore, natives: list[dict[str, JsonValue]]) -> list[Event]:
    restored = await RECORDS.restore(store, list(natives))
    return [Event.model_validate(data) for data in restored]


def _since(events: list[Event], after: float) -> list[Event]:
    """The trailing events whose timestamps are all ≥ ``after`` (ADK's in-memory rule)."""
    index = len(events)
    while index > 0 and events[index - 1].timestamp >= after:
        index -= 1
    return events[index:]


async def _append(
    store: ConversationStore,
    cid: str,
    event: Event,
    key: str,
    *,
    marker: str | None,
    patches: dict[str, dict[str, JsonValue]],
    snapshot: Snapshot,
) -> AppendResult:
    """Append the event's messages (named after ``key``) with its state, one transaction.

    The scoped deltas patch their conversations and the session's state snapshot replaces the
    session's metadata in the same append, checked against ``marker``: the event and all its
    state are stored, or none of it. A second, different result for a call is kept as history
    (the call keeps its first), as ADK stores whatever events it is given.
    """
    return await store.append(
        cid,
        _messages(event, key),
        expected_revision=marker,
        on_conflict="keep-first",
        state_patches=patches or None,
        metadata=snapshot.metadata_through(key),
    )


def _messages(event: Event, key: str) -> list[Message]:
    """The canonical messages of an event; the last carries ``key`` and the native record."""
    data: Any = event.model_dump(exclude_none=True, mode="json")
    return RECORDS.attach(event_messages(event, key), key or None, RECORDS.strip(data))
