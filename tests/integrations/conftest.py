"""Helpers for the framework integration tests.

Each framework is an optional extra, installed in its own virtual environment by the Makefile
(``.venv-pydantic-ai``, ``.venv-adk``), which sets ``CONVSTORE_REQUIRE_FRAMEWORKS=1`` there.
Elsewhere (the shared dev environment, which cannot hold the frameworks' pins) a test module
whose framework is missing is skipped; where the Makefile runs it, a missing framework fails.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str) -> ModuleType:
    """Import ``module``; skip the calling test module when it is absent, unless required."""
    if os.environ.get("CONVSTORE_REQUIRE_FRAMEWORKS") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def sqlite_file_bytes(db_url: str) -> bytes:
    """Everything SQLite holds on disk for ``db_url``: the database file and its WAL."""
    from pathlib import Path

    path = Path(db_url.split("///", 1)[1])
    files = [path, path.with_name(path.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())
