"""Instruction counts of marked sections of a child process, by callgrind.

Wall time on a shared machine moves by tens of percent from one run to the next; instruction
counts do not. `counted_run` starts ``python -m <module> --library L <arguments>`` under
``valgrind --tool=callgrind --instr-atstart=no``; the child opens L with `Counter` and counts
only between ``on()`` and ``off(name)`` (callgrind's client requests, through a tiny C helper
compiled here against the system's ``valgrind/callgrind.h``). Every thread counts (a driver's
threads too). The result: instructions per section name.

A dry run (``BENCH_CALLGRIND_DRY_RUN=1`` in the environment, as ``make bench-smoke`` sets it)
runs the same child without valgrind: the sections run, nothing is counted, and each section
name reports 0 instructions, so the code around a count is exercised in seconds.

Invariants: nothing is counted outside a section; a section name dumped twice keeps its last
count; a run that fails returns what was counted and why it failed, never a partial number
dressed as a whole one; a dry run's zeros are never reported as counts (`dry_run` says so).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_on(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_off(const char *name) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(name); }
"""


DRY_RUN: str = "BENCH_CALLGRIND_DRY_RUN"
"""Environment variable: ``1`` makes every `counted_run` a dry run."""
_SECTIONS = "BENCH_CALLGRIND_SECTIONS"


def dry_run() -> bool:
    """Whether counted runs are dry (nothing counted: see the module docstring)."""
    return os.environ.get(DRY_RUN) == "1"


def unavailable() -> str | None:
    """Why callgrind cannot run here (``None`` when it can, or when runs are dry)."""
    if dry_run():
        return None
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (e.g. `apt-get install -y valgrind gcc`)"
    if not Path("/usr/include/valgrind/callgrind.h").exists():
        return "valgrind's headers (valgrind/callgrind.h) are missing"
    return None


def build_helper(directory: Path) -> Path:
    """Compile the client-request helper into ``directory``; its path."""
    source = directory / "cg.c"
    source.write_text(_HELPER)
    library = directory / "cg.so"
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    return library


def parse(directory: Path, prefix: str = "cg.out.") -> dict[str, int]:
    """Instructions per dump name, from the callgrind files ``prefix*`` in ``directory``."""
    found: dict[str, int] = {}
    for dump in sorted(directory.glob(f"{prefix}*")):
        text = dump.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.MULTILINE)
        total = re.search(r"^totals: (\d+)", text, re.MULTILINE)
        if trigger and total:
            found[trigger.group(1)] = int(total.group(1))
    return found


class Counter:
    """The child's side: switches counting on and off around the measured calls."""

    def __init__(self, library: str | Path | None) -> None:
        # None: not under callgrind (a dry run of the same code path): sections only named.
        self._helper = ctypes.CDLL(str(library)) if library else None
        self._names = os.environ.get(_SECTIONS)

    def on(self) -> None:
        if self._helper is not None:
            self._helper.cg_on()

    def off(self, name: str) -> None:
        if self._helper is not None:
            self._helper.cg_off(name.encode())
        elif self._names:
            with Path(self._names).open("a") as names:
                names.write(name + "\n")

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        """Count the block as ``name``."""
        self.on()
        try:
            yield
        finally:
            self.off(name)


def counted_run(
    module: str,
    arguments: Sequence[str],
    timeout: float = 1800,
    env: Mapping[str, str] | None = None,
) -> tuple[dict[str, int], str | None]:
    """``python -m module --library L *arguments`` under callgrind; instructions per section
    name, and why the run failed (``None`` when it did not)."""
    if dry_run():
        return _dry(module, arguments, timeout, env)
    with tempfile.TemporaryDirectory(prefix="bench-cg-out-") as out:
        directory = Path(out)
        library = build_helper(directory)
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={directory}/cg.out.%p",
            sys.executable, "-m", module, "--library", str(library), *arguments,
        ]  # fmt: skip
        try:
            proc = subprocess.run(
                command, cwd=ROOT, env=None if env is None else dict(env),
                capture_output=True, text=True, check=False, timeout=timeout,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return parse(directory), f"timed out after {timeout:.0f} s"
        totals = parse(directory)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return totals, f"exit status {proc.returncode}: {tail}"
    return totals, None


def _dry(
    module: str, arguments: Sequence[str], timeout: float, env: Mapping[str, str] | None
) -> tuple[dict[str, int], str | None]:
    """The child without valgrind; 0 for each section it ran."""
    with tempfile.TemporaryDirectory(prefix="bench-cg-dry-") as out:
        names = Path(out) / "sections"
        child_env = {**(os.environ if env is None else env), _SECTIONS: str(names)}
        command = [sys.executable, "-m", module, *arguments]
        try:
            proc = subprocess.run(
                command, cwd=ROOT, env=child_env, capture_output=True, text=True, check=False,
                timeout=timeout,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return {}, f"timed out after {timeout:.0f} s"
        ran = names.read_text().split() if names.exists() else []
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return {}, f"exit status {proc.returncode}: {tail}"
    return dict.fromkeys(ran, 0), None
