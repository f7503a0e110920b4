"""What a run was measured on: cores, CPU, memory, filesystem, versions, load.

Invariants: every field is read from the machine (``/proc``, `platform`, `git`), never assumed;
what cannot be read says ``unknown``.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory() -> str:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    return "unknown"


def filesystem(directory: str) -> str:
    best = ("", "unknown", "unknown")
    resolved = str(Path(directory).resolve())
    for line in _read("/proc/mounts").splitlines():
        device, mount, kind, *_ = line.split()
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best[0]):
            best = (mount, kind, device)
    return f"{best[1]} ({best[2]} on {best[0]})"


def git(*command: str) -> str:
    try:
        proc = subprocess.run(
            ["git", *command], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip()


def loadavg() -> str:
    """The 1, 5 and 15-minute load averages."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0


def environment(
    *, command: str, started: str, load_before: str, tmpdir: str | None = None, sqlite: str = ""
) -> dict[str, str]:
    """What the numbers were measured on (``load_before``: `loadavg` when the run began)."""
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--", "src"):
        commit += " (with uncommitted changes under src/)"
    tmp = tmpdir or tempfile.gettempdir()
    return {
        "date": started,
        "command": command,
        "commit": commit,
        "machine": f"{cores()} cores (nproc), {cpu_model()}, {memory()} RAM, {platform.machine()}",
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_version()} ({sys.executable})",
        "sqlite": sqlite or sqlite3.sqlite_version,
        "database files": f"{tmp}: {filesystem(tmp)}",
        "load average": f"{load_before} before, {loadavg()} after",
    }
