"""Bringing conversations in from other products' exports (and convstore's own).

``await import_file(store, path, format, tenant=None)`` reads an export (a file, a directory
or a ``.zip``, as the product hands it over) and returns an `ImportReport`. Formats:

- ``"chatgpt-export"``: ChatGPT's data export (``conversations.json``, or split into
  ``conversations-000.json``...), see `convstore.imports.chatgpt`;
- ``"claude-export"``: Claude.ai's data export, see `convstore.imports.claude`;
- ``"openwebui-export"``: an Open WebUI chat export, see `convstore.imports.openwebui`;
- more registered with `register_format` (``"convstore"``: convstore's own export zip).

Invariants (every tree format; docs/imports.md has the mapping):

- Idempotent: each conversation and message gets a stable id from the export's own, so
  importing the same export again adds nothing and a newer export adds only what is new.
- The export's tree is stored node for node (every edit and regeneration a branch) and the
  conversation's head is the export's active node.
- Each conversation is written in one transaction; what cannot be mapped is counted in the
  report, not fatal; a conversation that cannot be stored is reported with its position and
  why (``strict``: raised) and the rest imported; a truncated or malformed file, or one over
  an `ImportLimits` limit, raises `MalformedExportError` naming the position, with nothing of
  the broken conversation written.
- Only the export is read: a file handed alone has no assets; nothing is reached through a
  symbolic link; an asset pointer names one exact file (`convstore.imports._sources`).

Modules: one per format (``chatgpt``, ``claude``, ``openwebui``, ``archive`` for convstore's
own zip) and ``detection`` (what a file is); beside them ``_sources`` (a file, directory or
zip as handed over), ``_jsonstream`` (a top-level JSON array one element at a time),
``_limits`` (`ImportLimits` and the byte budget), ``_tree`` (a conversation as a tree of
nodes), ``_common`` (ids, times, inline data, files, placeholders), ``_driver`` (read, convert,
write, one conversation at a time), ``_writer`` (one tree in one transaction, through
`convstore.store.append.tree_writes`) and ``_report`` (what an import did).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from convstore.errors import UnsupportedFormatError

from ._driver import TreeFormat, import_trees
from ._limits import ImportLimits
from ._report import ImportReport, Progress

if TYPE_CHECKING:
    from convstore.store import ConversationStore

__all__ = [
    "FORMATS",
    "ImportLimits",
    "ImportReport",
    "Importer",
    "Progress",
    "import_file",
    "register_format",
]

Importer = Callable[..., Awaitable[None]]
"""``await importer(store, path, *, tenant, report, progress, strict, limits)``: fills
``report``."""

FORMATS: dict[str, Importer] = {}
"""The registered formats by name."""


def register_format(name: str, importer: Importer) -> None:
    """Make ``import_file(..., format=name)`` and ``convstore import --format`` use it."""
    FORMATS[name] = importer


def _tree_format(fmt: TreeFormat) -> Importer:
    return partial(import_trees, fmt=fmt)


async def import_file(
    store: ConversationStore,
    path: str | PathLike[str],
    format: str,
    tenant: str | None = None,
    *,
    progress: Progress | None = None,
    strict: bool = False,
    limits: ImportLimits | None = None,
) -> ImportReport:
    """Import the export at ``path`` (file, directory or ``.zip``) in ``format``; what it did.

    A conversation that cannot be stored is named in ``report.errors`` and the import goes
    on; with ``strict`` the first one raises `ConversationRefusedError` instead. ``limits``
    bound what the export may make the import read and hold (`ImportLimits`).
    """
    importer = FORMATS.get(format)
    if importer is None:
        raise UnsupportedFormatError(
            f"unknown import format {format!r}; known: {', '.join(sorted(FORMATS))}"
        )
    report = ImportReport(format=format)
    await importer(
        store,
        Path(path),
        tenant=tenant,
        report=report,
        progress=progress,
        strict=strict,
        limits=limits,
    )
    return report


def _register_builtin() -> None:
    from . import archive, chatgpt, claude, openwebui

    for module in (chatgpt, claude, openwebui):
        register_format(module.FORMAT.name, _tree_format(module.FORMAT))
    register_format(archive.FORMAT_NAME, archive.import_archive)


_register_builtin()
