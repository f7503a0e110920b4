"""The commands behind ``convstore``: each opens the store, calls the API, prints the result."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from convstore.cli import importing
from convstore.cli.demo import run_demo
from convstore.cli.stores import existing_store, masked_url, open_store, recorded_location_notice
from convstore.cli.transfer import import_document
from convstore.db import migrate as migrate_database
from convstore.db import partition as partition_database
from convstore.db import sqlite_path
from convstore.errors import DatabaseNotFoundError, InvalidInputError
from convstore.imports import FORMATS as IMPORT_FORMATS
from convstore.imports.detection import check_zip
from convstore.model import TOOL_DEFINITIONS, ToolDefinition
from convstore.model._base import describe_validation_error
from convstore.parsing import parse, parse_tools
from convstore.progress import ProgressReporter
from convstore.store import (
    ConversationStore,
    GarbageReport,
    collect_garbage,
    fsck,
    record_blob_location,
)
from convstore.store.conversations.tools import MODEL_KEY, SOURCE_KEY, tools_metadata
from convstore.store.maintenance.garbage import blob_url

__all__ = [
    "blobs_command",
    "demo",
    "existing_store",
    "fsck_command",
    "gc",
    "import_payload",
    "migrate",
    "partition",
    "recorded_location_notice",
    "render",
]


async def demo(args: argparse.Namespace) -> int:
    """Store a sample conversation and print what was stored."""
    async with open_store(args) as store:
        await run_demo(store)
    return 0


async def migrate(args: argparse.Namespace) -> int:
    """Upgrade the schema."""
    await migrate_database(args.url, args.revision)
    print(f"migrated {masked_url(args.url)} to {args.revision}")
    return 0


async def partition(args: argparse.Namespace) -> int:
    """Hash-partition the per-conversation tables (PostgreSQL)."""
    rebuilt = await partition_database(args.url, args.modulus)
    if rebuilt:
        print(f"partitioned {', '.join(rebuilt)} into {args.modulus} hash partitions each")
    else:
        print(f"already in {args.modulus} hash partitions per table: nothing to do")
    return 0


async def _read_json(file: str) -> Any:
    try:
        if file == "-":
            text = await asyncio.to_thread(sys.stdin.read)
        else:
            text = await asyncio.to_thread(Path(file).read_text, encoding="utf-8")
        return json.loads(text)
    except RecursionError as exc:
        raise InvalidInputError(
            f"cannot read a JSON payload from {file}: it nests too deeply to decode"
        ) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"cannot read a JSON payload from {file}: {exc}") from exc


async def import_payload(args: argparse.Namespace) -> int:
    """Parse a payload file, store it (with its tools and model) as a new conversation.

    Prints the new conversation's id. An export (``--format chatgpt-export`` and the like, or
    detected as one) is imported whole: see `convstore.cli.importing`. Without ``--format``
    the format is detected and said on stderr.
    """
    fmt = args.format
    if fmt is None:
        detected = await importing.detect(args.file)
        fmt = detected.format if detected is not None else None
    elif args.file != "-":
        await asyncio.to_thread(check_zip, Path(args.file))
    if fmt is not None and importing.handles(args, fmt):
        async with open_store(args) as store:
            return await importing.import_export(store, args, fmt)
    payload = await _read_json(args.file)
    if fmt is None:
        fmt = importing.detect_document(args.file, payload).format
        if fmt in IMPORT_FORMATS and fmt != "convstore":
            raise InvalidInputError(
                f"{fmt} exports are read from a file, directory or zip, not stdin: save it "
                "and import the file"
            )
    if fmt == "convstore":
        async with open_store(args) as store:
            imported = await import_document(store, payload, title=args.title, tenant=args.tenant)
        print(imported.id)
        return 0
    messages = parse(payload, fmt)
    metadata = tools_metadata(parse_tools(payload, fmt))
    model = payload.get("model")
    if isinstance(model, str):
        metadata[MODEL_KEY] = model
    metadata[SOURCE_KEY] = fmt
    async with open_store(args) as store:
        conversation = await store.create_conversation(
            title=args.title, tenant=args.tenant, metadata=metadata
        )
        # An imported history is a record: a later, different result for a call is kept as
        # history rather than refused.
        await store.append(conversation.id, messages, on_conflict="keep-first")
    print(conversation.id)
    return 0


async def _tools_file(file: str | None) -> list[ToolDefinition] | None:
    if file is None:
        return None
    try:
        return TOOL_DEFINITIONS.validate_python(await _read_json(file))
    except ValidationError as exc:
        raise InvalidInputError(
            f"{file} is not a list of tool definitions: {describe_validation_error(exc)}"
        ) from exc


async def render(args: argparse.Namespace) -> int:
    """Print the request payload for a stored conversation.

    With ``--diagnostics``, one JSON document ``{"payload": ..., "diagnostics": ...}``. The
    model defaults to the one an imported request named, when rendering to its own format.
    """
    tools = await _tools_file(args.tools)
    async with existing_store(args) as store:
        model = args.model
        if model is None:
            stored = (await store.get_conversation(args.id, tenant=args.tenant)).metadata
            if stored.get(SOURCE_KEY) == args.to and isinstance(stored.get(MODEL_KEY), str):
                model = stored[MODEL_KEY]
        rendered = await store.render(
            args.id,
            args.to,
            model=model,
            tenant=args.tenant,
            reasoning=args.reasoning,
            tools=tools,
            last=args.last,
            head_seq=args.head,
        )
    document: dict[str, Any] = rendered.payload
    if args.diagnostics:
        document = {"payload": rendered.payload, "diagnostics": rendered.diagnostics.to_dict()}
    print(json.dumps(document, indent=2, ensure_ascii=False))
    return 0


async def gc(args: argparse.Namespace) -> int:
    """Collect unreferenced blobs (once, or every ``--watch`` seconds until interrupted)."""
    async with existing_store(args) as store:
        if args.watch is None:
            report = await _collect_once(store, args)
            for sha in report.deleted:
                print(f"{_gc_verb(report)} {blob_url(store, sha)}")
            print(_gc_summary(report, args.grace))
            return 0
        runs = deleted = 0
        try:
            while True:
                report = await _collect_once(store, args)
                runs += 1
                deleted += len(report.deleted)
                print(f"run {runs}: {_gc_summary(report, args.grace)}", flush=True)
                await asyncio.sleep(args.watch)
        except asyncio.CancelledError:  # Ctrl-C: the summary of every run, then a clean exit
            print(f"{runs:,} runs; {_gc_verb(report)} {deleted:,} blobs in all", flush=True)
            return 0


async def _collect_once(store: ConversationStore, args: argparse.Namespace) -> GarbageReport:
    with ProgressReporter() as progress:
        return await collect_garbage(
            store, grace=timedelta(seconds=args.grace), dry_run=args.dry_run, progress=progress
        )


def _gc_verb(report: GarbageReport) -> str:
    return "would delete" if report.dry_run else "deleted"


def _gc_summary(report: GarbageReport, grace: float) -> str:
    return (
        f"{report.examined:,} blobs examined, {report.referenced:,} referenced; "
        f"{_gc_verb(report)} {len(report.deleted):,} unreferenced, kept {report.young:,} younger "
        f"than {grace:g}s; {report.staging:,} stale staging objects"
        + (" found" if report.dry_run else " removed")
    )


async def fsck_command(args: argparse.Namespace) -> int:
    """Check referenced blobs; exit status 1 when any is missing or corrupted."""
    async with existing_store(args) as store:
        with ProgressReporter() as progress:
            report = await fsck(store, progress=progress)
        for sha in report.missing:
            print(f"MISSING   {blob_url(store, sha)}")
        for sha in report.corrupted:
            print(f"CORRUPTED {blob_url(store, sha)}")
        for sha in report.unreferenced:
            print(f"unreferenced {blob_url(store, sha)}")
    status = "ok" if report.ok else "PROBLEMS FOUND"
    print(
        f"{status}: {report.referenced:,} referenced blobs, {len(report.missing):,} missing, "
        f"{len(report.corrupted):,} corrupted; {len(report.unreferenced):,} unreferenced"
    )
    return 0 if report.ok else 1


async def blobs_command(args: argparse.Namespace) -> int:
    """``blobs show`` prints the recorded location; ``blobs set URL`` checks and records one."""
    if args.blobs_command == "show":
        async with existing_store(args) as store:
            print(store.recorded_blobs_url or "(none recorded)")
        return 0
    path = sqlite_path(args.url)
    if path is not None and not path.exists():
        raise DatabaseNotFoundError(str(path))
    async with ConversationStore(args.url, blobs=args.location) as store:
        with ProgressReporter() as progress:
            report = await record_blob_location(store, progress=progress)
        print(
            f"recorded {store.recorded_blobs_url}: all {report.referenced:,} referenced blobs "
            "present and intact"
        )
    return 0
