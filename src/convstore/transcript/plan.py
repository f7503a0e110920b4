"""The provider-neutral transcript that encoders turn into wire JSON.

The planner (`convstore.transcript.planner`) builds a `Plan` from stored messages; each
``providers/<name>.encode`` maps a `Plan` to its request JSON and nothing else. Everything a
provider would reject because of *history* is already repaired here.

Invariants a `Plan` guarantees to every encoder:

- ``turns`` alternate freely between `UserTurn` and `AssistantTurn`, except that an
  `AssistantTurn` with calls is always immediately followed by exactly one `ToolTurn`, whose
  results answer exactly those calls, in the same order, one each.
- Every `Call` and its `Result` share ``wire_id`` and ``wire_name``: ids and tool names are
  already projected for the target, unique within the plan.
- No text part is empty or whitespace only (`is_blank`; providers refuse such text parts), no
  turn is empty, and a tool result's content is never empty.
- `Media` holds either bytes (``data``) or an external ``uri`` the target may fetch; what the
  target cannot carry has already become `Text` (and is listed in the diagnostics).
- `Reasoning` appears only where the target may replay it (same provider, or same model,
  per the capabilities table); reasoning converted by policy is plain `Text`. The same signed
  reasoning (one reasoning item id, one signature) is replayed at most once per plan; where
  the target takes reasoning only at the start of an assistant message, an `AssistantTurn`
  holds at most one run of it (content before that run is the encoder's to move after it).
- System prompts are collected in ``system``, in order.
- ``tools`` are the request's tool definitions, each with its projected ``wire_name`` (the
  same projection its calls got), unique by canonical name.

Plan values are read-only by convention (encoders never change a plan); they are plain
slotted dataclasses rather than frozen ones because a render builds thousands of them and a
frozen dataclass costs several times more to construct.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from pydantic import JsonValue

from convstore.capabilities import Capabilities
from convstore.model import ThinkingPart, ToolDefinition
from convstore.transcript.diagnostics import Diagnostics

__all__ = [
    "AssistantPart",
    "AssistantTurn",
    "Call",
    "ContentBody",
    "ErrorBody",
    "JsonBody",
    "Media",
    "Plan",
    "Reasoning",
    "Result",
    "ResultBody",
    "Text",
    "ToolSpec",
    "ToolTurn",
    "Turn",
    "UserPart",
    "UserTurn",
    "is_blank",
]


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or whitespace only: no provider takes such a text part.

    Checked without copying the text, as ``strip`` would.
    """
    return not text or text.isspace()


@dataclass(slots=True)
class Text:
    """Non-empty text."""

    text: str
    provider_details: dict[str, JsonValue] | None = None
    """Opaque data of the source part (e.g. a Responses message id), for same-provider replay."""


@dataclass(slots=True)
class Media:
    """A file the target receives: inline bytes or an external URI (exactly one)."""

    media_type: str
    data: bytes | None = None
    uri: str | None = None
    filename: str | None = None
    label: str = ""
    """Short stable reference ("file 241a70") used where media and text must be tied together."""

    @property
    def base64(self) -> str:
        """Standard base64 of ``data``."""
        if self.data is None:
            raise ValueError("media without inline data has no base64 form")
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """``data:`` URL of the bytes, or the external URI."""
        if self.uri is not None:
            return self.uri
        return f"data:{self.media_type};base64,{self.base64}"


@dataclass(slots=True)
class Reasoning:
    """Reasoning replayed to the provider that produced it, with its artefacts."""

    part: ThinkingPart


@dataclass(slots=True)
class Call:
    """A tool call, projected for the target."""

    call_id: str
    """Canonical id."""
    wire_id: str
    """Id to send."""
    name: str
    """Canonical tool name."""
    wire_name: str
    """Tool name to send."""
    arguments: dict[str, JsonValue]
    raw_arguments: str | None = None
    """The model's argument text when it was not a JSON object (targets taking text use it)."""
    provider_id: str | None = None
    """The id the producing provider gave it (informational)."""
    provider_details: dict[str, JsonValue] | None = None
    """Opaque data of the source part (e.g. a Responses ``fc_`` item id)."""
    same_provider: bool = False
    """Whether the call was produced by this target's provider family (so its
    ``provider_details`` may be replayed)."""


@dataclass(slots=True)
class JsonBody:
    """A JSON result."""

    value: JsonValue


@dataclass(slots=True)
class ErrorBody:
    """A failed call (``is_error`` where the target has it)."""

    message: str


@dataclass(slots=True)
class ContentBody:
    """Ordered text and media (never empty)."""

    parts: list[Text | Media]


ResultBody = JsonBody | ErrorBody | ContentBody


@dataclass(slots=True)
class Result:
    """The one result emitted for a `Call`."""

    call: Call
    body: ResultBody
    synthetic: bool = False
    """Made by the planner for a call with no stored result (always an `ErrorBody`)."""

    @property
    def is_error(self) -> bool:
        """Whether the result reports a failure."""
        return isinstance(self.body, ErrorBody)


UserPart = Text | Media
AssistantPart = Text | Media | Reasoning | Call


@dataclass(slots=True)
class UserTurn:
    """A user message."""

    parts: list[UserPart]
    injected: bool = False
    """Carries media moved out of the preceding tool results (``USER_MESSAGE``/``SIBLING``)."""


@dataclass(slots=True)
class AssistantTurn:
    """An assistant message."""

    parts: list[AssistantPart]
    provider: str | None = None
    model: str | None = None

    @property
    def calls(self) -> list[Call]:
        """The calls, in order."""
        return [p for p in self.parts if isinstance(p, Call)]


@dataclass(slots=True)
class ToolTurn:
    """The results of the preceding assistant turn's calls, in call order."""

    results: list[Result]


Turn = UserTurn | AssistantTurn | ToolTurn


@dataclass(slots=True)
class ToolSpec:
    """A tool definition to send, under its projected name."""

    definition: ToolDefinition
    wire_name: str


@dataclass(slots=True)
class Plan:
    """A transcript ready to encode for one target and model."""

    target: str
    model: str | None
    capabilities: Capabilities
    diagnostics: Diagnostics
    system: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
