"""google-adk sessions' places and state in convstore (used by `google_adk`).

- Ids: a session's conversation id is derived from (app, user, session id), an app's and a
  user's scoped-state conversations from the app and the user (``adk-s-`` / ``adk-a-`` /
  ``adk-u-`` + a SHA-256 prefix), so every process finds the same ones.
- Scoped state is kept with each value wrapped in a one-element list (``None`` stays a value,
  objects replace instead of merging under RFC 7396 patches); `unwrap` gives the plain values.
- Session state is the session's initial state with the ``state_delta`` of every stored event
  applied in order (`fold`); a `Snapshot` of it rides in the metadata of the append that
  stores an event.
- `RECORDS`: events as their native records (``inline_data`` bytes as blob placeholders).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from google.adk.sessions import _session_util
from google.adk.sessions.state import State
from pydantic import JsonValue

from convstore.errors import ConversationNotFoundError
from convstore.integrations._core.native_record import MARKER_KEY, NativeFormat
from convstore.store import ConversationStore

__all__ = [
    "APP_KEY",
    "CREATED_KEY",
    "CREATOR_KEY",
    "FORMAT",
    "KIND_KEY",
    "RECORDS",
    "SESSION_KEY",
    "SNAPSHOT_KEY",
    "USER_KEY",
    "Snapshot",
    "app_cid",
    "fold",
    "merged",
    "scope_conversation",
    "scope_state",
    "session_cid",
    "unwrap",
    "user_cid",
]

FORMAT: Final = "google-adk"
# The session conversation's metadata keys (a scope conversation has the first three).
KIND_KEY: Final = "adk.kind"
"""``"session"``, ``"app"`` or ``"user"``: what the conversation holds."""
APP_KEY: Final = "adk.app"
USER_KEY: Final = "adk.user"
SESSION_KEY: Final = "adk.session"
CREATED_KEY: Final = "adk.created"
CREATOR_KEY: Final = "adk.token"
"""A fresh token per `create_session` call: the one that finds its own token created it."""
SNAPSHOT_KEY: Final = "adk.snapshot"
"""The session state through an event: ``{"through_id", "state", "time"}``, ``through_id``
the id of the message carrying that event (``{"through_seq": 0, ...}`` before the first event;
earlier releases wrote ``through_seq``, the seq of that message)."""


def _digest(*names: str) -> str:
    return hashlib.sha256("\x00".join(names).encode()).hexdigest()[:48]


def session_cid(app: str, user: str, session_id: str) -> str:
    return f"adk-s-{_digest(app, user, session_id)}"


def app_cid(app: str) -> str:
    return f"adk-a-{_digest(app)}"


def user_cid(app: str, user: str) -> str:
    return f"adk-u-{_digest(app, user)}"


def unwrap(state: dict[str, JsonValue]) -> dict[str, Any]:
    """Scoped state as stored (each value in a one-element list) → plain values."""
    return {k: v[0] for k, v in state.items() if isinstance(v, list) and len(v) == 1}


def fold(state: dict[str, Any], natives: Iterable[dict[str, JsonValue]]) -> dict[str, Any]:
    """``state`` with the session-scoped deltas of stored events applied in order."""
    folded = dict(state)
    for native in natives:
        actions = native.get("actions")
        delta = actions.get("state_delta") if isinstance(actions, dict) else None
        if isinstance(delta, dict):
            folded.update(_session_util.extract_state_delta(delta)["session"])
    return folded


async def scope_conversation(
    store: ConversationStore, cid: str, app: str, user: str | None
) -> None:
    """Make the conversation holding an app's (``user=None``) or a user's scoped state."""
    kind = "app" if user is None else "user"
    metadata: dict[str, JsonValue] = {MARKER_KEY: FORMAT, KIND_KEY: kind, APP_KEY: app}
    if user is not None:
        metadata[USER_KEY] = user
    await store.get_or_create_conversation(cid, metadata=metadata)


async def scope_state(store: ConversationStore, cid: str) -> dict[str, Any]:
    try:
        conv = await store.load(cid, last=0)
    except ConversationNotFoundError:
        return {}
    return unwrap(conv.state)


def merged(app: dict[str, Any], user: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    merged = dict(session)
    merged.update({State.APP_PREFIX + k: v for k, v in app.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return merged


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The session state through the event an append stores, and the metadata it goes in."""

    metadata: dict[str, Any]
    state: dict[str, Any]
    time: float

    def metadata_through(self, key: str) -> dict[str, Any]:
        """The session's metadata with this snapshot, taken through the message ``key``."""
        snapshot = {"through_id": key, "state": self.state, "time": self.time}
        return {**self.metadata, SNAPSHOT_KEY: snapshot}


def _blob(node: dict[str, JsonValue]) -> tuple[str, str | None] | None:
    """google-genai's `Blob` JSON (``inline_data``): ``{"data": base64, "mime_type"}``."""
    media_type = node.get("mime_type", node.get("mimeType"))
    if isinstance(node.get("data"), str) and isinstance(media_type, str):
        return "data", media_type
    return None


RECORDS: Final = NativeFormat(FORMAT, _blob, "urlsafe")
"""Events as their native records (``inline_data`` bytes as blob placeholders)."""
