"""The cyclic GC is held off while a load decodes its rows, and always given back."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from convstore.db.mapping import decode_messages, decode_tool_calls, gc_paused
from convstore.db.tx import SqliteCodec


@pytest.fixture(autouse=True)
def _gc_enabled() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_restored_after_an_error() -> None:
    with gc_paused:
        assert not gc.isenabled()
        with gc_paused:  # nested (another thread's load): still paused
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused:
        raise RuntimeError("decode failed")
    assert gc.isenabled()


def test_a_collector_the_application_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused:
        pass
    assert not gc.isenabled()


def _rows(seen: list[bool], fail: bool) -> Iterator[Any]:
    seen.append(gc.isenabled())
    yield (1, None, "user", None, None, "2026-01-01 00:00:00.000000", None, None,
           '[{"kind":"text","text":"hi"}]', None, None)  # fmt: skip
    if fail:
        raise RuntimeError("row fetch failed")


def test_decoding_messages_and_calls_runs_with_the_collector_off() -> None:
    seen: list[bool] = []
    (message,) = decode_messages("c", _rows(seen, fail=False), SqliteCodec())
    assert message.text == "hi"
    assert seen == [False] and gc.isenabled()
    with pytest.raises(RuntimeError):
        decode_messages("c", _rows(seen, fail=True), SqliteCodec())
    assert gc.isenabled()

    def calls() -> Iterator[Any]:
        seen.append(gc.isenabled())
        yield from ()

    assert decode_tool_calls(calls(), {}, SqliteCodec()) == []
    assert seen[-1] is False and gc.isenabled()
