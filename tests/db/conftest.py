"""Shared fixtures of the migration tests."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.postgres import PostgresCluster


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.create_database(f"mig_{uuid.uuid4().hex[:12]}")
    return f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
