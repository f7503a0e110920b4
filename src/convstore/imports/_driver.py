"""Importing an export whose conversations are trees: read, convert, write, one at a time.

Invariants:

- Conversations are read one at a time (by `convstore.imports._jsonstream`), each written in
  its own transaction while the next is read and converted (a large one alone): memory is
  bounded by `ImportLimits.conversation_size`, not the export. Assets are streamed into
  the blob store as each conversation is written, never held whole.
- Reading and converting block (files, zip members, JSON): they run in a worker thread, one
  step per conversation, never on the event loop.
- A file that is not readable JSON, or that crosses an import limit (`ExportLimitError`),
  stops the import with a `MalformedExportError` naming the position; the conversations
  before it are written, the one there is not.
- A readable conversation that cannot be stored (a cycle of parents, a value of the wrong
  type, text that is not Unicode, an id or message over the store's limits, an id another
  tenant holds) is refused alone: reported in `ImportReport.errors` with its position and
  why, and the rest of the file is imported. With ``strict`` the first such refusal stops
  the import (`ConversationRefusedError`). A refusal the importer did not foresee (a bug) is
  reported the same way, worded ``unexpected <ExceptionType>``, so one conversation never
  ends an import with a traceback.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from convstore.errors import (
    ConflictError,
    ConversationNotFoundError,
    ConversationRefusedError,
    ExportLimitError,
    InvalidInputError,
    NotFoundError,
)

from ._jsonstream import array_items
from ._limits import DEFAULT_LIMITS, Budget, ImportLimits
from ._report import ImportReport, Progress
from ._sources import ExportSource
from ._tree import ConversationShapeError, ConversationTree
from ._writer import write_tree

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = ["Converter", "TreeFormat", "import_trees"]

_STAGE = "importing (bytes of the export read)"
_READ_AHEAD_LIMIT: Final = 4 << 20
"""A conversation of more characters than this is written before the next one is read."""
_ID_KEYS: Final = ("conversation_id", "uuid", "id")
_REFUSED: Final = (ConversationShapeError, ValidationError, InvalidInputError, UnicodeError)
"""What converting a hostile conversation may raise: its own refusal, and nothing else."""

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
    size: int
    """Bytes read from the file to reach the conversation's end (about its size)."""
    converted: ConversationTree | str
    """The conversation, or why it cannot be stored."""


def _where(name: str, index: int, offset: int, element: Any) -> str:
    where = f"{name}, conversation {index} (character {offset})"
    if isinstance(element, dict):
        source_id = next((element[k] for k in _ID_KEYS if isinstance(element.get(k), str)), None)
        if source_id:
            where += f", id {source_id[:80]!r}"
    return where


def _refusal(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first.get("loc", ()))
        return f"{place}: {first.get('msg', 'invalid')}" if place else str(first.get("msg"))
    if isinstance(exc, UnicodeError):
        return "text that is not valid Unicode (a lone surrogate)"
    if isinstance(exc, _REFUSED):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def _steps(
    source: ExportSource, fmt: TreeFormat, unmapped: Counter[str], limits: ImportLimits
) -> Generator[_Step, None, None]:
    for name in source.conversation_files(fmt.files):
        with source.open(name) as raw:
            read = 0
            for index, offset, element in array_items(raw, name, max_size=limits.conversation_size):
                size, read = raw.tell() - read, raw.tell()
                where = _where(name, index, offset, element)
                converted: ConversationTree | str
                try:
                    converted = fmt.convert(element, source, unmapped)
                except RecursionError:
                    converted = "nested too deeply"
                except Exception as exc:  # one conversation never ends an import
                    converted = _refusal(exc)
                del element
                yield _Step(name, raw.tell(), where, size, converted)


async def _write(
    store: ConversationStore, step: _Step, tenant: str | None, report: ImportReport, strict: bool
) -> None:
    problem: str
    cause: BaseException | None = None
    if isinstance(step.converted, str):
        problem = step.converted
    else:
        try:
            written = await write_tree(store, step.converted, tenant)
        except ConversationNotFoundError as exc:
            # Ids are global: another tenant imported this conversation (never said which).
            problem = f"conversation id {step.converted.id!r} is not available to this tenant"
            cause = exc
        except ExportLimitError:
            raise  # the whole import's limit, crossed while streaming an asset
        except (ConversationShapeError, InvalidInputError, ConflictError, NotFoundError) as exc:
            # A cycle, a message or title over the store's limits: this conversation only.
            problem, cause = str(exc), exc
        else:
            # A conversation this import created counts as imported even with no messages.
            new = written.created or written.messages
            (report.imported if new else report.present)["conversation"] += 1
            report.imported["message"] += written.messages
            report.present["message"] += written.present
            report.imported["attachment"] += written.attachments
            return
    if strict:
        raise ConversationRefusedError(problem, position=step.where) from cause
    report.errors.append(f"{step.where}: {problem}")


async def import_trees(
    store: ConversationStore,
    path: Path,
    fmt: TreeFormat,
    *,
    tenant: str | None,
    report: ImportReport,
    progress: Progress | None,
    strict: bool = False,
    limits: ImportLimits | None = None,
) -> None:
    limits = limits if limits is not None else DEFAULT_LIMITS
    source = await asyncio.to_thread(
        ExportSource,
        path,
        limits=limits,
        budget=Budget(limits),
        max_asset_bytes=store.blob_store.max_size,
    )
    try:
        names = source.conversation_files(fmt.files)
        if not names:
            raise InvalidInputError(f"{path} holds no {fmt.name} conversations file")
        total = sum(await asyncio.to_thread(lambda: [source.size(n) for n in names]))
        done_before = 0
        current = names[0]
        steps = _steps(source, fmt, report.unmapped, limits)
        # The next conversation is read and converted (in a thread) while this one is written.
        ahead = asyncio.ensure_future(asyncio.to_thread(next, steps, None))
        try:
            while (step := await ahead) is not None:
                if step.size > _READ_AHEAD_LIMIT:
                    # A large conversation is written alone: two of them at once could hold
                    # twice the memory the limits allow for one.
                    await _write(store, step, tenant, report, strict)
                    ahead = asyncio.ensure_future(asyncio.to_thread(next, steps, None))
                else:
                    ahead = asyncio.ensure_future(asyncio.to_thread(next, steps, None))
                    await _write(store, step, tenant, report, strict)
                if step.name != current:
                    done_before += source.size(current)
                    current = step.name
                if progress is not None:
                    progress(_STAGE, min(done_before + step.at, total), total)
        finally:
            # A read still running in its thread must end before the source closes.
            await asyncio.gather(ahead, return_exceptions=True)
            steps.close()
        if progress is not None:
            progress(_STAGE, total, total)
    finally:
        await asyncio.to_thread(source.close)
