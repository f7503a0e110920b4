"""Child process of the restore memory test: restore one archive, report the peak RSS.

``python -m tests.reliability.restore_memory ARCHIVE WORKDIR`` restores ARCHIVE into a new
SQLite store under WORKDIR and prints one JSON line: the error's class and text (or null) and
the process's peak resident set size in MB (``VmHWM``: what the kernel saw, every allocator
included; unlike ``ru_maxrss`` it is not inherited from the parent across fork and exec).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path


async def _restore(archive: Path, workdir: Path) -> dict[str, object]:
    from convstore import ConversationStore
    from convstore.errors import ConvstoreError
    from convstore.imports import import_file

    url = f"sqlite+aiosqlite:///{workdir / 'restored.db'}"
    async with ConversationStore(url, blobs=str(workdir / "blobs"), auto_migrate=True) as store:
        try:
            report = await import_file(store, archive, "convstore")
        except ConvstoreError as exc:
            return {"error": type(exc).__name__, "message": str(exc)[-300:]}
        return {"error": None, "imported": dict(report.imported)}


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main() -> None:
    archive, workdir = Path(sys.argv[1]), Path(sys.argv[2])
    before = _peak_mb()
    result = asyncio.run(_restore(archive, workdir))
    result.update(peak_mb=_peak_mb(), baseline_mb=before)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
