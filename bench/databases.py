"""The scale benchmarks' shared frame: a fresh database per run, one run per database, JSON out.

`bench.gc_bench`, `bench.listing_bench` and `bench.contention_bench` each measure on SQLite and,
with the cluster `bench.compare` starts (``BENCH_POSTGRES_DSN``), on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any


async def database_url(database: str, directory: Path) -> str:
    """A fresh database: an SQLite file in ``directory``, or a new PostgreSQL database."""
    if database == "sqlite":
        directory.mkdir(parents=True, exist_ok=True)
        return f"sqlite+aiosqlite:///{directory / 'bench.db'}"
    from bench.peers.runner import fresh_postgres_database, postgres_dsn

    url = f"{postgres_dsn().replace('postgresql://', 'postgresql+asyncpg://')}/"
    return url + await fresh_postgres_database("bench")


def each_database(
    databases: str,
    run: Callable[[str, Path], Coroutine[Any, Any, dict[str, Any]]],
    *,
    prefix: str,
    tmpdir: str | None,
) -> dict[str, Any]:
    """``{"results": [run(database, scratch directory) for each of "sqlite,postgresql"...]}``."""
    results = []
    for database in [d for d in databases.split(",") if d]:
        with tempfile.TemporaryDirectory(prefix=prefix, dir=tmpdir) as tmp:
            results.append(asyncio.run(run(database, Path(tmp))))
    return {"results": results}


def emit(output: dict[str, Any], json_out: Path | None) -> None:
    """Print the output as JSON (and write it to ``json_out``)."""
    text = json.dumps(output, indent=1)
    if json_out is not None:
        json_out.write_text(text)
    print(text)
