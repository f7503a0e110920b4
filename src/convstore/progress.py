"""Progress on long work: a bar on a terminal, plain lines otherwise.

Long operations (garbage collection, fsck, export, erase, prune, imports) take a `Progress`
callback, ``progress(stage, done, total)``, and call it as work advances; the library itself
never prints. ``stage`` names what is being counted ("scanning blobs", "exporting
conversations"), ``total`` is ``None`` while unknown.

`ProgressReporter` is the one callback the command line hands them. On a terminal it draws a
`tqdm` bar per stage; elsewhere (a log file, a pipe, CI) it writes one plain line per stage at
most every `ProgressReporter.interval` seconds and always the last count, so logs stay
readable and a large job still shows it is moving. `tqdm` is imported only when a bar is drawn.

Invariants: a reporter only writes to its stream; each stage has one bar (or one throttled
line) however often stages alternate; `ProgressReporter.close` (or leaving the ``with`` block)
closes the bars and prints any stage's last count a throttled line held back.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

__all__ = ["Progress", "ProgressReporter", "silent"]

Progress = Callable[[str, int, int | None], None]
"""``progress(stage, done, total)``: called as work advances (``total`` when known)."""


def silent(stage: str, done: int, total: int | None) -> None:
    """The default progress: report nothing."""


class ProgressReporter:
    """A `Progress` callback for people: a bar on a terminal, throttled plain lines otherwise."""

    interval = 0.5
    """Seconds between two plain lines of the same stage (the last count always prints)."""

    def __init__(self, stream: TextIO | None = None, *, bar: bool | None = None) -> None:
        """Report on ``stream`` (standard error by default).

        ``bar``: draw bars (``True``) or plain lines (``False``); by default bars exactly when
        the stream is a terminal.
        """
        self._stream = stream if stream is not None else sys.stderr
        self._bars_wanted = _is_terminal(self._stream) if bar is None else bar
        self._bars: dict[str, tqdm[Any]] = {}
        self._lines: dict[str, _Line] = {}

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        """Report that ``done`` of ``total`` (``None``: unknown) items of ``stage`` are done."""
        if self._bars_wanted:
            self._draw(stage, done, total)
        else:
            self._line(stage, done, total)

    def _draw(self, stage: str, done: int, total: int | None) -> None:
        bar = self._bars.get(stage)
        if bar is None:
            from tqdm import tqdm as new_bar

            # Stages that alternate (gc scans and deletes) keep a line each.
            bar = new_bar(
                total=total,
                desc=stage,
                file=self._stream,
                dynamic_ncols=True,
                position=len(self._bars),
            )
            self._bars[stage] = bar
        if total != bar.total:
            bar.total = total
        bar.update(done - bar.n)

    def _line(self, stage: str, done: int, total: int | None) -> None:
        line = self._lines.setdefault(stage, _Line())
        line.latest = (done, total)
        now = time.monotonic()
        if done != total and now - line.printed_at < self.interval:
            return
        line.printed_at = now
        self._print(stage, line)

    def _print(self, stage: str, line: _Line) -> None:
        if line.latest is None or line.latest == line.shown:
            return
        line.shown = done, total = line.latest
        of = f" of {total:,}" if total is not None else ""
        print(f"  {stage}: {done:,}{of}", file=self._stream, flush=True)

    def close(self) -> None:
        """Close the bars, or print each stage's last count if a line held it back."""
        for bar in self._bars.values():
            bar.close()
        for stage, line in self._lines.items():
            self._print(stage, line)
        self._bars.clear()
        self._lines.clear()

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class _Line:
    """One stage's plain-line state: when a line was last printed, what it showed, the newest."""

    __slots__ = ("latest", "printed_at", "shown")

    def __init__(self) -> None:
        self.printed_at = float("-inf")  # the first count always prints
        self.shown: tuple[int, int | None] | None = None
        self.latest: tuple[int, int | None] | None = None


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed or detached stream
        return False
