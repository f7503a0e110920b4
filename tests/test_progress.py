"""The progress reporter: plain lines off a terminal, tqdm bars on one."""

from __future__ import annotations

import io

import pytest

from convstore.progress import ProgressReporter


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_are_throttled_and_end_with_the_last_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([0.0, 0.1, 0.2, 0.3, 0.9, 1.0, 1.1, 1.2])
    monkeypatch.setattr("convstore.progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    with ProgressReporter(out) as progress:
        for done in (1, 2, 3, 4, 5, 6):  # 0.0 prints; 0.1-0.3 are held; 0.9 prints
            progress("scanning blobs", done, None)
        progress("deleting blobs", 7, 7)  # a total reached always prints
    assert out.getvalue().splitlines() == [
        "  scanning blobs: 1",
        "  scanning blobs: 5",
        "  deleting blobs: 7 of 7",
        "  scanning blobs: 6",  # held back by the throttle, printed on close
    ]


def test_a_terminal_gets_one_bar_per_stage() -> None:
    out = _Terminal()
    with ProgressReporter(out) as progress:
        for done in range(0, 1001, 250):
            progress("exporting conversations", done, 1000)
        progress("writing blobs", 3, None)
        progress("exporting conversations", 1000, 1000)
    text = out.getvalue()
    assert "exporting conversations: 100%" in text
    assert "1000/1000" in text
    assert "writing blobs: 3" in text
    assert "\r" in text  # redrawn in place, not one line per update


def test_plain_lines_when_asked_on_a_terminal() -> None:
    out = _Terminal()
    with ProgressReporter(out, bar=False) as progress:
        progress("verifying blobs", 2, 2)
    assert out.getvalue() == "  verifying blobs: 2 of 2\n"
