"""Import one export in a fresh process and print its peak resident set (`test_memory.py`).

``python -m tests.imports.memory_probe EXPORT FORMAT WORKDIR [MAX_ATTACHMENT_BYTES]`` prints
one JSON line: ``{"peak_mib", "seconds", "outcome", "report"}``; ``outcome`` is ``"ok"`` or
the type of the `ConvstoreError` the import raised (anything else is a crash: exit 1).
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path

from convstore import ConversationStore
from convstore.errors import ConvstoreError
from convstore.imports import import_file


def _peak_mib() -> float:
    """This process's peak resident set since it started this program.

    ``VmHWM`` belongs to the address space ``exec`` made; ``getrusage``'s ``ru_maxrss`` does
    not reset on ``exec``, so it would report the parent's size at ``fork`` (a test that just
    built a large export in memory).
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _main(
    export: Path, fmt: str, work: Path, max_attachment: int | None
) -> dict[str, object]:
    url = f"sqlite+aiosqlite:///{work / 'probe.db'}"
    options = {"max_attachment_size": max_attachment} if max_attachment else {}
    began = time.perf_counter()
    outcome, report = "ok", ""
    async with ConversationStore(url, blobs=str(work / "blobs"), **options) as store:
        try:
            done = await import_file(store, export, fmt)
            report = done.summary()
        except ConvstoreError as exc:
            outcome, report = type(exc).__name__, str(exc)
    return {
        "peak_mib": _peak_mib(),
        "seconds": time.perf_counter() - began,
        "outcome": outcome,
        "report": report[:500],
    }


if __name__ == "__main__":
    limit = int(sys.argv[4]) if len(sys.argv) > 4 else None
    result = asyncio.run(_main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), limit))
    print(json.dumps(result))
