"""What each render target accepts, as one table of data.

The planner and the encoders consult these rows instead of branching on provider or model
names; adding a model generation is adding a row. Sources for each fact are in
``docs/providers/<target>.md``.

Invariants:

- A row is chosen by target, then by the first model pattern (``fnmatch``, case-insensitive)
  that matches; every target ends with a catch-all ``*`` row.
- Media a target cannot carry where it is (inside a tool result, in a user message, by URI)
  is moved where it can be carried or becomes a text note; the sets here decide which.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from convstore.errors import UnsupportedFormatError

__all__ = [
    "CAPABILITIES",
    "TARGETS",
    "Capabilities",
    "IdStyle",
    "MediaPlacement",
    "ReasoningReplay",
    "ToolSchema",
    "capabilities_for",
    "is_text_document",
]


class MediaPlacement(StrEnum):
    """Where media returned by a tool goes so the model can see it."""

    NATIVE = "native"
    """Inside the tool result itself (Anthropic ``tool_result`` content, Responses output list)."""
    NESTED = "nested"
    """Inside ``functionResponse.parts`` (Gemini 3; inline data of `result_media` types only)."""
    SIBLING = "sibling"
    """As standalone parts in a user turn right after the function responses (Gemini 2.x)."""
    USER_MESSAGE = "user_message"
    """A text reference in the tool message, and one user message carrying the media after all
    of that step's tool messages (Chat Completions and its dialects)."""


class IdStyle(StrEnum):
    """How tool-call ids are projected for a target."""

    FREE = "free"
    """Any string up to ``id_max_length`` of ``id_charset`` characters."""
    MISTRAL = "mistral"
    """Exactly nine ASCII letters and digits."""
    KIMI = "kimi"
    """``functions.{name}:{index}``, the index counting calls across the whole transcript."""


class ReasoningReplay(StrEnum):
    """Which signed reasoning a target accepts back."""

    SAME_PROVIDER = "same_provider"
    """Reasoning produced by the same provider family, any model."""
    SAME_MODEL = "same_model"
    """Only reasoning produced by the same model (its signatures are model-bound)."""


class ToolSchema(StrEnum):
    """The schema dialect a target takes for a tool's parameters (`convstore.providers._schema`)."""

    JSON_SCHEMA = "json_schema"
    """JSON Schema as written, with an object root (OpenAI strict mode when the tool asks)."""
    OPENAPI = "openapi"
    """Gemini's OpenAPI 3.0 subset."""


TEXT_DOCUMENT_TYPES: Final = frozenset(
    {
        "text/plain", "text/markdown", "text/x-markdown", "text/csv", "text/tab-separated-values",
        "text/html", "text/xml", "text/css", "text/javascript", "text/x-python",
        "text/x-script.python", "text/x-c", "text/x-c++", "text/x-java", "text/x-java-source",
        "text/x-go", "text/x-rust", "text/x-typescript", "text/x-sh", "text/x-shellscript",
        "text/x-yaml", "text/yaml", "text/x-toml", "text/x-sql", "application/json",
        "application/ld+json", "application/xml", "application/javascript",
        "application/typescript", "application/x-yaml", "application/yaml", "application/toml",
        "application/sql", "application/x-sh", "application/x-python",
    }
)  # fmt: skip
"""Media types sent as decoded text to a target without a native slot for them."""


def is_text_document(media_type: str) -> bool:
    """Whether files of ``media_type`` are text a model can read as a text block."""
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        base in TEXT_DOCUMENT_TYPES
        or base.startswith("text/")
        or base.endswith(("+json", "+xml", "+yaml"))
    )


