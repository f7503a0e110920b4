"""Hypothesis strategies for canonical conversations, valid and realistically messy.

`histories()` draws what applications really store: calls with and without results, results
whose call is missing, repeated results, interleaved user turns, provider switches with
signed reasoning, files inline, by reference and by URI inside messages and tool results.
"""

from __future__ import annotations

import base64
import string
from typing import Any

from hypothesis import strategies as st

from convstore import (
    ContentOutput,
    ErrorOutput,
    FilePart,
    JsonOutput,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

# Text the databases can hold: no NUL, no lone surrogates.
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=40,
)
NON_BLANK = TEXT.filter(lambda t: t.strip() != "")

PNG = b"\x89PNG\r\n\x1a\n"
JPEG = b"\xff\xd8\xff\xe0"
PDF = b"%PDF-1.7\n"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=8,
)


@st.composite
def files(draw: st.DrawFn) -> FilePart:
    """An inline image or PDF (random tail bytes) or an external URI."""
    kind = draw(st.sampled_from(["png", "jpeg", "pdf", "uri"]))
    if kind == "uri":
        name = draw(st.text(string.ascii_lowercase, min_size=1, max_size=8))
        ext = draw(st.sampled_from(["png", "pdf", "jpg"]))
        scheme = draw(st.sampled_from(["https://example.com/", "gs://bucket/"]))
        return FilePart.from_uri(f"{scheme}{name}.{ext}")
    head = {"png": PNG, "jpeg": JPEG, "pdf": PDF}[kind]
    tail = draw(st.binary(min_size=0, max_size=48))
    filename = draw(st.none() | st.just(f"file.{kind}"))
    return FilePart.from_bytes(head + tail, filename=filename)


outputs = st.one_of(
    json_values.map(lambda v: JsonOutput(value=v)),
    TEXT.map(lambda m: ErrorOutput(message=m)),
    st.lists(TEXT.map(lambda t: TextPart(text=t)) | files(), min_size=0, max_size=3).map(
        lambda parts: ContentOutput(parts=parts)
    ),
)

PROVIDERS = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-flash"),
    ("kimi", "kimi-k2-thinking"),
    (None, None),
]


@st.composite
def thinking(draw: st.DrawFn, provider: str | None, model: str | None, index: int) -> ThinkingPart:
    """Reasoning with the artefacts its provider hands out."""
    text = draw(TEXT)
    # Unique by construction and base64 like real signatures, so a leak names its part.
    secret = base64.b64encode(f"{provider}|{model}|{index}".encode()).decode()
    match provider:
        case "anthropic":
            if draw(st.booleans()):
                return ThinkingPart(
                    text=text, provider=provider, model=model, signature="sig" + text[:4]
                )
            return ThinkingPart(provider=provider, model=model, redacted_data=secret)
        case "openai":
            return ThinkingPart(
                text=text, provider=provider, model=model, reasoning_id=f"rs_{secret[:8]}",
                encrypted_content=secret, summary=[text],
            )  # fmt: skip
        case "gemini":
            return ThinkingPart(text=text, provider=provider, model=model, signature=secret)
        case _:
            return ThinkingPart(text=text, provider=provider, model=model)


@st.composite
def histories(draw: st.DrawFn, max_turns: int = 6) -> list[Message]:
    """A stored history: turns of user text/files, assistant reasoning/text/calls and results.

    Call ids are unique (the store requires it); results may be missing, duplicated (with an
    equal output, as a retry stores it), delayed past a user turn, or answer no call at all.
    """
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message.system(draw(NON_BLANK)))
    counter = 0
    for _ in range(draw(st.integers(min_value=1, max_value=max_turns))):
        user_parts: list[Any] = [draw(TEXT)]
        if draw(st.integers(0, 4)) == 0:
            user_parts.append(draw(files()))
        messages.append(Message.user(*user_parts))
        provider, model = draw(st.sampled_from(PROVIDERS))
        parts: list[Any] = []
        if draw(st.booleans()):
            parts.append(draw(thinking(provider, model, len(messages))))
        if draw(st.booleans()):
            parts.append(TextPart(text=draw(TEXT)))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            counter += 1
            name = draw(st.sampled_from(["search", "read.file", "get-weather", "x" * 70]))
            call_id = draw(
                st.sampled_from(
                    [f"call_{counter}", f"functions.{name}:{counter}", "i" * 80 + str(counter)]
                )
            )
            calls.append(
                ToolCallPart(
                    id=call_id,
                    name=name,
                    arguments=draw(st.dictionaries(TEXT, json_values, max_size=2)),
                )
            )
        if not parts and not calls:
            parts.append(TextPart(text=draw(NON_BLANK)))
        messages.append(
            Message(role=Role.ASSISTANT, provider=provider, model=model, parts=parts + calls)
        )
        delayed: list[Message] = []
        for call in calls:
            fate = draw(st.sampled_from(["answered", "answered", "missing", "duplicated", "late"]))
            if fate == "missing":
                continue
            result = Message(
                role=Role.TOOL,
                parts=[ToolResultPart(call_id=call.id, name=call.name, output=draw(outputs))],
            )
            if fate == "late":
                delayed.append(result)
                continue
            messages.append(result)
            if fate == "duplicated":
                messages.append(result)
        if draw(st.integers(0, 5)) == 0:
            messages.append(Message.tool_result(f"orphan_{counter}", draw(json_values)))
        if delayed:
            messages.append(Message.user(draw(TEXT)))
            messages.extend(delayed)
    return messages
