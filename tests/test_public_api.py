"""The public API is what ``tests/public_api.txt`` says, so every change to it is deliberate.

Covered: every name in ``convstore.__all__`` (a function's signature; a class's constructor,
public methods and properties; an enum's members; an exception's bases), every public method of
`ConversationStore` and of the blocking `convstore.sync.SyncConversationStore`, and the
command line (every command and subcommand with its options).

After an intended change (a new store method, a new CLI option), rewrite the snapshot and
review its diff with the change:

    CONVSTORE_UPDATE_API_SNAPSHOT=1 .venv/bin/pytest tests/test_public_api.py
"""

from __future__ import annotations

import argparse
import enum
import inspect
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convstore
from convstore.cli.main import build_parser
from convstore.sync import SyncConversationStore

SNAPSHOT = Path(__file__).with_name("public_api.txt")


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(?)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # a default's repr holds its address


def _members(cls: type, *, inherited: bool = False) -> Iterator[str]:
    # ``inherited``: a plain class assembled from convstore's own bases (ConversationStore is)
    # shows what it inherits from them.
    namespace: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is cls or (inherited and klass.__module__.startswith("convstore.")):
            namespace.update(vars(klass))
    for name, member in sorted(namespace.items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, property):
            yield f"    {name}: property"
        elif isinstance(member, classmethod | staticmethod):
            yield f"    {name}{_signature(getattr(cls, name))}  [{type(member).__name__}]"
        elif inspect.isfunction(member) or callable(member):
            yield f"    {name}{_signature(getattr(cls, name))}"


def _describe(name: str, obj: Any) -> Iterator[str]:
    if isinstance(obj, type) and issubclass(obj, BaseException):
        yield f"exception {name}({', '.join(b.__name__ for b in obj.__bases__)})"
    elif isinstance(obj, type) and issubclass(obj, enum.Enum):
        yield f"enum {name}: {', '.join(f'{m.name}={m.value!r}' for m in obj)}"
    elif isinstance(obj, type) and hasattr(obj, "model_fields"):
        yield f"model {name}{_signature(obj)}"
        yield from (line for line in _members(obj) if "__init__" not in line)
    elif isinstance(obj, type):
        yield f"class {name}"
        yield from _members(obj, inherited=True)
    elif callable(obj):
        yield f"function {name}{_signature(obj)}"
    else:
        yield f"value {name}: {type(obj).__name__}"


def _cli(parser: argparse.ArgumentParser, prefix: str) -> Iterator[str]:
    options = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in sorted(action.choices.items()):
                yield from _cli(sub, f"{prefix} {command}")
        elif not isinstance(action, argparse._HelpAction):
            flags = "/".join(action.option_strings) or action.dest
            default = "" if action.default in (None, argparse.SUPPRESS) else f"={action.default!r}"
            choices = f" {sorted(map(str, action.choices))}" if action.choices else ""
            options.append(f"{flags}{default}{choices}")
    yield f"cli {prefix}: {', '.join(options)}"


def current() -> str:
    lines = [f"# {SNAPSHOT.name}: written by tests/test_public_api.py; see its docstring."]
    for name in sorted(convstore.__all__):
        if name == "__version__":
            continue
        lines.extend(_describe(name, getattr(convstore, name)))
    # The optional extras' entry points (CONTRACT.md), each needing its extra installed.
    from convstore.mcp import create_server

    lines.append(f"function convstore.mcp.create_server{_signature(create_server)}")
    lines.append("class convstore.sync.SyncConversationStore")
    lines.extend(_members(SyncConversationStore))
    lines.extend(_cli(build_parser(), "convstore"))
    return "\n".join(lines) + "\n"


def test_the_public_api_matches_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVSTORE_URL", "CONVSTORE_BLOBS", "CONVSTORE_TOKEN"):  # CLI defaults
        monkeypatch.delenv(variable, raising=False)
    text = current()
    if os.environ.get("CONVSTORE_UPDATE_API_SNAPSHOT") == "1":
        SNAPSHOT.write_text(text)
    expected = SNAPSHOT.read_text()
    assert text == expected, (
        "the public API changed; if intended, run "
        "CONVSTORE_UPDATE_API_SNAPSHOT=1 .venv/bin/pytest tests/test_public_api.py "
        "and commit tests/public_api.txt"
    )
