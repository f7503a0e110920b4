"""Helpers shared by the openai-chat, mistral and kimi tests.

- the accepted corpus, filtered by API;
- tiny media whose signatures the sniffer recognises;
- plan builders (hand-built `Plan`s, no planner involved);
- wire checks: the official OpenAI SDK types (which validate lazily and ignore unknown keys, so
  every value is materialised and the key sets are checked here too), and key schemas for the
  Mistral and Kimi additions taken from their documentation and Mistral's SDK models.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from convstore.capabilities import capabilities_for
from convstore.transcript.diagnostics import Diagnostics
from convstore.transcript.plan import Call, Plan, Turn
from tests.support.corpus import CORPUS_DIR

CORPUS = CORPUS_DIR

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(24))
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(24))
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(16)
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(16)


@cache
def corpus(*apis: str) -> list[tuple[str, dict[str, Any]]]:
    """(file name, record) of every accepted corpus record of ``apis``, sorted by name."""
    records = []
    for path in sorted(CORPUS.glob("*.json")):
        record = json.loads(path.read_text())
        if record["api"] in apis:
            records.append((path.name, record))
    return records


def plan(
    target: str,
    turns: list[Turn],
    *,
    model: str | None = None,
    system: list[str] | None = None,
) -> Plan:
    """A hand-built plan for ``target``."""
    return Plan(
        target=target,
        model=model,
        capabilities=capabilities_for(target, model),
        diagnostics=Diagnostics(target=target, model=model),
        system=system or [],
        turns=turns,
    )


def call(
    wire_id: str, name: str = "get_file", arguments: dict[str, Any] | None = None, **extra: Any
) -> Call:
    """A projected call whose canonical id is ``c-{wire_id}``."""
    return Call(
        call_id=f"c-{wire_id}",
        wire_id=wire_id,
        name=name,
        wire_name=name,
        arguments=arguments or {},
        **extra,
    )


# -- wire checks -----------------------------------------------------------------------------

_OPENAI_MESSAGE: TypeAdapter[Any] = TypeAdapter(ChatCompletionMessageParam)


def materialise(value: Any) -> Any:
    """``value`` with every lazily validated iterable turned into a list (validating it)."""
    if isinstance(value, Mapping):
        return {key: materialise(item) for key, item in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Iterable | Iterator):
        return [materialise(item) for item in value]
    return value


def validate_openai(message: dict[str, Any]) -> dict[str, Any]:
    """Validate ``message`` against ``openai.types.chat.ChatCompletionMessageParam``."""
    validated = materialise(_OPENAI_MESSAGE.validate_python(message))
    assert isinstance(validated, dict)
    return validated


@dataclass(frozen=True)
class Shape:
    """The keys a JSON object may and must have, and shapes for nested values."""

    required: frozenset[str]
    optional: frozenset[str] = frozenset()
    nested: dict[str, Any] = field(default_factory=dict)
    """key -> `Shape`, a list of one `Shape`/`PartShapes` (each item), or `PartShapes`."""


@dataclass(frozen=True)
class PartShapes:
    """Content parts discriminated by ``type``; a plain string is allowed when ``string``."""

    by_type: dict[str, Shape]
    string: bool = False


def shape(required: Iterable[str], optional: Iterable[str] = (), **nested: Any) -> Shape:
    """Shorthand for `Shape`."""
    return Shape(frozenset(required), frozenset(optional), nested)


def check(value: Any, spec: Any, path: str = "$") -> None:
    """Assert that ``value`` has exactly the keys ``spec`` allows, recursively."""
    match spec:
        case Shape():
            assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
            keys = set(value)
            missing = spec.required - keys
            extra = keys - spec.required - spec.optional
            assert not missing, f"{path}: missing keys {sorted(missing)}"
            assert not extra, f"{path}: unexpected keys {sorted(extra)}"
            for key, sub in spec.nested.items():
                if key in value and value[key] is not None:
                    check(value[key], sub, f"{path}.{key}")
        case PartShapes():
            if isinstance(value, str):
                assert spec.string, f"{path}: a string is not allowed here"
                return
            assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
            for index, item in enumerate(value):
                part_type = item.get("type")
                assert part_type in spec.by_type, f"{path}[{index}]: type {part_type!r}"
                check(item, spec.by_type[part_type], f"{path}[{index}]")
        case [item_spec]:
            assert isinstance(value, list), f"{path}: expected a list"
            for index, item in enumerate(value):
                check(item, item_spec, f"{path}[{index}]")
        case None:
            pass
        case _:
            raise AssertionError(f"bad spec {spec!r}")


TEXT = shape(["type", "text"])
IMAGE_URL = shape(["type", "image_url"], image_url=shape(["url"], ["detail"]))
OPENAI_FILE = shape(["type", "file"], file=shape(["filename"], ["file_data", "file_id"]))
INPUT_AUDIO = shape(["type", "input_audio"], input_audio=shape(["data", "format"]))
TOOL_CALL = shape(["id", "type", "function"], function=shape(["name", "arguments"]))


def chat_message_shapes(
    *,
    user_parts: dict[str, Shape],
    assistant_content: Any,
    assistant_extra: Iterable[str] = (),
    tool_extra: Iterable[str] = (),
    tool_call: Shape = TOOL_CALL,
) -> dict[str, Shape]:
    """Shapes of each role's message for one dialect."""
    return {
        "system": shape(["role", "content"], content=PartShapes({"text": TEXT}, string=True)),
        "user": shape(["role", "content"], content=PartShapes(user_parts, string=True)),
        "assistant": shape(
            ["role", "content"],
            ["tool_calls", *assistant_extra],
            content=assistant_content,
            tool_calls=[tool_call],
        ),
        "tool": shape(["role", "tool_call_id", "content"], tool_extra),
    }


def check_messages(messages: list[dict[str, Any]], shapes: dict[str, Shape]) -> None:
    """Assert every message has its role's shape."""
    for index, message in enumerate(messages):
        role = message.get("role")
        assert role in shapes, f"messages[{index}]: role {role!r}"
        check(message, shapes[role], f"messages[{index}]")
        if role == "tool":
            assert isinstance(message["content"], str), "tool content is a string"


# -- golden payloads ---------------------------------------------------------------------------

GOLDEN = Path(__file__).parent.parent / "golden"


def assert_golden(target: str, case: str, actual: dict[str, Any]) -> None:
    """Compare ``actual`` with ``golden/<target>/<case>.json``.

    ``CONVSTORE_UPDATE_GOLDEN=1`` rewrites the file first (read the diff before committing).
    """
    path = GOLDEN / target / f"{case}.json"
    if os.environ.get("CONVSTORE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert json.loads(path.read_text()) == json.loads(json.dumps(actual))
