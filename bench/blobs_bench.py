"""Blob layer benchmark: streaming memory use and 1 MB put/get throughput on a local directory.

Run from the repository root::

    .venv/bin/python -m bench.blobs_bench [--stream-mib 200] [--blobs 200]

(a) Streams a large file into a local store through ``put_stream``, once from a `Path` and once
    from an async generator, each in a fresh subprocess, and prints how much the peak resident
    set grew during the put (target: under 32 MB). The baseline is read after imports and a
    warm-up put; the source file is written chunk by chunk and never held in memory.
(b) Puts and gets distinct 1 MB blobs (sequentially, then 16 at a time) and re-puts them
    (dedupe hits, which only touch), printing MB/s and ops/s.

Prints numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from convstore.blobs import BlobStore

MiB = 1024 * 1024
BLOB_SIZE = 1_000_000
CONCURRENCY = 16


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def write_source(path: Path, size: int) -> None:
    block = os.urandom(MiB)
    with path.open("wb") as out:
        for index in range(size // MiB):
            out.write(index.to_bytes(8, "big") + block[8:])


async def generated_chunks(size: int) -> AsyncIterator[bytes]:
    block = os.urandom(MiB)
    for index in range(size // MiB):
        yield index.to_bytes(8, "big") + block[8:]  # a fresh 1 MiB object each time


async def stream_child(mode: str, source: Path, target: Path, size: int) -> dict[str, float]:
    store = BlobStore(str(target), max_size=size + MiB)
    try:
        await store.put(b"warm-up")  # thread pool, directories, hashlib: before the baseline
        baseline = peak_rss_bytes()
        started = time.perf_counter()
        if mode == "path":
            stored = await store.put_stream(source)
        else:
            stored = await store.put_stream(generated_chunks(size))
        elapsed = time.perf_counter() - started
        growth = peak_rss_bytes() - baseline
    finally:
        await store.close()
    return {
        "growth_mb": growth / 1e6,
        "seconds": elapsed,
        "mb_per_s": stored.size / 1e6 / elapsed,
    }


def run_stream_benchmark(workdir: Path, size: int) -> None:
    source = workdir / "source.bin"
    write_source(source, size)
    print(f"(a) put_stream of {size // MiB} MiB into a local directory (fresh subprocess each)")
    for mode in ("path", "async-generator"):
        target = workdir / f"stream-{mode}"
        completed = subprocess.run(
            [sys.executable, "-m", "bench.blobs_bench", "--child", mode, str(source), str(target)],
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(completed.stdout.strip().splitlines()[-1])
        print(
            f"    from {mode:<16} peak RSS growth {result['growth_mb']:6.1f} MB"
            f"   {result['seconds']:5.2f} s   {result['mb_per_s']:6.0f} MB/s"
        )


async def timed(
    label: str, count: int, run: Callable[[int], Awaitable[object]], width: int
) -> None:
    semaphore = asyncio.Semaphore(width)

    async def one(index: int) -> None:
        async with semaphore:
            await run(index)

    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(count)))
    elapsed = time.perf_counter() - started
    print(
        f"    {label:<28} {count * BLOB_SIZE / 1e6 / elapsed:8.0f} MB/s"
        f" {count / elapsed:8.0f} ops/s"
    )


async def measure_throughput(store: BlobStore, blobs: list[bytes], width: int) -> None:
    count = len(blobs)
    digests = [""] * count

    async def put(index: int) -> None:
        digests[index] = (await store.put(blobs[index])).sha256

    async def get(index: int) -> None:
        await store.get(digests[index])

    async def put_again(index: int) -> None:
        await store.put(blobs[index])

    mode = "sequential" if width == 1 else f"{width} concurrent"
    await timed(f"put ({mode})", count, put, width)
    await timed(f"get ({mode})", count, get, width)
    await timed(f"put existing ({mode})", count, put_again, width)


async def run_throughput_benchmark(workdir: Path, count: int) -> None:
    blobs = [index.to_bytes(8, "big") + os.urandom(BLOB_SIZE - 8) for index in range(count)]
    print(f"(b) {count} distinct 1 MB blobs on a local directory")
    for width in (1, CONCURRENCY):
        store = BlobStore(str(workdir / f"throughput-{width}"))
        try:
            await measure_throughput(store, blobs, width)
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream-mib", type=int, default=200)
    parser.add_argument("--blobs", type=int, default=200)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "SOURCE", "TARGET"))
    args = parser.parse_args()
    if args.child:
        mode, source, target = args.child
        size = Path(source).stat().st_size
        print(json.dumps(asyncio.run(stream_child(mode, Path(source), Path(target), size))))
        return
    with tempfile.TemporaryDirectory(prefix="convstore-blobs-bench-") as tmp:
        run_stream_benchmark(Path(tmp), args.stream_mib * MiB)
        asyncio.run(run_throughput_benchmark(Path(tmp), args.blobs))


if __name__ == "__main__":
    main()
