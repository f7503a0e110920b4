"""A seeded SQLite database on disk, and ``convstore mcp`` serving it as a subprocess.

Plain helpers (no fixtures), so the framework environments, which run without the suite's
conftest, use them too.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from convstore import ConversationStore
from tests.mcp_server.seed import Seeded, seed

TENANT = "acme"
OTHER = "globex"
TOKEN = "s3cret-token-for-tests"


@dataclass(frozen=True, slots=True)
class Database:
    """A seeded database: its URLs and what each tenant holds."""

    url: str
    blobs: str
    mine: Seeded
    theirs: Seeded

    def args(self, *extra: str) -> list[str]:
        """``convstore mcp`` arguments serving this database to `TENANT`."""
        return [
            "-m",
            "convstore",
            "mcp",
            "--url",
            self.url,
            "--blobs",
            self.blobs,
            "--tenant",
            TENANT,
            *extra,
        ]


async def make_database(tmp_path: Path) -> Database:
    """Seed both tenants into a new SQLite database under ``tmp_path``."""
    url = f"sqlite+aiosqlite:///{tmp_path}/convstore.db"
    blobs = str(tmp_path / "blobs")
    async with ConversationStore(url, blobs=blobs) as store:
        theirs = await seed(store, OTHER)
        mine = await seed(store, TENANT)
    return Database(url=url, blobs=blobs, mine=mine, theirs=theirs)


@dataclass(frozen=True, slots=True)
class HttpServer:
    """A running ``convstore mcp --transport http``."""

    url: str
    port: int
    process: subprocess.Popen[str]


def start_http(database: Database, *extra: str) -> HttpServer:
    """Start the server on a free loopback port and wait until it listens."""
    process = subprocess.Popen(
        [sys.executable, *database.args("--transport", "http", "--port", "0", *extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the announcement, once it listens (or EOF if it died)
    if not line.startswith("convstore MCP server: "):
        process.kill()
        _, err = process.communicate(timeout=30)
        raise AssertionError(f"the server did not start: {line!r} {err}")
    url = line.split()[3]
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    return HttpServer(url=url, port=port, process=process)


def stop(server: HttpServer) -> str:
    """Stop the server; its stderr."""
    server.process.terminate()
    _, err = server.process.communicate(timeout=30)
    return err
