"""Fixtures: a seeded database on disk and ``convstore mcp --transport http`` serving it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp_server.servers import TOKEN, Database, HttpServer, make_database, start_http, stop


@pytest.fixture
async def database(tmp_path: Path) -> Database:
    return await make_database(tmp_path)


@pytest.fixture
def http_server(database: Database) -> Iterator[HttpServer]:
    server = start_http(database)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture
def token_server(database: Database) -> Iterator[HttpServer]:
    server = start_http(database, "--token", TOKEN)
    try:
        yield server
    finally:
        stop(server)
