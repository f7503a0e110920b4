"""Importing an export whose conversations are trees: read, convert, write, one at a time.

Invariants:

- Conversations are read one at a time (by `convstore.imports._jsonstream`), each written in
  its own transaction while the next is read and converted: at most two are held, so memory
  is bounded by the largest conversations, not the export.
- Reading and converting block (files, zip members, JSON): they run in a worker thread, one
  step per conversation, never on the event loop.
- A file that is not readable JSON stops the import with `MalformedExportError` naming the
  position; the conversations before it are written, the broken one is not. A readable
  conversation that cannot be stored (a cycle of parents, a message over the store's limits)
  is reported in `ImportReport.errors` and skipped; the rest of the file is imported. So is a
  conversation whose (global) id another tenant already holds.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convstore.errors import ConversationNotFoundError, InvalidInputError

from ._jsonstream import array_items
from ._report import ImportReport, Progress
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree
from ._writer import write_tree

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["Converter", "TreeFormat", "import_trees"]

_STAGE = "importing (bytes of the export read)"

Converter = Callable[[Any, ExportSource, Counter[str]], ConversationTree]
"""``convert(element, source, unmapped)``: one conversation of the export as a tree; counts
what it keeps only as a note in ``unmapped``; raises `ConversationShapeError` to skip it."""


@dataclass(frozen=True, slots=True)
class TreeFormat:
    name: str
    files: tuple[str, ...]
    """Name patterns of the conversation files in a directory or zip export."""
    convert: Converter


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    at: int
    """Bytes of the file read so far."""
    where: str
    converted: ConversationTree | str
    """The conversation, or why it cannot be stored."""


def _steps(source: ExportSource, fmt: TreeFormat, unmapped: Counter[str]) -> Iterator[_Step]:
    for name in source.conversation_files(fmt.files):
        with source.open(name) as raw:
            for index, offset, element in array_items(raw, name):
                where = f"{name}, conversation {index} (character {offset})"
                converted: ConversationTree | str
                try:
                    converted = fmt.convert(element, source, unmapped)
                except ConversationShapeError as exc:
                    converted = str(exc)
                yield _Step(name, raw.tell(), where, converted)


async def _write(
    store: ConversationStore, step: _Step, tenant: str | None, report: ImportReport
) -> None:
    if isinstance(step.converted, str):
        report.errors.append(f"{step.where}: {step.converted}")
        return
    try:
        written = await write_tree(store, step.converted, tenant)
    except ConversationNotFoundError:
        # Ids are global: another tenant imported this conversation (never said which).
        report.errors.append(
            f"{step.where}: conversation id {step.converted.id!r} is not available to this tenant"
        )
        return
    except (ConversationShapeError, InvalidInputError) as exc:
        # A cycle, a message or title over the store's limits: this conversation only.
        report.errors.append(f"{step.where}: {exc}")
        return
    (report.imported if written.messages else report.present)["conversation"] += 1
    report.imported["message"] += written.messages
    report.present["message"] += written.present
    report.imported["attachment"] += written.attachments


async def import_trees(
    store: ConversationStore,
    path: Path,
    fmt: TreeFormat,
    *,
    tenant: str | None,
    report: ImportReport,
    progress: Progress | None,
) -> None:
    source = await asyncio.to_thread(ExportSource, path)
    try:
        names = source.conversation_files(fmt.files)
        if not names:
            raise InvalidInputError(f"{path} holds no {fmt.name} conversations file")
        total = sum(await asyncio.to_thread(lambda: [source.size(n) for n in names]))
        done_before = 0
        current = names[0]
        steps = _steps(source, fmt, report.unmapped)
        # The next conversation is read and converted (in a thread) while this one is written.
        ahead = asyncio.ensure_future(asyncio.to_thread(next, steps, None))
        try:
            while (step := await ahead) is not None:
                ahead = asyncio.ensure_future(asyncio.to_thread(next, steps, None))
                if step.name != current:
                    done_before += source.size(current)
                    current = step.name
                await _write(store, step, tenant, report)
                if progress is not None:
                    progress(_STAGE, min(done_before + step.at, total), total)
        finally:
            # A read still running in its thread must end before the source closes.
            await asyncio.gather(ahead, return_exceptions=True)
        if progress is not None:
            progress(_STAGE, total, total)
    finally:
        await asyncio.to_thread(source.close)
