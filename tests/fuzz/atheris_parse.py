"""Coverage-guided fuzzing of `convstore.parse` and `convstore.parse_response` with atheris.

Run by hand from the repository root (it is not collected by pytest)::

    .venv/bin/python tests/fuzz/atheris_parse.py -atheris_runs=100000 -max_len=512
    .venv/bin/python tests/fuzz/atheris_parse.py -max_total_time=300 -timeout=20
    .venv/bin/python tests/fuzz/atheris_parse.py crash-<sha1>     # replay one input

An input's bytes are choices, consumed through a `FuzzedDataProvider`: which source, request or
response, which accepted corpus payload, and which mutations (`tests.fuzz.mutate`: deleted keys,
swapped types, garbled base64 and ``data:`` URLs, hostile Unicode, deep nesting, huge strings,
...). libFuzzer mutates those bytes and keeps the inputs that reach new code in ``convstore``
(instrumented), so the search is structure-aware and coverage-guided at once.

For each input:

1. ``parse`` / ``parse_response`` returns, or raises a `ConvstoreError`;
2. `convstore.message_checks.check_messages` (the checks ``append`` makes) returns or raises a
   `ConvstoreError`;
3. whatever parsed, refused by the limits or not, renders to every target (pure: no store, no
   I/O) as strict JSON, and its versioned JSON form (`dump_messages`) is UTF-8 JSON text that
   loads back equal (`load_messages`).

Anything else is a crash: the mutation log (the reproducer) is printed, and libFuzzer writes the
input to ``crash-<sha1>``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

with atheris.instrument_imports(include=["convstore"]):
    from convstore import parse, parse_response, render
    from convstore.errors import ConvstoreError
    from convstore.message_checks import check_messages
    from convstore.model import dump_messages, load_messages

from tests.fuzz import KINDS, SOURCES, Mutant, mutate, seeds

TARGETS = (
    ("openai-chat", "gpt-5"),
    ("openai-responses", "gpt-5"),
    ("anthropic", "claude-sonnet-4-5"),
    ("gemini", "gemini-3-pro-preview"),
    ("gemini", "gemini-2.5-flash"),
    ("mistral", "mistral-medium-latest"),
    ("kimi", "kimi-k2-thinking"),
)


class _Provider:
    """`tests.fuzz.Chooser` over atheris' `FuzzedDataProvider`."""

    def __init__(self, data: bytes) -> None:
        self.fdp = atheris.FuzzedDataProvider(data)

    def integer(self, low: int, high: int) -> int:
        return int(self.fdp.ConsumeIntInRange(low, high))


def one_input(data: bytes) -> None:
    """Parse, check, render one mutated corpus payload; only `ConvstoreError` may escape."""
    choose = _Provider(data)
    source = SOURCES[choose.integer(0, len(SOURCES) - 1)]
    kind = KINDS[choose.integer(0, len(KINDS) - 1)]
    pool = seeds()[source, kind]
    mutant = mutate(pool[choose.integer(0, len(pool) - 1)], choose)
    try:
        _exercise(mutant)
    except ConvstoreError:
        pass
    except BaseException:
        print(f"\n=== untyped exception; reproducer: {mutant.describe()}", file=sys.stderr)
        raise


def _exercise(mutant: Mutant) -> None:
    seed = mutant.seed
    if seed.kind == "request":
        messages = parse(mutant.payload, seed.source, model=seed.model)
    else:
        messages = [parse_response(mutant.payload, seed.source)]
    with contextlib.suppress(ConvstoreError):  # a refusal is fine; anything else is not
        check_messages(messages)
    for target, model in TARGETS:  # render is pure and public: it must take what parse returns
        json.dumps(render(messages, target, model=model).payload, allow_nan=False)
    text = json.dumps(dump_messages(messages), ensure_ascii=False, allow_nan=False)
    if load_messages(json.loads(text.encode("utf-8"))) != messages:
        raise AssertionError("the versioned JSON form did not load back equal")


def main() -> None:
    """Hand ``sys.argv`` (libFuzzer flags) to atheris and fuzz until it stops."""
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
