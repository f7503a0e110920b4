"""Token usage of a response body, per wire format, as one `Usage`.

``Usage.input_tokens`` counts every prompt token (cached ones included) and ``output_tokens``
every generated one (reasoning included), whatever the provider's own split:

- Chat Completions (OpenAI, Mistral, Kimi): ``usage.prompt_tokens`` / ``completion_tokens``,
  ``prompt_tokens_details.cached_tokens`` (Kimi: ``usage.cached_tokens``),
  ``completion_tokens_details.reasoning_tokens``.
- Responses: ``usage.input_tokens`` / ``output_tokens``, ``input_tokens_details.cached_tokens``,
  ``output_tokens_details.reasoning_tokens``.
- Anthropic: ``usage.input_tokens`` excludes cache reads and writes, so they are added;
  ``cache_read_input_tokens`` are the cached ones.
- Gemini: ``usageMetadata.promptTokenCount`` (+ ``toolUsePromptTokenCount``);
  ``candidatesTokenCount`` excludes ``thoughtsTokenCount``, so they are added.

Invariant: a body without usage gives ``None``; a count that is not a non-negative integer is
malformed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from convstore.model import Message, Usage
from convstore.providers._parsing import Json, root_object

__all__ = ["read_usage", "with_usage"]


def _count(node: Json | None, *path: str) -> int:
    for key in path:
        if node is None:
            return 0
        node = node.get(key)
    if node is None:
        return 0
    value = node.value
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise node.fail(f"a token count must be a non-negative integer, got {value!r}")
    return value


def _chat(root: Json) -> Usage | None:
    usage = root.get("usage")
    if usage is None:
        return None
    cached = _count(usage, "prompt_tokens_details", "cached_tokens") or _count(
        usage, "cached_tokens"
    )
    return Usage(
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
        cached_tokens=cached,
        reasoning_tokens=_count(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def _responses(root: Json) -> Usage | None:
    usage = root.get("usage")
    if usage is None:
        return None
    return Usage(
        input_tokens=_count(usage, "input_tokens"),
        output_tokens=_count(usage, "output_tokens"),
        cached_tokens=_count(usage, "input_tokens_details", "cached_tokens"),
        reasoning_tokens=_count(usage, "output_tokens_details", "reasoning_tokens"),
    )


def _anthropic(root: Json) -> Usage | None:
    usage = root.get("usage")
    if usage is None:
        return None
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    return Usage(
        input_tokens=_count(usage, "input_tokens") + read + written,
        output_tokens=_count(usage, "output_tokens"),
        cached_tokens=read,
    )


def _gemini(root: Json) -> Usage | None:
    usage = root.get("usageMetadata", "usage_metadata")
    if usage is None:
        return None

    def count(name: str) -> int:
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
        return _count(usage, name) or _count(usage, snake)

    thoughts = count("thoughtsTokenCount")
    return Usage(
        input_tokens=count("promptTokenCount") + count("toolUsePromptTokenCount"),
        output_tokens=count("candidatesTokenCount") + thoughts,
        cached_tokens=count("cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


_READERS: Final[dict[str, Callable[[Json], Usage | None]]] = {
    "openai-chat": _chat,
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


def read_usage(body: Json, source: str) -> Usage | None:
    """The usage a response body reports (``source`` is a parse source, not an alias)."""
    return _READERS[source](body)


def with_usage(message: Message, body: Mapping[str, Any], source: str) -> Message:
    """``message`` with the usage ``body`` reports (unchanged when it reports none)."""
    usage = read_usage(root_object(body, source), source)
    return message if usage is None else message.model_copy(update={"usage": usage})