_IMAGES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_PDF: Final = frozenset({"application/pdf"})
_GEMINI_MEDIA: Final = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/webp",
        "image/heic",
        "image/heif",
        "application/pdf",
        "text/plain",
        "audio/wav",
        "audio/mp3",
        "audio/mpeg",
        "audio/aiff",
        "audio/aac",
        "audio/ogg",
        "audio/flac",
        "video/mp4",
        "video/mpeg",
        "video/quicktime",
        "video/webm",
    }
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """One row: what a target (for models matching ``models``) accepts."""

    target: str
    """Render target name."""
    models: str
    """Model-name pattern this row applies to."""
    family: str
    """Provider family that produces reasoning this target may accept back."""
    tool_result_media: MediaPlacement
    """Where media in tool results go."""
    result_media: frozenset[str]
    """Media types carried inside a tool result (native or nested); others move to a user turn."""
    result_uris: bool
    """Whether an external URI may stand inside a tool result."""
    user_media: frozenset[str]
    """Media types a user message carries inline."""
    uri_media: frozenset[str]
    """Media types that may be sent by external URI (anywhere they are carried)."""
    uri_schemes: frozenset[str]
    """URI schemes the target fetches."""
    id_style: IdStyle
    """Tool-call id projection."""
    id_max_length: int
    """Longest tool-call id (``FREE`` style)."""
    id_charset: str
    """Regex character class of allowed id characters (``FREE`` style)."""
    name_charset: str
    """Regex character class of allowed tool-name characters."""
    name_max_length: int
    """Longest tool name."""
    name_must_start_alpha: bool
    """Whether a tool name must start with a letter or underscore."""
    reasoning_replay: ReasoningReplay
    """Which signed reasoning may be replayed."""
    replays_reasoning: bool
    """Whether the wire format can carry reasoning back at all."""
    reasoning_requires_signature: bool
    """Whether replayed reasoning must carry its signature (unsigned reasoning is not accepted)."""
    assistant_media: frozenset[str]
    """Media types an assistant message may carry (files the model itself produced)."""
    requires_user_first: bool
    """Whether the first non-system message must be a user message."""
    dummy_thought_signature: str | None = None
    """Gemini 3: the documented placeholder signature for calls whose real one is unknown."""
    model_version_suffix: str | None = None
    """Regex of the version suffix that distinguishes a dated snapshot from its alias (removed
    from both names before a same-model comparison)."""
    tool_schema: ToolSchema = ToolSchema.JSON_SCHEMA
    """Schema dialect of tool parameters."""
    strict_tools: bool = False
    """Whether the tools field carries OpenAI's ``strict`` flag (strict tools get a strict
    schema); elsewhere ``strict`` is dropped and noted."""
    chat_reasoning: str | None = None
    """Chat Completions targets: the message field replayed reasoning goes in for this model,
    overriding the dialect's (``"thinking_blocks"``: LiteLLM's field for Claude models)."""
    text_only: bool = False
    """Whether the model reads text only: images, audio and documents become text notes (text
    documents are still sent decoded)."""
    reasoning_leads_message: bool = False
    """Whether replayed reasoning may only open an assistant message (Anthropic): one run of it
    per message, before its other content. Reasoning that follows content which itself followed
    such a run cannot be replayed where it stands, and the reasoning policy applies to it."""

    def same_model(self, a: str | None, b: str | None) -> bool:
        """Whether two model names denote the same model for this target."""
        if a is None or b is None:
            return False
        # "anthropic/claude-sonnet-4-5" (a gateway's name) is the model "claude-sonnet-4-5".
        a, b = a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]
        if self.model_version_suffix is None:
            return a == b
        return re.sub(self.model_version_suffix, "", a) == re.sub(self.model_version_suffix, "", b)

    def inlines(self, media_type: str) -> bool:
        """Whether the target takes bytes of this type anywhere (so a render fetches them)."""
        return (
            media_type in self.result_media
            or media_type in self.user_media
            or media_type in self.assistant_media
        )

    def fetches(self, uri: str, media_type: str) -> bool:
        """Whether the target may be sent ``uri`` (of ``media_type``) to fetch itself."""
        scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
        return scheme in self.uri_schemes and media_type in self.uri_media


# Gemini documents "context_engineering_is_the_way_to_go" (and "skip_thought_signature_validator")
# as signatures that skip validation for history it did not produce; the REST field is bytes, so
# the wire value is its base64. See docs/providers/gemini.md.
_GEMINI_DUMMY_SIGNATURE: Final = "Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv"

# "gemini-2.5-flash-001" is a stable version of "gemini-2.5-flash" (Gemini models page).
_GEMINI_VERSION_SUFFIX: Final = r"-(\d{3}|latest)$"

_OPENAI_CHARS: Final = r"A-Za-z0-9_\-"

