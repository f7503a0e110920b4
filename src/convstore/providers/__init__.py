"""One module per provider wire format, and the registry that picks one by name.

Every module offers ``encode(plan) -> dict`` (a render target); the four source formats also
offer ``parse(payload) -> list[Message]`` and ``parse_response(body) -> Message``. Mistral and
Kimi are Chat Completions dialects: their histories parse as ``openai-chat``. Where a format's
module grew past ~600 lines its parser lives beside it (``<name>_parse.py``, re-exported by
``<name>``); mechanics every format shares are the underscore modules: ``_chat`` (the Chat
Completions encoder), ``_encoding``/``_parsing`` (JSON helpers), ``_wire_tools`` and ``_schema``
(the ``tools`` field and its schema dialects), ``_usage`` (token usage of responses).

The formats: ``anthropic`` (parser in ``anthropic_parse``), ``gemini`` (``gemini_parse``),
``openai_chat``, ``openai_responses`` (``openai_responses_parse``), and the Chat Completions
dialects ``mistral`` and ``kimi``; ``_openai`` holds the wire facts OpenAI's two formats share.

Invariants: provider knowledge lives in these modules and in `convstore.capabilities`, nowhere
else; no provider SDK is imported at runtime (these modules read and write plain JSON).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from convstore.errors import UnsupportedFormatError
from convstore.model import Message
from convstore.providers import (
    anthropic,
    gemini,
    kimi,
    mistral,
    openai_chat,
    openai_responses,
)
from convstore.transcript.plan import Plan

__all__ = ["SOURCES", "TARGETS", "Source", "encoder_for", "source_for"]

Encoder = Callable[[Plan], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Source:
    """A wire format convstore can read."""

    parse: Callable[[Mapping[str, Any]], list[Message]]
    parse_response: Callable[[Mapping[str, Any]], Message]


TARGETS: Final[dict[str, Encoder]] = {
    openai_chat.TARGET: openai_chat.encode,
    openai_responses.TARGET: openai_responses.encode,
    anthropic.TARGET: anthropic.encode,
    gemini.TARGET: gemini.encode,
    mistral.TARGET: mistral.encode,
    kimi.TARGET: kimi.encode,
}
"""Render targets and their encoders."""

SOURCES: Final[dict[str, Source]] = {
    "openai-chat": Source(openai_chat.parse, openai_chat.parse_response),
    "openai-responses": Source(openai_responses.parse, openai_responses.parse_response),
    "anthropic": Source(anthropic.parse, anthropic.parse_response),
    "gemini": Source(gemini.parse, gemini.parse_response),
}
"""Formats `convstore.parse` reads."""

_SOURCE_ALIASES: Final = {"mistral": "openai-chat", "kimi": "openai-chat"}


def encoder_for(target: str) -> Encoder:
    """The encoder of ``target``; `UnsupportedFormatError` for an unknown one."""
    try:
        return TARGETS[target]
    except KeyError:
        raise UnsupportedFormatError(
            f"unknown render target {target!r}; targets are: {', '.join(TARGETS)}"
        ) from None


def source_for(source: str) -> Source:
    """The parser of ``source``; `UnsupportedFormatError` for an unknown one."""
    try:
        return SOURCES[_SOURCE_ALIASES.get(source, source)]
    except KeyError:
        raise UnsupportedFormatError(
            f"unknown parse source {source!r}; sources are: {', '.join(SOURCES)} "
            "(mistral and kimi histories parse as openai-chat)"
        ) from None
