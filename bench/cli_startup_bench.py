"""How long the command line takes to answer, against ``python -c pass`` on the same machine.

Interleaved: each round runs every variant once (in a rotating order), so a machine that gets
busier or quieter affects them all alike. Wall times are medians over the rounds; the
"over pass" column subtracts ``python -c pass``'s median. ``search`` also shows the search
itself (``store.search`` in-process, warm, on the same database) and what the command adds
beyond ``python -c pass`` plus that search. Targets (issue 35): ``--help`` within 0.15 s of
``python -c pass``; ``search`` within 0.5 s of it plus the search itself.

``convstore search`` reads a current SQLite file with nothing pending without the store
(`convstore.cli.search.quick_search`); the "(store path)" variant forces the store's search
(``CONVSTORE_SEARCH_STORE_ONLY=1``) for comparison. The seeded database is caught up and its
blob directory exists, as after any attachment, so every measured search is the quick path.

Every variant runs as an installed package does, with its bytecode cached: pip compiles at
install time, and the warm-up round writes the caches even where ``PYTHONDONTWRITEBYTECODE``
is set (it is removed from the variants' environment; otherwise every run would compile every
module again). ``import sqlalchemy`` is shown as the floor of opening a store: the database
layer is SQLAlchemy Core's statements.

With ``--callgrind``, each variant also runs once under ``valgrind --tool=callgrind`` and its
instruction count (repeatable on a loaded machine) is printed beside the wall times.

    .venv/bin/python -m bench.cli_startup_bench [--rounds 15] [--callgrind]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.timing import rotations
from convstore import ConversationStore, Message

PYTHON = sys.executable
CONVSTORE = str(Path(PYTHON).with_name("convstore"))
QUERY = "quarterly"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


async def _seed(url: str, blobs: str) -> None:
    async with ConversationStore(url, blobs=blobs) as store:
        for n in range(200):
            conv = await store.create_conversation(title=f"conversation {n}")
            await store.append(
                conv.id,
                [
                    Message.user(f"question {n}: what changed in the quarterly report {n}?"),
                    Message.assistant(f"answer {n}: revenue grew; see the draft for details."),
                ],
            )
        await store.search_index.catch_up()  # nothing pending: no run pays for a catch-up
    Path(blobs).mkdir(exist_ok=True)  # else `--blobs` says the recorded location is gone


async def _search_itself(url: str, blobs: str, rounds: int) -> float:
    """The median of ``store.search(QUERY)`` in-process, on an open, warm store."""
    async with ConversationStore(url, blobs=blobs) as store:
        await store.search(QUERY)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            await store.search(QUERY)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


STORE_PATH = " (store path)"
"""A variant name ending so runs with ``CONVSTORE_SEARCH_STORE_ONLY=1``."""


def _variants(url: str, blobs: str) -> dict[str, list[str]]:
    storage = ["--url", url, "--blobs", blobs]
    return {
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -c 'import convstore'": [PYTHON, "-c", "import convstore"],
        "python -c 'import sqlalchemy'": [PYTHON, "-c", "import sqlalchemy"],
        "convstore --help": [CONVSTORE, "--help"],
        "convstore search --help": [CONVSTORE, "search", "--help"],
        f"convstore search {QUERY}": [CONVSTORE, "search", QUERY, *storage],
        f"convstore search {QUERY}{STORE_PATH}": [CONVSTORE, "search", QUERY, *storage],
        "convstore list": [CONVSTORE, "list", "--limit", "5", *storage],
    }


def _env(name: str) -> dict[str, str]:
    return {**ENV, "CONVSTORE_SEARCH_STORE_ONLY": "1"} if name.endswith(STORE_PATH) else ENV


def _run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _instructions(argv: list[str], env: dict[str, str], workdir: Path) -> int | None:
    out = workdir / "callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    found = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
    out.unlink()
    return int(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warm-ups", type=int, default=1, help="unmeasured runs of each (1)")
    parser.add_argument("--callgrind", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
        blobs = str(workdir / "blobs")
        asyncio.run(_seed(url, blobs))
        variants = _variants(url, blobs)
        names = list(variants)
        times: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(options.warm_ups):  # bytecode caches, the page cache
            for name in names:
                _run(variants[name], _env(name))
        for _, order in rotations(names, options.rounds):
            for name in order:
                times[name].append(_run(variants[name], _env(name)))
        search_itself = asyncio.run(_search_itself(url, blobs, options.rounds))
        counts: dict[str, int | None] = {}
        if options.callgrind and shutil.which("valgrind"):
            counts = {name: _instructions(variants[name], _env(name), workdir) for name in names}
    load = os.getloadavg()
    print(f"{options.rounds} interleaved rounds; load average {load[0]:.2f} {load[1]:.2f}")
    base = statistics.median(times[names[0]])
    print(f"{'variant':<46} {'median s':>9} {'over pass s':>12} {'x pass':>7} {'instructions':>14}")
    for name in names:
        median = statistics.median(times[name])
        count = counts.get(name)
        shown = f"{count:,}" if count else "-"
        print(f"{name:<46} {median:9.3f} {median - base:12.3f} {median / base:7.1f} {shown:>14}")
    search = statistics.median(times[f"convstore search {QUERY}"])
    print(
        f"search itself (in-process, warm): {search_itself * 1000:.1f} ms; the command adds "
        f"{search - base - search_itself:.3f} s beyond python -c pass plus the search (target "
        "0.5 s)"
    )
    store = statistics.median(times[f"convstore search {QUERY}{STORE_PATH}"])
    print(f"the store's path adds {store - base - search_itself:.3f} s (for comparison)")
    print(
        f"--help adds {statistics.median(times['convstore --help']) - base:.3f} s (target 0.15 s)"
    )


if __name__ == "__main__":
    main()