_BASE_ROWS: Final[tuple[Capabilities, ...]] = (
    Capabilities(
        target="openai-chat",
        models="*",
        family="openai",
        strict_tools=True,
        tool_result_media=MediaPlacement.USER_MESSAGE,
        result_media=frozenset(),
        result_uris=False,
        user_media=_IMAGES | _PDF | frozenset({"audio/wav", "audio/mpeg", "audio/mp3"}),
        uri_media=_IMAGES,
        uri_schemes=frozenset({"https", "http"}),
        id_style=IdStyle.FREE,
        id_max_length=40,
        id_charset=_OPENAI_CHARS,
        name_charset=_OPENAI_CHARS,
        name_max_length=64,
        name_must_start_alpha=False,
        reasoning_replay=ReasoningReplay.SAME_PROVIDER,
        replays_reasoning=False,
        reasoning_requires_signature=False,
        assistant_media=frozenset(),
        requires_user_first=False,
    ),
    Capabilities(
        target="openai-responses",
        models="*",
        family="openai",
        strict_tools=True,
        tool_result_media=MediaPlacement.NATIVE,
        result_media=_IMAGES | _PDF,
        result_uris=True,
        user_media=_IMAGES | _PDF,
        uri_media=_IMAGES | _PDF,
        # "openai": Files API references, which the parser keeps as openai://files/<id>.
        uri_schemes=frozenset({"https", "http", "openai"}),
        id_style=IdStyle.FREE,
        id_max_length=64,
        id_charset=_OPENAI_CHARS,
        name_charset=_OPENAI_CHARS,
        name_max_length=64,
        name_must_start_alpha=False,
        reasoning_replay=ReasoningReplay.SAME_PROVIDER,
        replays_reasoning=True,
        reasoning_requires_signature=False,
        assistant_media=frozenset(),
        requires_user_first=False,
    ),
    Capabilities(
        target="anthropic",
        models="*",
        family="anthropic",
        tool_result_media=MediaPlacement.NATIVE,
        result_media=_IMAGES | _PDF | frozenset({"text/plain"}),
        result_uris=True,
        user_media=_IMAGES | _PDF | frozenset({"text/plain"}),
        uri_media=_IMAGES | _PDF,
        uri_schemes=frozenset({"https"}),
        id_style=IdStyle.FREE,
        id_max_length=64,
        id_charset=_OPENAI_CHARS,
        name_charset=_OPENAI_CHARS,
        name_max_length=64,
        name_must_start_alpha=False,
        reasoning_replay=ReasoningReplay.SAME_MODEL,
        replays_reasoning=True,
        reasoning_requires_signature=True,
        assistant_media=frozenset(),
        requires_user_first=True,
        # A request names "claude-sonnet-4-0", the response "claude-sonnet-4-20250514": the
        # same model (Anthropic models overview: aliases point to dated snapshots).
        model_version_suffix=r"-(\d{8}|0|latest)$",
        # Responses hold "thinking content blocks, followed by text content blocks", and when
        # they go back "the entire sequence of consecutive thinking blocks must match the
        # outputs generated by the model during the original request; you cannot rearrange or
        # modify the sequence of these blocks" (Building with extended thinking). The API's own
        # error: "If an assistant message contains any thinking blocks, the first block must be
        # thinking or redacted_thinking" (docs/providers/anthropic.md). Interleaved thinking
        # with tools (Claude 4) reasons between tool calls: the thinking that follows a tool
        # result opens the next assistant message, it is not a block after a tool_use.
        reasoning_leads_message=True,
    ),
    Capabilities(
        target="gemini",
        models="gemini-3*",
        family="gemini",
        tool_schema=ToolSchema.OPENAPI,
        tool_result_media=MediaPlacement.NESTED,
        result_media=frozenset(
            {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
        ),
        result_uris=False,
        user_media=_GEMINI_MEDIA,
        uri_media=_GEMINI_MEDIA,
        uri_schemes=frozenset({"gs", "https"}),
        id_style=IdStyle.FREE,
        id_max_length=128,
        id_charset=_OPENAI_CHARS + ".:",
        name_charset=_OPENAI_CHARS + ".:",
        name_max_length=64,
        name_must_start_alpha=True,
        reasoning_replay=ReasoningReplay.SAME_MODEL,
        replays_reasoning=True,
        reasoning_requires_signature=False,
        assistant_media=_GEMINI_MEDIA,
        requires_user_first=True,
        dummy_thought_signature=_GEMINI_DUMMY_SIGNATURE,
        model_version_suffix=_GEMINI_VERSION_SUFFIX,
    ),
    Capabilities(
        target="gemini",
        models="*",
        family="gemini",
        tool_schema=ToolSchema.OPENAPI,
        tool_result_media=MediaPlacement.SIBLING,
        result_media=frozenset(),
        result_uris=False,
        user_media=_GEMINI_MEDIA,
        uri_media=_GEMINI_MEDIA,
        uri_schemes=frozenset({"gs", "https"}),
        id_style=IdStyle.FREE,
        id_max_length=128,
        id_charset=_OPENAI_CHARS + ".:",
        name_charset=_OPENAI_CHARS + ".:",
        name_max_length=64,
        name_must_start_alpha=True,
        reasoning_replay=ReasoningReplay.SAME_MODEL,
        replays_reasoning=True,
        reasoning_requires_signature=False,
        assistant_media=_GEMINI_MEDIA,
        requires_user_first=True,
        model_version_suffix=_GEMINI_VERSION_SUFFIX,
    ),
    Capabilities(
        target="mistral",
        models="*",
        family="mistral",
        strict_tools=True,
        tool_result_media=MediaPlacement.USER_MESSAGE,
        result_media=frozenset(),
        result_uris=False,
        user_media=_IMAGES | _PDF,
        uri_media=_IMAGES | _PDF,
        uri_schemes=frozenset({"https", "http"}),
        id_style=IdStyle.MISTRAL,
        id_max_length=9,
        id_charset="A-Za-z0-9",
        name_charset=_OPENAI_CHARS,
        name_max_length=64,
        name_must_start_alpha=False,
        reasoning_replay=ReasoningReplay.SAME_PROVIDER,
        # Magistral's "thinking" content chunks go back in assistant messages (mistral-common).
        replays_reasoning=True,
        reasoning_requires_signature=False,
        assistant_media=frozenset(),
        requires_user_first=False,
    ),
    Capabilities(
        target="kimi",
        models="*",
        family="kimi",
        tool_result_media=MediaPlacement.USER_MESSAGE,
        result_media=frozenset(),
        result_uris=False,
        user_media=_IMAGES,
        uri_media=_IMAGES,
        uri_schemes=frozenset({"https", "http"}),
        id_style=IdStyle.KIMI,
        id_max_length=256,
        id_charset=_OPENAI_CHARS + ".:",
        name_charset=_OPENAI_CHARS,
        name_max_length=64,
        name_must_start_alpha=False,
        reasoning_replay=ReasoningReplay.SAME_PROVIDER,
        replays_reasoning=True,
        reasoning_requires_signature=False,
        assistant_media=frozenset(),
        requires_user_first=False,
    ),
)

# A Claude model behind a Chat Completions gateway (LiteLLM's proxy and SDK): LiteLLM returns its
# thinking as ``reasoning_content`` plus ``thinking_blocks`` (with signatures) and takes the
# blocks back on assistant messages, which it forwards to Anthropic as thinking blocks; so the
# Anthropic replay rules apply (docs/providers/openai-chat.md).
_CLAUDE_VIA_CHAT: Final = replace(
    next(row for row in _BASE_ROWS if row.target == "openai-chat"),
    models="claude*",
    family="anthropic",
    replays_reasoning=True,
    reasoning_replay=ReasoningReplay.SAME_MODEL,
    reasoning_requires_signature=True,
    model_version_suffix=r"-(\d{8}|0|latest)$",
    reasoning_leads_message=True,
    chat_reasoning="thinking_blocks",
)

# Models that read text only (their providers' model pages list text input alone): images,
# audio and PDFs become text notes; text documents are still sent, decoded.
_TEXT_ONLY: Final = (
    ("openai-chat", "gpt-3.5-turbo*"),
    ("mistral", "codestral*"),
    ("mistral", "open-mistral-nemo*"),
    ("mistral", "mistral-embed*"),
    ("kimi", "kimi-k2-*"),
    ("kimi", "moonshot-v1-8k"),
    ("kimi", "moonshot-v1-32k"),
    ("kimi", "moonshot-v1-128k"),
    ("kimi", "moonshot-v1-auto"),
)


def _text_only(row: Capabilities, models: str) -> Capabilities:
    return replace(
        row,
        models=models,
        text_only=True,
        user_media=frozenset(),
        result_media=frozenset(),
        uri_media=frozenset(),
        assistant_media=frozenset(),
    )


CAPABILITIES: Final[tuple[Capabilities, ...]] = (
    *(
        _text_only(row, models)
        for target, models in _TEXT_ONLY
        for row in _BASE_ROWS
        if row.target == target and row.models == "*"
    ),
    _CLAUDE_VIA_CHAT,
    *_BASE_ROWS,
)

TARGETS: Final = tuple(dict.fromkeys(row.target for row in CAPABILITIES))
"""Every render target, in table order."""


def capabilities_for(target: str, model: str | None = None) -> Capabilities:
    """The row for ``target`` and ``model``; `UnsupportedFormatError` for an unknown target."""
    # Resource-style names ("models/gemini-3-pro", "publishers/google/models/...") match by
    # their last segment.
    name = (model or "").rsplit("/", 1)[-1].lower()
    for row in CAPABILITIES:
        if row.target == target and fnmatch.fnmatchcase(name, row.models):
            return row
    raise UnsupportedFormatError(
        f"unknown render target {target!r}; targets are: {', '.join(TARGETS)}"
    )
