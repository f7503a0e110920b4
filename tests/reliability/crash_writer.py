"""Writer processes for the SIGKILL test, forked from a launcher that imported convstore once.

Run as ``python -m tests.reliability.crash_writer --url URL --blobs DIR --conversation ID``.
Importing convstore takes over a second; twenty-odd kills must not pay that each time, so this
launcher imports it once and, for each ``run ROUND TASKS`` line on stdin, forks a writer (the
launcher is single-threaded and has no event loop when it forks), waits for it and reports how
it ended. The writer opens its own store and runs ``TASKS`` concurrent `write_stream` tasks on
the conversation, with files, until the test kills it.

Protocol on stdout, one line per event, each written with a single ``os.write`` (shorter than
``PIPE_BUF``, so a line is whole or absent even when the writer dies mid-write)::

    ready                               launcher: imported, waiting for commands
    started ROUND PID                   writer: forked, about to open the store
    batch WRITER K                      writer: append of batch K returned (committed)
    completion WRITER K                 writer: complete_tool_call for batch K returned
    exited ROUND STATUS                 launcher: the writer ended (raw wait status)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import traceback

from convstore import ConversationStore
from tests.reliability.workload import write_stream

MAX_APPENDS = 10_000
MAX_SECONDS = 30.0
"""A writer the test forgot to kill stops by itself after this long."""


def emit(line: str) -> None:
    """Write one protocol line atomically."""
    os.write(1, f"{line}\n".encode())


async def _write(url: str, blobs: str, conversation: str, round_: int, tasks: int) -> None:
    started = time.monotonic()

    def report(kind: str, writer: str, k: int) -> None:
        emit(f"{kind} {writer} {k}")
        if time.monotonic() - started > MAX_SECONDS:
            os._exit(3)

    async with ConversationStore(url, blobs=blobs) as store:
        await asyncio.gather(
            *(
                write_stream(
                    store,
                    conversation,
                    writer,
                    MAX_APPENDS,
                    files=True,
                    on_write=lambda kind, k, writer=writer: report(kind, writer, k),
                )
                for writer in (f"r{round_:02d}t{t}" for t in range(tasks))
            )
        )


def _child(args: argparse.Namespace, round_: int, tasks: int) -> None:
    status = 0
    try:
        emit(f"started {round_} {os.getpid()}")
        asyncio.run(_write(args.url, args.blobs, args.conversation, round_, tasks))
    except BaseException:
        traceback.print_exc()
        status = 2
    finally:
        os._exit(status)


def main() -> None:
    """Serve ``run ROUND TASKS`` commands until ``quit`` or end of input."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--blobs", required=True)
    parser.add_argument("--conversation", required=True)
    args = parser.parse_args()
    emit("ready")
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "quit":
            return
        round_, tasks = (int(x) for x in rest)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(args, round_, tasks)
        _, status = os.waitpid(pid, 0)
        emit(f"exited {round_} {status}")


if __name__ == "__main__":
    main()
