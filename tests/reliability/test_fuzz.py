"""Bad input: real payloads mutated at random never raise anything but a `ConvstoreError`.

For every source and for both directions (``parse`` on requests, ``parse_response`` on
responses), hypothesis drives the corpus-seeded mutator of `tests.fuzz` (deleted keys, swapped
value types, truncated and garbled strings and base64 and ``data:`` URLs, duplicated and
reordered items, NUL / lone surrogates / bidi marks, nesting up to 1,500 levels, strings up to
1.2 MB, spliced subtrees, format vocabulary, renamed keys, extreme numbers) over
`PAYLOADS_PER_RUN` payloads, derandomised so the run and its figures are the same every time,
and counts them: the test asserts the count it ran.

- parse: returns, or raises a `ConvstoreError`; what it returns has a stable JSON form
  (`dump_messages`) that is UTF-8 JSON text and loads back equal;
- every `STORE_EVERY`-th payload that parsed: `convstore.message_checks.check_messages`
  returns or raises a `ConvstoreError`, ``append`` to a real SQLite store (blobs in
  ``memory://``) stores it or raises a `ConvstoreError`, and whatever was stored renders to every
  target (both Gemini generations) as strict JSON.

The per-provider suites in ``tests/providers`` mutate a few payloads of their own format and
call their own module; this suite is the cross-source one, through the public API, the store
and every renderer. The regressions at the end are the minimal reproducers of what it found.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from convstore import ConversationStore, Message, parse, parse_response, render
from convstore.errors import ConvstoreError, MalformedPayloadError
from convstore.limits import MAX_JSON_DEPTH
from convstore.message_checks import check_messages
from convstore.model import ToolCallPart, dump_messages, load_messages
from tests.fuzz import KINDS, OPERATIONS, SOURCES, Mutant, RandomChooser, mutate, seeds
from tests.providers.conversations import TARGET_MODELS

PAYLOADS_PER_RUN = 2000
"""Mutated payloads per (source, direction): the acceptance figure is at least 2,000 each."""
STORE_EVERY = 20
"""Every this-many-th payload that parsed is also checked, stored and rendered."""
BATCH = 10
"""Mutated payloads per hypothesis example."""

_OPERATION = re.compile(r"^(\w+) ")


@dataclass
class Tally:
    """What one fuzz run did: the figures docs/reliability.md reports."""

    source: str
    kind: str
    tried: int = 0
    parsed: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    operations: Counter[str] = field(default_factory=Counter)
    sampled: list[tuple[Mutant, list[Message]]] = field(default_factory=list)
    limit_refused: Counter[str] = field(default_factory=Counter)
    store_refused: Counter[str] = field(default_factory=Counter)
    stored: int = 0
    renders: int = 0
    render_refused: Counter[str] = field(default_factory=Counter)


def _parse(mutant: Mutant) -> list[Message]:
    seed = mutant.seed
    if seed.kind == "request":
        return parse(mutant.payload, seed.source, model=seed.model)
    return [parse_response(mutant.payload, seed.source)]


def fuzz_parse(source: str, kind: str, *, payloads: int = PAYLOADS_PER_RUN) -> Tally:
    """Run ``payloads`` mutated payloads of ``source``/``kind`` through parse; the tally.

    Hypothesis draws one integer per batch of `BATCH` payloads and the mutator's choices come
    from a `random.Random` it seeds: a hypothesis draw per choice costs more than the parse it
    feeds. A failure is reported with the failing mutant's log (the reproducer) and shrunk to
    the smallest failing seed.
    """
    tally = Tally(source, kind)
    pool = seeds()[source, kind]

    @settings(
        max_examples=-(-payloads // BATCH),
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.integers(0, 2**32 - 1))
    def batch(seed: int) -> None:
        choose = RandomChooser(seed)
        for _ in range(BATCH):
            mutant = mutate(pool[choose.integer(0, len(pool) - 1)], choose)
            tally.tried += 1
            tally.operations.update(_operations(mutant))
            try:
                messages = _parse(mutant)
            except ConvstoreError as exc:
                tally.refused[type(exc).__name__] += 1
                continue
            except Exception:
                note(f"reproducer: {mutant.describe()}")
                raise
            try:
                _versioned_round_trip(messages)
            except Exception:
                note(f"reproducer: {mutant.describe()}")
                raise
            tally.parsed += 1
            if tally.parsed % STORE_EVERY == 0:
                tally.sampled.append((mutant, messages))

    batch()
    return tally


def _versioned_round_trip(messages: list[Message]) -> None:
    """The stable JSON form of what parsed is UTF-8 JSON text and loads back equal."""
    text = json.dumps(dump_messages(messages), ensure_ascii=False, allow_nan=False)
    assert load_messages(json.loads(text.encode("utf-8"))) == messages


def _operations(mutant: Mutant) -> set[str]:
    return {m.group(1) for line in mutant.log if (m := _OPERATION.match(line))}


async def store_and_render(tally: Tally, store: ConversationStore) -> None:
    """Check, append and render every sampled survivor of ``tally``."""
    for mutant, messages in tally.sampled:
        reproducer = mutant.describe()
        try:
            check_messages(messages)
        except ConvstoreError as exc:
            tally.limit_refused[type(exc).__name__] += 1
        except Exception as exc:
            raise AssertionError(f"check_messages raised {exc!r}; {reproducer}") from exc
        conversation = await store.create_conversation(title=mutant.seed.name)
        try:
            await store.append(conversation.id, messages, on_conflict="keep-first")
        except ConvstoreError as exc:
            tally.store_refused[type(exc).__name__] += 1
            continue
        except Exception as exc:
            raise AssertionError(f"append raised {exc!r}; {reproducer}") from exc
        tally.stored += 1
        for target, model in TARGET_MODELS:
            try:
                rendered = await store.render(conversation.id, target, model=model)
                json.dumps(rendered.payload, allow_nan=False)
            except ConvstoreError as exc:
                tally.render_refused[f"{target}: {type(exc).__name__}"] += 1
                continue
            except Exception as exc:
                raise AssertionError(f"render to {target} raised {exc!r}; {reproducer}") from exc
            tally.renders += 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("source", SOURCES)
async def test_mutated_payloads_raise_only_convstore_errors(
    source: str, kind: str, tmp_path: Path
) -> None:
    tally = fuzz_parse(source, kind)

    # The figure is proven, not assumed: this many mutated payloads went through parse.
    assert tally.tried >= PAYLOADS_PER_RUN
    assert tally.parsed + sum(tally.refused.values()) == tally.tried
    # Both outcomes are exercised, so the run is neither all-refused nor all-trivial.
    assert tally.parsed >= PAYLOADS_PER_RUN // 10, tally
    assert sum(tally.refused.values()) >= PAYLOADS_PER_RUN // 10, tally
    # Every kind of mutation ran (``encoding`` needs base64 or a data: URL in the seed).
    assert set(OPERATIONS) - {"encoding"} <= set(tally.operations), tally.operations

    url = f"sqlite+aiosqlite:///{tmp_path / 'fuzz.db'}"
    async with ConversationStore(url, blobs=f"memory://fuzz-{uuid.uuid4().hex}") as store:
        await store_and_render(tally, store)
    assert len(tally.sampled) >= PAYLOADS_PER_RUN // (10 * STORE_EVERY)
    assert tally.stored >= len(tally.sampled) // 2, tally.store_refused
    assert tally.renders + sum(tally.render_refused.values()) == tally.stored * len(TARGET_MODELS)


# --------------------------------------------------------------------------------------------
# Regressions: minimal reproducers of what the fuzzers found (fixed in providers/_parsing.py
# and parsing.py).
# --------------------------------------------------------------------------------------------


def _chat_call(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"messages": [{"role": "assistant", "content": None, "tool_calls": [call]}]}


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 300, 100_000])
def test_arguments_text_nested_too_deep_is_kept_verbatim(depth: int) -> None:
    # Was: json.loads raised RecursionError out of parse from ~1,000 levels, and 255 to ~1,000
    # levels were refused by the model, so one history imported or not depending on the stack.
    arguments = '{"a":' + "[" * depth + "]" * depth + "}"
    (message,) = parse(_chat_call(arguments), "openai-chat")
    (call,) = message.parts
    assert isinstance(call, ToolCallPart)
    assert call.arguments == {}
    assert call.raw_arguments == arguments


def test_arguments_text_within_the_depth_limit_is_decoded() -> None:
    depth = MAX_JSON_DEPTH - 1
    arguments = '{"a":' + "[" * depth + "]" * depth + "}"
    (message,) = parse(_chat_call(arguments), "openai-chat")
    assert message.tool_calls[0].arguments["a"] == json.loads(arguments)["a"]
    assert message.tool_calls[0].raw_arguments is None


_LONE_SURROGATE_PAYLOADS = [
    ("openai-chat", {"messages": [{"role": "user", "content": "a\ud800b"}]}),
    ("openai-responses", {"input": [{"role": "user", "content": "\udfff"}]}),
    (
        "anthropic",
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "\ud800"}]}]},
    ),
    ("gemini", {"contents": [{"role": "user", "parts": [{"text": "x\udc00"}]}]}),
    # in an object key, inside tool arguments the parser keeps as an object
    (
        "anthropic",
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "f", "input": {"\ud800": 1}}
                    ],
                }
            ]
        },
    ),
]


@pytest.mark.parametrize(("source", "payload"), _LONE_SURROGATE_PAYLOADS)
def test_lone_surrogates_are_malformed(source: str, payload: dict[str, Any]) -> None:
    # Was: parsed, then append raised UnicodeEncodeError (text columns) or
    # PydanticSerializationError (JSON columns): no database can store them as UTF-8.
    with pytest.raises(MalformedPayloadError, match="lone surrogate"):
        parse(payload, source)


def test_lone_surrogate_in_a_response_is_malformed() -> None:
    body = {"id": "r\ud800", "choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    with pytest.raises(MalformedPayloadError, match=r"\$\.id: .*lone surrogate"):
        parse_response(body, "openai-chat")


def test_a_surrogate_pair_is_one_character_and_fine() -> None:
    (message,) = parse(
        json.loads('{"messages":[{"role":"user","content":"\\ud83d\\ude00"}]}'), "openai-chat"
    )
    assert message.text == "\U0001f600"


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_malformed(number: float) -> None:
    # Was: a Gemini function response holding Infinity (json.loads accepts it) parsed and
    # rendered to Gemini as a payload that is not JSON (json.dumps(allow_nan=False) fails).
    payload = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"id": "c", "name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c", "name": "f", "response": {"x": number}}}
                ],
            },
        ]
    }
    with pytest.raises(MalformedPayloadError, match="not a JSON number"):
        parse(payload, "gemini")


def test_whatever_parses_from_the_corpus_still_renders_as_strict_json() -> None:
    """The parse-level fixes refuse nothing the providers accepted."""
    for (_, kind), pool in seeds().items():
        for seed in pool:
            messages = _parse(Mutant(seed, seed.payload))
            _versioned_round_trip(messages)
            if kind == "request":
                for target, model in TARGET_MODELS:
                    json.dumps(render(messages, target, model=model).payload, allow_nan=False)


def test_the_mutators_kept_node_list_is_the_payloads_walk() -> None:
    """`tests.fuzz` walks only what an operation changed: the result equals a walk anew."""
    from tests.fuzz import _Mutation, _nodes

    applied: Counter[str] = Counter()
    real_apply = _Mutation.apply

    def apply(run: _Mutation, op: str) -> None:
        real_apply(run, op)
        fresh = list(_nodes(run.mutant.payload))
        assert [(p, k) for p, k, _ in run.walk] == [(p, k) for p, k, _ in fresh], run.mutant.log
        assert all(a[2] is b[2] for a, b in zip(run.walk, fresh, strict=True)), run.mutant.log
        applied[op] += 1

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_Mutation, "apply", apply)
        for pool in seeds().values():
            for i in range(40):
                choose = RandomChooser(i)
                mutate(pool[choose.integer(0, len(pool) - 1)], choose)
    assert set(applied) == set(OPERATIONS), applied


async def _print_figures() -> None:
    """The table of docs/reliability.md ("Bad input: fuzzing"), from the same runs as CI."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for source in SOURCES:
            for kind in KINDS:
                tally = fuzz_parse(source, kind)
                url = f"sqlite+aiosqlite:///{tmp}/{source}-{kind}.db"
                async with ConversationStore(url, blobs=f"memory://{uuid.uuid4().hex}") as store:
                    await store_and_render(tally, store)
                direction = "parse" if kind == "request" else "parse_response"
                malformed, invalid = (
                    tally.refused[k] for k in ("MalformedPayloadError", "InvalidMessageError")
                )
                refused = f"{malformed:,} / {invalid}"
                print(
                    f"| {source} | `{direction}` | {tally.tried:,} | {tally.parsed:,} | {refused} "
                    f"| {tally.stored} of {len(tally.sampled)} | {tally.renders} | 0 |"
                )


if __name__ == "__main__":  # .venv/bin/python -m tests.reliability.test_fuzz
    import asyncio

    asyncio.run(_print_figures())
