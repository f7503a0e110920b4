"""Importing an export whose conversations are trees: read, convert, write, one at a time.

Invariants:

- One conversation is held at a time (read by `convstore.imports._jsonstream`), converted and
  written in its own transaction before the next is read, so memory is bounded by the largest
  conversation, not the export.
- Reading and converting block (files, zip members, JSON): they run in a worker thread, one
  step per conversation, never on the event loop.
- A file that is not readable JSON stops the import with `MalformedExportError` naming the
  position; the conversations before it are written, the broken one is not. A readable
  conversation that cannot be stored (a cycle of parents, a message over the store's limits)
  is reported in `ImportReport.errors` and skipped; the rest of the file is imported.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convstore.errors import InvalidInputError, InvalidMessageError

from ._jsonstream import array_items
from ._report import ImportReport, Progress
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree
from ._writer import write_tree

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["Converter", "TreeFormat", "import_trees"]

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
        while (step := await asyncio.to_thread(next, steps, None)) is not None:
            if step.name != current:
                done_before += source.size(current)
                current = step.name
            if isinstance(step.converted, str):
                report.errors.append(f"{step.where}: {step.converted}")
            else:
                try:
                    written = await write_tree(store, step.converted, tenant)
                except (ConversationShapeError, InvalidMessageError) as exc:
                    report.errors.append(f"{step.where}: {exc}")
                else:
                    kind = "conversation"
                    (report.imported if written.messages else report.present)[kind] += 1
                    report.imported["message"] += written.messages
                    report.present["message"] += written.present
                    report.imported["attachment"] += written.attachments
            if progress is not None:
                progress("import", min(done_before + step.at, total), total)
        if progress is not None:
            progress("import", total, total)
    finally:
        await asyncio.to_thread(source.close)
